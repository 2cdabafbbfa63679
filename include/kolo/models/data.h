// Data: readers for IDX (MNIST, Fashion-MNIST; plain or gzip) and CIFAR-10 binary files,
// synthetic data, augmentation, a distributed sampler and a prefetching loader. Bad data
// is a kolo::Error that names the file and the problem, never a crash: IoError for a file
// that cannot be opened or read (missing, a folder), InvalidArgument for one whose contents
// are wrong (wrong magic, truncated, damaged gzip, label out of range). Part of kolo/models.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace kolo::models {

class Tensor;

// Images as float32 NCHW in [0, 1] (as loaded) and int32 labels.
struct Dataset {
  std::vector<float> images;  // count × channels × height × width
  std::vector<int32_t> labels;
  int64_t count = 0, channels = 0, height = 0, width = 0;
  int64_t classes = 0;
  int64_t image_size() const { return channels * height * width; }
};

// images/labels: IDX files, plain or gzip (recognised by its magic bytes, whatever the name).
// classes: labels must be below.
Dataset load_idx(const std::string& images_path, const std::string& labels_path, int64_t classes = 10);
// A folder holding train-images-idx3-ubyte[.gz] etc.; split is "train" or "t10k"/"test".
Dataset load_mnist_folder(const std::string& folder, const std::string& split);
// Where Debian's dataset-fashion-mnist package puts the files.
std::string default_fashion_mnist_folder();
// CIFAR-10 binary batches (data_batch_1.bin ... or test_batch.bin): 1 label byte + 3072 pixel bytes per record.
Dataset load_cifar10(const std::vector<std::string>& paths);
// Random images and labels of any shape (seeded).
Dataset synthetic_dataset(int64_t count, int64_t channels, int64_t height, int64_t width, int64_t classes,
                          uint64_t seed);

// ---- augmentation (in place on one CHW image, or producing a new one) ----------------------
void normalize(float* image, int64_t channels, int64_t hw, const std::vector<float>& mean,
               const std::vector<float>& stddev);
void horizontal_flip(float* image, int64_t channels, int64_t height, int64_t width);
// Pads by `padding` zeros, then crops height × width at (top, left) in the padded image.
void padded_crop(const float* image, int64_t channels, int64_t height, int64_t width, int64_t padding,
                 int64_t top, int64_t left, float* out);
// Bilinear resize (align_corners = false, as torch.nn.functional.interpolate).
void resize_bilinear(const float* image, int64_t channels, int64_t height, int64_t width, int64_t out_height,
                     int64_t out_width, float* out);

// ---- sampling and loading ------------------------------------------------------------------------

// Each rank's share of the indices, reshuffled every epoch from a seed every rank shares;
// every rank gets the same number of samples (the tail is padded by wrapping around, as
// torch.utils.data.DistributedSampler does).
class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int rank, int size, bool shuffle, uint64_t seed);
  std::vector<int64_t> indices(int64_t epoch) const;
  int64_t samples_per_rank() const;
  int64_t dataset_size() const { return dataset_size_; }

 private:
  int64_t dataset_size_;
  int rank_, size_;
  bool shuffle_;
  uint64_t seed_;
};

struct Batch {
  std::vector<int64_t> shape;  // N, C, H, W
  std::vector<float> images;
  std::vector<int32_t> labels;
};

struct LoaderOptions {
  int64_t batch_size = 32;
  bool drop_last = true;
  int workers = 1;           // background threads preparing batches
  int prefetch = 2;          // batches prepared ahead, per worker
  // Augmentation applied per image, in this order; all optional.
  bool random_flip = false;
  int64_t random_crop_padding = -1;  // >= 0: pad then crop back to the image size
  int64_t resize_to = 0;             // > 0: bilinear resize to resize_to × resize_to
  std::vector<float> mean, stddev;   // per-channel normalisation (1 value or one per channel)
  // Optional last step on each image (CHW, after the above), on the worker threads; index is
  // the sample's index in the dataset. Whatever it throws is rethrown by next().
  std::function<void(float* image, int64_t channels, int64_t height, int64_t width, int64_t index)> transform;
  // The random choices for a sample come from (seed, epoch, dataset index) alone, so they do
  // not depend on the number of workers.
  uint64_t seed = 0;
  // next() waits at most this long for its batch, then throws (StatusCode::Stalled): a
  // transform that never returns is an error, not a hang. As PyTorch's DataLoader timeout,
  // but bounded by default.
  double timeout_seconds = 300.0;
};

// Produces the batches of one epoch in the sampler's order, prepared by background threads
// (at most workers × prefetch batches ahead of the consumer). The dataset is not copied: it
// must outlive the loader and not change while an epoch runs.
class DataLoader {
 public:
  DataLoader(const Dataset& dataset, const DistributedSampler& sampler, const LoaderOptions& options);
  // Stops the workers, even mid-epoch: each finishes the sample in hand. One still inside the
  // transform after min(timeout_seconds, 5 s) is detached, to finish it on its own; it then
  // ends without touching the dataset, which may be freed as soon as this returns.
  ~DataLoader();
  // Starts (or restarts) an epoch; batches still being prepared for the previous one are dropped.
  void start_epoch(int64_t epoch);
  // The next batch; the Batch's previous buffers go back to the workers, so passing the same
  // Batch every time saves reallocating images. False at the end of the epoch.
  // Rethrows a worker's exception (again on every call, until start_epoch); throws if the
  // batch is not ready within options.timeout_seconds. A first call without start_epoch()
  // starts epoch 0.
  bool next(Batch& batch);
  int64_t batches_per_epoch() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the workers, so that a detached one outlives us safely
};

}  // namespace kolo::models
