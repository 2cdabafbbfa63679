// One batch of the DataLoader: gather by sampler index, augment (flip, padded crop, resize,
// normalise, user transform — in that order), stack as N×C×H×W. Each sample's random
// choices come from its own generator seeded by (seed, epoch, dataset index), so a batch is
// the same whichever worker builds it and however many workers there are.
#include "batch_builder.h"

#include <algorithm>

namespace kolo::models::data {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(StatusCode::InvalidArgument, "kolo: DataLoader: " + message);
}

// splitmix64's finaliser: spreads nearby (seed, epoch, index) triples over unrelated seeds.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void check_loader_setup(const Dataset& dataset, const DistributedSampler& sampler, const LoaderOptions& options) {
  if (dataset.image_size() < 1 || dataset.count < 0 ||
      dataset.images.size() != static_cast<std::size_t>(dataset.count * dataset.image_size()) ||
      dataset.labels.size() != static_cast<std::size_t>(dataset.count)) {
    invalid("inconsistent dataset: " + std::to_string(dataset.images.size()) + " pixels and " +
            std::to_string(dataset.labels.size()) + " labels for " + std::to_string(dataset.count) + " images of " +
            shape_string({dataset.channels, dataset.height, dataset.width}));
  }
  if (sampler.dataset_size() > dataset.count) {
    invalid("the sampler covers " + std::to_string(sampler.dataset_size()) + " samples but the dataset has " +
            std::to_string(dataset.count));
  }
  if (options.batch_size < 1 || options.workers < 1 || options.prefetch < 1) {
    invalid("batch_size, workers and prefetch must be at least 1 (got " + std::to_string(options.batch_size) + ", " +
            std::to_string(options.workers) + ", " + std::to_string(options.prefetch) + ")");
  }
  if (options.resize_to < 0) invalid("resize_to must be >= 0, got " + std::to_string(options.resize_to));
  // The upper end keeps the wait's deadline far from the clock's range.
  if (!(options.timeout_seconds > 0 && options.timeout_seconds <= 1e9)) {
    invalid("timeout_seconds must be > 0 and at most 1e9, got " + std::to_string(options.timeout_seconds));
  }
  if (options.mean.empty() != options.stddev.empty()) invalid("give both mean and stddev, or neither");
  if (!options.mean.empty()) {
    // normalize() checks the sizes and the zeros: try it once here rather than in a worker.
    std::vector<float> probe(static_cast<std::size_t>(dataset.channels), 0.0f);
    normalize(probe.data(), dataset.channels, 1, options.mean, options.stddev);
  }
}

std::vector<int64_t> image_shape(const Dataset& dataset, const LoaderOptions& options) {
  if (options.resize_to > 0) return {dataset.channels, options.resize_to, options.resize_to};
  return {dataset.channels, dataset.height, dataset.width};
}

bool build_batch(const Dataset& dataset, const LoaderOptions& options, int64_t epoch, const int64_t* indices,
                 int64_t count, const std::atomic<bool>& cancel, Batch& batch) {
  const int64_t channels = dataset.channels, height = dataset.height, width = dataset.width;
  const int64_t in_size = dataset.image_size();
  const std::vector<int64_t> shape = image_shape(dataset, options);
  const int64_t out_height = shape[1], out_width = shape[2];
  const int64_t out_size = channels * out_height * out_width;
  const bool resize = options.resize_to > 0;
  const int64_t padding = options.random_crop_padding;

  batch.shape = {count, channels, out_height, out_width};
  batch.images.resize(static_cast<std::size_t>(count * out_size));
  batch.labels.resize(static_cast<std::size_t>(count));
  // Before the resize, images are at the dataset's size: worked on in `stage` (the batch
  // slot itself when there is no resize), with `scratch` for the crop's output.
  std::vector<float> stage_buffer(resize ? static_cast<std::size_t>(in_size) : 0);
  std::vector<float> scratch(padding >= 0 ? static_cast<std::size_t>(in_size) : 0);

  for (int64_t k = 0; k < count; ++k) {
    if (cancel.load(std::memory_order_relaxed)) return false;
    const int64_t index = indices[k];
    if (index < 0 || index >= dataset.count) {
      invalid("sample index " + std::to_string(index) + " is outside the dataset of " + std::to_string(dataset.count));
    }
    float* out = batch.images.data() + k * out_size;
    float* stage = resize ? stage_buffer.data() : out;
    const float* source = dataset.images.data() + index * in_size;
    std::copy(source, source + in_size, stage);
    batch.labels[static_cast<std::size_t>(k)] = dataset.labels[static_cast<std::size_t>(index)];

    std::mt19937_64 rng(mix(mix(mix(options.seed) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(index)));
    if (options.random_flip && (rng() & 1) != 0) horizontal_flip(stage, channels, height, width);
    if (padding >= 0) {
      // Modulo bias below 2^-50 for any sensible padding.
      const auto span = static_cast<uint64_t>(2 * padding + 1);
      const auto top = static_cast<int64_t>(rng() % span), left = static_cast<int64_t>(rng() % span);
      padded_crop(stage, channels, height, width, padding, top, left, scratch.data());
      std::copy(scratch.begin(), scratch.end(), stage);
    }
    if (resize) resize_bilinear(stage, channels, height, width, out_height, out_width, out);
    if (!options.mean.empty()) normalize(out, channels, out_height * out_width, options.mean, options.stddev);
    if (options.transform) options.transform(out, channels, out_height, out_width, index);
  }
  return true;
}

}  // namespace kolo::models::data
