#include "staged_backend.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace kolo::ops {
namespace {

class HostCopier final : public StagingCopier {
 public:
  std::byte* host_buffer(std::size_t bytes) override {
    if (buffer_.size() < bytes) buffer_.resize(bytes);
    return buffer_.data();
  }
  void to_host(void* host, const void* device, std::size_t bytes) override { std::memmove(host, device, bytes); }
  void to_device(void* device, const void* host, std::size_t bytes) override { std::memmove(device, host, bytes); }
  std::shared_ptr<Event> mark() override { return reached_event(); }

 private:
  std::vector<std::byte> buffer_;
};

int64_t sum(std::span<const int64_t> counts) { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

class StagedBackend final : public Backend {
 public:
  StagedBackend(std::unique_ptr<Backend> host, std::unique_ptr<StagingCopier> copier, const StagingOptions& options)
      : host_(std::move(host)), copier_(std::move(copier)), options_(options) {}

  std::string name() const override { return host_->name() + " (host-staged)"; }
  bool supports(const Device& device) const override { return !device.is_cpu(); }

  // The host backend scales each piece on the host, before it is copied back.
  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                 double scale) override {
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    std::byte* host = copier_->host_buffer(static_cast<std::size_t>(count * element));
    const int64_t piece = std::max<int64_t>(1, options_.piece_bytes / element);
    std::vector<std::shared_ptr<Event>> copied_in;
    for (int64_t offset = 0; offset < count; offset += piece) {
      const int64_t n = std::min(piece, count - offset);
      copier_->to_host(host + offset * element, static_cast<const std::byte*>(input) + offset * element,
                       static_cast<std::size_t>(n * element));
      copied_in.push_back(copier_->mark());
    }
    for (std::size_t i = 0; i < copied_in.size(); ++i) {
      const int64_t offset = static_cast<int64_t>(i) * piece;
      const int64_t n = std::min(piece, count - offset);
      wait_for(*copied_in[i], options_.timeout, "copying a GPU tensor to host memory");
      host_->allreduce(host + offset * element, host + offset * element, n, dtype, op, scale);
      copier_->to_device(static_cast<std::byte*>(output) + offset * element, host + offset * element,
                         static_cast<std::size_t>(n * element));
    }
  }

  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    const std::size_t element = dtype_size(dtype);
    const int64_t mine = counts[static_cast<std::size_t>(options_.rank)];
    const int64_t before = std::accumulate(counts.begin(), counts.begin() + options_.rank, int64_t{0});
    std::byte* host = copier_->host_buffer(static_cast<std::size_t>(sum(counts)) * element);
    std::byte* host_mine = host + before * static_cast<int64_t>(element);  // gathered in place
    stage_in(host_mine, input, static_cast<std::size_t>(mine) * element);
    host_->allgatherv(host_mine, host, counts, dtype);
    copier_->to_device(output, host, static_cast<std::size_t>(sum(counts)) * element);
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(dtype);
    std::byte* host = copier_->host_buffer(bytes);
    if (options_.rank == root) stage_in(host, data, bytes);
    else settle();  // the previous operation's copies back may still read the buffer
    host_->broadcast(host, count, dtype, root);
    if (options_.rank != root) copier_->to_device(data, host, bytes);
  }

  void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                 std::span<const int64_t> recv_counts, DType dtype) override {
    const std::size_t element = dtype_size(dtype);
    const std::size_t in_bytes = static_cast<std::size_t>(sum(send_counts)) * element;
    const std::size_t out_bytes = static_cast<std::size_t>(sum(recv_counts)) * element;
    std::byte* host = copier_->host_buffer(in_bytes + out_bytes);
    stage_in(host, input, in_bytes);
    host_->alltoallv(host, send_counts, host + in_bytes, recv_counts, dtype);
    copier_->to_device(output, host + in_bytes, out_bytes);
  }

  void reducescatter(const void* input, void* output, std::span<const int64_t> counts, DType dtype,
                     ReduceOp op, double scale) override {
    const std::size_t element = dtype_size(dtype);
    const std::size_t in_bytes = static_cast<std::size_t>(sum(counts)) * element;
    const std::size_t out_bytes = static_cast<std::size_t>(counts[static_cast<std::size_t>(options_.rank)]) * element;
    std::byte* host = copier_->host_buffer(in_bytes + out_bytes);
    stage_in(host, input, in_bytes);
    host_->reducescatter(host, host + in_bytes, counts, dtype, op, scale);
    copier_->to_device(output, host + in_bytes, out_bytes);
  }

  void barrier() override { host_->barrier(); }

  void sendrecv(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, int peer) override {
    std::byte* host = copier_->host_buffer(send_bytes + recv_bytes);
    stage_in(host, send, send_bytes);
    host_->sendrecv(host, send_bytes, host + send_bytes, recv_bytes, peer);
    copier_->to_device(recv, host + send_bytes, recv_bytes);
  }

  void set_allreduce_chunk_bytes(int64_t bytes) override { host_->set_allreduce_chunk_bytes(bytes); }

 private:
  // Copies `bytes` of device memory into `host` and waits for them.
  void stage_in(std::byte* host, const void* device, std::size_t bytes) {
    copier_->to_host(host, device, bytes);
    settle();
  }
  void settle() { wait_for(*copier_->mark(), options_.timeout, "copying a GPU tensor to host memory"); }

  std::unique_ptr<Backend> host_;
  std::unique_ptr<StagingCopier> copier_;
  StagingOptions options_;
};

}  // namespace

std::unique_ptr<StagingCopier> make_host_copier() { return std::make_unique<HostCopier>(); }

std::unique_ptr<Backend> make_staged_backend(std::unique_ptr<Backend> host, std::unique_ptr<StagingCopier> copier,
                                             const StagingOptions& options) {
  return std::make_unique<StagedBackend>(std::move(host), std::move(copier), options);
}

}  // namespace kolo::ops
