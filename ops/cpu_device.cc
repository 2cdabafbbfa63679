// DeviceOps for host memory: the fusion copies and casts as plain loops on the calling
// thread (the same loops the executor ran before it knew about devices).
#include <cstring>
#include <string>
#include <thread>

#include "device.h"
#include "dtype.h"

namespace kolo::ops {
namespace {

class ReachedEvent final : public Event {
 public:
  bool query() override { return true; }
  void block_stream(void*) override {}
};

float load_float(const void* src, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Float16: return half_to_float(static_cast<const uint16_t*>(src)[i]);
    case DType::BFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(src)[i]);
    case DType::Float64: return static_cast<float>(static_cast<const double*>(src)[i]);
    default: return static_cast<const float*>(src)[i];
  }
}

void store_float(void* dst, DType dtype, int64_t i, float value) {
  switch (dtype) {
    case DType::Float16: static_cast<uint16_t*>(dst)[i] = float_to_half(value); break;
    case DType::BFloat16: static_cast<uint16_t*>(dst)[i] = float_to_bfloat16(value); break;
    case DType::Float64: static_cast<double*>(dst)[i] = value; break;
    default: static_cast<float*>(dst)[i] = value; break;
  }
}

class CpuOps final : public DeviceOps {
 public:
  explicit CpuOps(Device device) : device_(device) {}

  Device device() const override { return device_; }

  void convert(std::span<const CopyPiece> pieces, DType from, DType to, double factor) override {
    // Plain copies (the common fusion case) skip the per-piece dispatch: a fused batch of
    // small tensors is mostly that dispatch.
    const bool plain_copy = from == to && factor == 1.0;
    const std::size_t element = dtype_size(to);
    for (const CopyPiece& p : pieces) {
      const std::size_t bytes = static_cast<std::size_t>(p.count) * element;
      if (bytes == 0) continue;  // an empty tensor's pointers may be null, which memset and memcpy must not get
      if (p.src == nullptr) std::memset(p.dst, 0, bytes);
      else if (plain_copy && p.dst != p.src) std::memcpy(p.dst, p.src, bytes);
      else if (!plain_copy) convert_on_cpu(p.dst, to, p.src, from, p.count, factor);
    }
  }

  std::shared_ptr<void> allocate(std::size_t bytes) override {
    return std::shared_ptr<void>(new std::byte[bytes], [](void* p) { delete[] static_cast<std::byte*>(p); });
  }

  void wait(Event&) override {}
  std::shared_ptr<Event> record() override { return nullptr; }

 private:
  Device device_;
};

}  // namespace

std::shared_ptr<Event> reached_event() { return std::make_shared<ReachedEvent>(); }

void wait_for(Event& event, std::chrono::milliseconds timeout, const char* what, const Clock& clock) {
  const auto start = clock.now();
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (!event.query()) {
    // CommFailure rather than DeviceError: an event that stays unreached this long is
    // almost always behind a collective that waits for a rank that died or hung.
    if (clock.now() - start > timeout)
      throw Error(StatusCode::CommFailure,
                  std::string("kolo: the GPU did not finish ") + what + " within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                      " s (KOLO_CONTROL_TIMEOUT_SECONDS)");
    if (std::chrono::steady_clock::now() < spin_until) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void convert_on_cpu(void* dst, DType to, const void* src, DType from, int64_t count, double factor) {
  if (from == to) {
    if (factor != 1.0) scale_copy(dst, src, count, to, factor);
    else if (dst != src) std::memcpy(dst, src, static_cast<std::size_t>(count) * dtype_size(to));
    return;
  }
  // Mixed floating dtypes go through float, as the GPU kernels do.
  const float f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) store_float(dst, to, i, load_float(src, from, i) * f);
}

std::unique_ptr<DeviceOps> make_cpu_ops(Device device) { return std::make_unique<CpuOps>(device); }

}  // namespace kolo::ops
