// The gzip IDX reader behind FashionMnist (fashion_mnist.h).
#include "fashion_mnist.h"

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int32_t kImagesMagic = 2051;  // IDX: unsigned bytes, 3 dimensions
constexpr int32_t kLabelsMagic = 2049;  // IDX: unsigned bytes, 1 dimension

class GzipFile {
 public:
  explicit GzipFile(std::string path) : path_(std::move(path)), file_(gzopen(path_.c_str(), "rb"), gzclose) {
    if (!file_) throw std::runtime_error("cannot open " + path_ + " (Debian: apt install dataset-fashion-mnist)");
  }
  void read(void* into, size_t bytes) {
    if (gzread(file_.get(), into, static_cast<unsigned>(bytes)) != static_cast<int>(bytes)) {
      throw std::runtime_error(path_ + ": truncated or not gzip data");
    }
  }
  // IDX stores its header integers big-endian.
  int32_t read_int32() {
    unsigned char b[4];
    read(b, 4);
    return static_cast<int32_t>((uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3]);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, decltype(&gzclose)> file_;
};

// Checks the magic number and returns the item count, capped at `limit` (0: no cap).
int64_t read_header(GzipFile& file, int32_t magic, int64_t limit) {
  if (file.read_int32() != magic) throw std::runtime_error(file.path() + ": not an IDX file of the expected kind");
  const int64_t count = file.read_int32();
  if (count < 0) throw std::runtime_error(file.path() + ": a negative item count (" + std::to_string(count) + ")");
  return limit > 0 && limit < count ? limit : count;
}

torch::Tensor read_bytes(GzipFile& file, std::vector<int64_t> shape) {
  torch::Tensor t = torch::empty(shape, torch::kUInt8);
  file.read(t.data_ptr(), static_cast<size_t>(t.numel()));
  return t;
}

}  // namespace

FashionMnist::FashionMnist(const std::string& root, Mode mode, int64_t limit) {
  const std::string prefix = root + (mode == Mode::kTrain ? "/train" : "/t10k");
  GzipFile images(prefix + "-images-idx3-ubyte.gz");
  const int64_t n = read_header(images, kImagesMagic, limit);
  const int64_t rows = images.read_int32(), cols = images.read_int32();
  if (rows != 28 || cols != 28)  // the net's shape; torch would fail deep inside forward()
    throw std::runtime_error(images.path() + ": " + std::to_string(rows) + "x" + std::to_string(cols) +
                             " images, and the net takes 28x28");
  images_ = read_bytes(images, {n, 1, rows, cols}).to(torch::kFloat32).div_(255);

  GzipFile labels(prefix + "-labels-idx1-ubyte.gz");
  if (read_header(labels, kLabelsMagic, limit) != n) throw std::runtime_error(labels.path() + ": fewer labels than images");
  targets_ = read_bytes(labels, {n}).to(torch::kInt64);
  if (n > 0 && targets_.max().item<int64_t>() > 9)
    throw std::runtime_error(labels.path() + ": a label above 9 (" + std::to_string(targets_.max().item<int64_t>()) +
                             "), and Fashion-MNIST has 10 classes");
}

torch::data::Example<> FashionMnist::get(size_t index) {
  return {images_[static_cast<int64_t>(index)], targets_[static_cast<int64_t>(index)]};
}

torch::optional<size_t> FashionMnist::size() const { return static_cast<size_t>(images_.size(0)); }
