// Test doubles for the device-side interfaces (ops/backend.h, ops/device.h,
// ops/staged_backend.h): a backend that records its calls and acts as the only rank, an
// event the test reaches by hand, and a copier whose copies only happen when the test
// lets them. They let the CPU-side logic of the GPU path be checked in one process.
#pragma once

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/device.h"
#include "ops/staged_backend.h"

namespace kolo::testing {

// Reached when the test says so; fails (as a device error would) when told to.
class ManualEvent final : public ops::Event {
 public:
  std::atomic<bool> reached{false};
  std::atomic<bool> failed{false};
  bool query() override {
    if (failed) throw Error(StatusCode::DeviceError, "kolo: CUDA error in cudaEventQuery: an illegal memory access");
    return reached;
  }
  void block_stream(void*) override { ++blocked_streams; }
  std::atomic<int> blocked_streams{0};
};

// The only rank of its communicator: a sum is the input itself, scaled by `sum_factor`
// so that a test sees the reduction happened. Every call is logged.
class RecordingBackend final : public ops::Backend {
 public:
  RecordingBackend(std::string label, std::vector<std::string>& log, double sum_factor = 2.0)
      : label_(std::move(label)), log_(log), factor_(sum_factor) {}

  std::string name() const override { return label_; }
  bool supports(const Device&) const override { return true; }

  // A scale other than 1 is logged, and applied after the "sum".
  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                 double scale) override {
    log_.push_back(label_ + ".allreduce " + std::to_string(count) + scale_string(scale));
    if (dtype != DType::Float32) throw Error(StatusCode::InvalidArgument, "RecordingBackend: float32 only");
    const float* in = static_cast<const float*>(input);
    float* out = static_cast<float*>(output);
    for (int64_t i = 0; i < count; ++i) out[i] = in[i] * static_cast<float>(factor_);
    if (scale != 1.0)
      for (int64_t i = 0; i < count; ++i) out[i] *= static_cast<float>(scale);
  }
  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    log_.push_back(label_ + ".allgatherv " + counts_string(counts));
    if (input != output) std::memmove(output, input, static_cast<std::size_t>(counts[0]) * dtype_size(dtype));
  }
  void broadcast(void*, int64_t count, DType, int root) override {
    log_.push_back(label_ + ".broadcast " + std::to_string(count) + " from " + std::to_string(root));
  }
  void alltoallv(const void* input, std::span<const int64_t> send, void* output, std::span<const int64_t>,
                 DType dtype) override {
    log_.push_back(label_ + ".alltoallv " + counts_string(send));
    std::memmove(output, input, static_cast<std::size_t>(send[0]) * dtype_size(dtype));
  }
  void reducescatter(const void* input, void* output, std::span<const int64_t> counts, DType dtype,
                     ReduceOp op, double scale) override {
    log_.push_back(label_ + ".reducescatter " + counts_string(counts) + scale_string(scale));
    allreduce(input, output, counts[0], dtype, op, scale);
    log_.pop_back();
  }
  void barrier() override { log_.push_back(label_ + ".barrier"); }
  void set_allreduce_chunk_bytes(int64_t bytes) override {
    log_.push_back(label_ + ".chunk " + std::to_string(bytes));
  }

  static std::string scale_string(double scale) {
    if (scale == 1.0) return "";
    std::ostringstream s;
    s << " x" << scale;
    return s.str();
  }

  static std::string counts_string(std::span<const int64_t> counts) {
    std::string s = "[";
    for (std::size_t i = 0; i < counts.size(); ++i) s += (i ? "," : "") + std::to_string(counts[i]);
    return s + "]";
  }

 private:
  std::string label_;
  std::vector<std::string>& log_;
  double factor_;
};

// Copies are queued, as on a stream, and run in order only when the test calls
// run_copies(n) (or at once with `immediate`). Each mark() is an event reached once the
// copies enqueued before it have run.
class QueuedCopier final : public ops::StagingCopier {
 public:
  QueuedCopier(std::vector<std::string>& log, bool immediate) : log_(log), immediate_(immediate) {}

  std::byte* host_buffer(std::size_t bytes) override {
    if (host_.size() < bytes) host_.resize(bytes);
    return host_.data();
  }
  void to_host(void* host, const void* device, std::size_t bytes) override {
    log_.push_back("to_host " + std::to_string(bytes));
    enqueue([=] { std::memmove(host, device, bytes); });
  }
  void to_device(void* device, const void* host, std::size_t bytes) override {
    log_.push_back("to_device " + std::to_string(bytes));
    enqueue([=] { std::memmove(device, host, bytes); });
  }
  std::shared_ptr<ops::Event> mark() override {
    auto event = std::make_shared<ManualEvent>();
    if (pending_.empty()) event->reached = true;
    else pending_.back().marks.push_back(event);
    return event;
  }
  void run_copies(std::size_t n = SIZE_MAX) {
    while (n-- > 0 && !pending_.empty()) {
      pending_.front().copy();
      for (auto& m : pending_.front().marks) m->reached = true;
      pending_.pop_front();
    }
  }
  std::size_t queued() const { return pending_.size(); }

 private:
  struct Copy {
    std::function<void()> copy;
    std::vector<std::shared_ptr<ManualEvent>> marks;
  };
  void enqueue(std::function<void()> copy) {
    if (immediate_) copy();
    else pending_.push_back({std::move(copy), {}});
  }

  std::vector<std::string>& log_;
  bool immediate_;
  std::vector<std::byte> host_;
  std::deque<Copy> pending_;
};

}  // namespace kolo::testing
