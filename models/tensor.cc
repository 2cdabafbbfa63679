#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "kolo/models.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {
namespace {

// Freed blocks by exact size, reused by the next allocation of that size. A training
// step allocates the same activations every step; without this, each large block is a
// fresh mmap whose pages fault in again (measured: ~5% of a step). Bounded, so a change
// of shapes cannot make it hoard memory.
class BlockCache {
 public:
  void* take(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    return p;
  }
  void give(void* p, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + bytes <= kMaxCachedBytes) {
        free_[bytes].push_back(p);
        cached_bytes_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_bytes_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: tensors may outlive main()
  return *cache;
}

std::shared_ptr<float> allocate(int64_t count, Device device) {
  if (!device.is_cpu()) {
    if (count == 0) return nullptr;
    std::shared_ptr<void> memory = gpu_runtime().allocate(device.index, static_cast<std::size_t>(count) * sizeof(float));
    return std::shared_ptr<float>(memory, static_cast<float*>(memory.get()));
  }
  const std::size_t bytes = ((static_cast<std::size_t>(count) * sizeof(float) + 63) / 64) * 64;
  if (bytes == 0) return nullptr;
  void* p = block_cache().take(bytes);
  if (p == nullptr) p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<float>(static_cast<float*>(p), [bytes](float* q) { block_cache().give(q, bytes); });
}

int64_t count_of(const std::vector<int64_t>& shape) {
  // The product of the non-zero dimensions must fit too: {2^40, 2^40, 0} is a shape no
  // tensor has (its product once overflowed to 0 without the 0), not an empty one.
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw Error(StatusCode::InvalidArgument, "kolo: negative dimension in shape " + shape_string(shape));
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(nonzero, d, &nonzero))
      throw Error(StatusCode::InvalidArgument, "kolo: shape " + shape_string(shape) + " has too many elements");
  }
  return empty ? 0 : nonzero;
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(std::vector<int64_t> shape, Device device) : Tensor(uninitialized(std::move(shape), device)) {
  if (numel_ == 0) return;
  if (device_.is_cpu()) std::memset(data_, 0, static_cast<std::size_t>(numel_) * sizeof(float));
  else gpu_runtime().fill(device_.index, data_, numel_, 0.0f);
}

Tensor Tensor::uninitialized(std::vector<int64_t> shape, Device device) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = count_of(t.shape_);
  t.storage_ = allocate(t.numel_, device);
  t.data_ = t.storage_.get();
  t.device_ = device;
  return t;
}

Tensor Tensor::full(std::vector<int64_t> shape, float value, Device device) {
  Tensor t = uninitialized(std::move(shape), device);
  t.fill(value);
  return t;
}

Tensor Tensor::from(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t(std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error(StatusCode::InvalidArgument, "kolo: " + std::to_string(values.size()) +
                                                 " values do not fill shape " + shape_string(t.shape()));
  if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::adopt(std::vector<int64_t> shape, std::shared_ptr<float> storage) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = count_of(t.shape_);
  if (t.numel_ > 0 && storage == nullptr) throw Error(StatusCode::InvalidArgument, "kolo: Tensor::adopt of no memory");
  t.storage_ = std::move(storage);
  t.data_ = t.storage_.get();
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(shape_, device_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  if (device_.is_cpu() && numel_ > 0) {  // an upload: on the GPU's copy stream
    Tensor t;
    t.shape_ = shape_;
    t.numel_ = numel_;
    t.device_ = device;
    std::shared_ptr<void> memory =
        gpu_runtime().upload(device.index, data_, static_cast<std::size_t>(numel_) * sizeof(float));
    t.storage_ = std::shared_ptr<float>(memory, static_cast<float*>(memory.get()));
    t.data_ = t.storage_.get();
    return t;
  }
  Tensor t = uninitialized(shape_, device);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  if (count_of(shape) != numel_)
    throw Error(StatusCode::InvalidArgument,
                "kolo: cannot reshape " + shape_string(shape_) + " to " + shape_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

void Tensor::fill(float value) {
  if (!device_.is_cpu()) {
    if (numel_ > 0) gpu_runtime().fill(device_.index, data_, numel_, value);
    return;
  }
  for (int64_t i = 0; i < numel_; ++i) data_[i] = value;
}

void Tensor::copy_from(const Tensor& other) {
  if (other.numel_ != numel_)
    throw Error(StatusCode::InvalidArgument, "kolo: cannot copy " + shape_string(other.shape_) +
                                                 " into " + shape_string(shape_));
  if (numel_ == 0 || other.data_ == data_) return;
  const std::size_t bytes = static_cast<std::size_t>(numel_) * sizeof(float);
  if (device_.is_cpu() && other.device_.is_cpu()) std::memcpy(data_, other.data_, bytes);
  else gpu_runtime().copy(data_, device_, other.data_, other.device_, bytes);
}

TensorView Tensor::view() { return TensorView{data_, DType::Float32, shape_, device_}; }

}  // namespace kolo::models
