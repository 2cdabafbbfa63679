#include "ops/gloo_backend.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/context.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "kolo/check.h"
#include "ops/dtype.h"

namespace kolo::ops {
namespace {

// Gloo's errors (a reset connection, a timeout, a peer's bad message) as kolo's.
template <class Call>
void gloo_call(const char* what, Call call) {
  try {
    call();
  } catch (const ::gloo::Exception& e) {
    throw Error(StatusCode::CommFailure, std::string("kolo: Gloo ") + what + " failed: " + e.what());
  }
}

// Counts of elements as counts of bytes: Gloo's data movers take any element size through
// their typed setters only, and moving bytes is all they do.
template <class Count>
std::vector<Count> bytes_of(std::span<const int64_t> counts, size_t element) {
  std::vector<Count> bytes;
  for (int64_t c : counts) bytes.push_back(Count(c) * Count(element));
  return bytes;
}

class GlooBackend final : public Backend {
 public:
  GlooBackend(std::shared_ptr<::gloo::Context> context, const GlooOptions& options)
      : context_(std::move(context)), options_(options) {}

  std::string name() const override { return "gloo"; }
  bool supports(const Device& device) const override { return device.is_cpu(); }

  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op, double scale) override {
    if (count == 0) return;
    if (input != output) std::memcpy(output, input, size_t(count) * dtype_size(dtype));
    if (context_->size > 1) {
      ::gloo::AllreduceOptions o(context_);
      set_output(o, output, count, dtype);
      o.setReduceFunction([dtype, op](void* c, const void* a, const void* b, size_t n) {
        reduce(c, a, b, int64_t(n), dtype, op);
      });
      o.setTimeout(options_.data_timeout);
      gloo_call("allreduce", [&] { ::gloo::allreduce(o); });
    }
    if (scale != 1.0) ops::scale(output, count, dtype, scale);
  }

  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    const size_t element = dtype_size(dtype);
    const int rank = context_->rank;
    // Gloo copies this rank's part into place itself; it must not read from there too.
    std::vector<uint8_t> own;
    const int64_t before = std::accumulate(counts.begin(), counts.begin() + rank, int64_t(0));
    const void* source = input;
    if (static_cast<const uint8_t*>(output) + before * element == input) {
      own.assign(static_cast<const uint8_t*>(input), static_cast<const uint8_t*>(input) + counts[rank] * element);
      source = own.data();
    }
    ::gloo::AllgathervOptions o(context_);
    o.setInput(static_cast<uint8_t*>(const_cast<void*>(source)), size_t(counts[rank]) * element);
    o.setOutput(static_cast<uint8_t*>(output), bytes_of<size_t>(counts, element));
    o.setTimeout(options_.data_timeout);
    gloo_call("allgatherv", [&] { ::gloo::allgatherv(o); });
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    if (count == 0 || context_->size == 1) return;
    ::gloo::BroadcastOptions o(context_);
    o.setOutput(static_cast<uint8_t*>(data), size_t(count) * dtype_size(dtype));
    o.setRoot(root);
    o.setTimeout(options_.data_timeout);
    gloo_call("broadcast", [&] { ::gloo::broadcast(o); });
  }

  void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                 std::span<const int64_t> recv_counts, DType dtype) override {
    const size_t element = dtype_size(dtype);
    ::gloo::AlltoallvOptions o(context_);
    o.setInput(static_cast<uint8_t*>(const_cast<void*>(input)), bytes_of<int64_t>(send_counts, element));
    o.setOutput(static_cast<uint8_t*>(output), bytes_of<int64_t>(recv_counts, element));
    o.setTimeout(options_.data_timeout);
    gloo_call("alltoallv", [&] { ::gloo::alltoallv(o); });
  }

  // Part r of every rank goes to rank r (an alltoallv), which reduces the parts it got:
  // each element crosses the network once, as in a ring reduce-scatter.
  void reducescatter(const void* input, void* output, std::span<const int64_t> counts, DType dtype, ReduceOp op,
                     double scale) override {
    const int n = context_->size, rank = context_->rank;
    const int64_t mine = counts[rank];
    const size_t element = dtype_size(dtype);
    std::vector<int64_t> receive(size_t(n), mine);
    std::vector<uint8_t> parts(size_t(n * mine) * element);
    alltoallv(input, counts, parts.data(), receive, dtype);
    if (mine == 0) return;
    std::memcpy(output, parts.data(), size_t(mine) * element);
    for (int q = 1; q < n; ++q) reduce_into(output, parts.data() + size_t(q * mine) * element, mine, dtype, op);
    if (scale != 1.0) ops::scale(output, mine, dtype, scale);
  }

  void barrier() override {
    ::gloo::BarrierOptions o(context_);
    o.setTimeout(options_.data_timeout);
    gloo_call("barrier", [&] { ::gloo::barrier(o); });
  }

  void sendrecv(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, int peer) override {
    // Adasum's exchanges (ops/adasum.h): one pair at a time on this context's slot.
    constexpr uint64_t kSlot = 0x6b6f6c6f;  // "kolo"
    auto out = context_->createUnboundBuffer(const_cast<void*>(send), send_bytes);
    auto in = context_->createUnboundBuffer(recv, recv_bytes);
    gloo_call("send/receive", [&] {
      in->recv(peer, kSlot);
      out->send(peer, kSlot);
      in->waitRecv(options_.data_timeout);
      out->waitSend(options_.data_timeout);
    });
  }

 private:
  // Gloo cuts the buffer into segments in units of its element type, and gives the
  // reduction a count of them: an unsigned type of the dtype's size keeps both in elements.
  static void set_output(::gloo::AllreduceOptions& o, void* data, int64_t count, DType dtype) {
    switch (dtype_size(dtype)) {
      case 1: o.setOutput(static_cast<uint8_t*>(data), size_t(count)); return;
      case 2: o.setOutput(static_cast<uint16_t*>(data), size_t(count)); return;
      case 4: o.setOutput(static_cast<uint32_t*>(data), size_t(count)); return;
      case 8: o.setOutput(static_cast<uint64_t*>(data), size_t(count)); return;
    }
    throw Error(StatusCode::Internal, "kolo: Gloo allreduce: no element type of " +
                                          std::to_string(dtype_size(dtype)) + " bytes");
  }

  std::shared_ptr<::gloo::Context> context_;
  GlooOptions options_;
};

class GlooControlChannel final : public ControlChannel {
 public:
  GlooControlChannel(std::shared_ptr<::gloo::Context> context, const GlooOptions& options)
      : context_(std::move(context)), options_(options) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }

  void allreduce_and(std::span<uint64_t> words) override {
    if (words.empty() || context_->size == 1) return;
    ::gloo::AllreduceOptions o(context_);
    o.setOutput(words.data(), words.size());
    o.setReduceFunction([](void* c, const void* a, const void* b, size_t n) {
      auto* out = static_cast<uint64_t*>(c);
      const auto* x = static_cast<const uint64_t*>(a);
      const auto* y = static_cast<const uint64_t*>(b);
      for (size_t i = 0; i < n; ++i) out[i] = x[i] & y[i];
    });
    o.setTimeout(options_.control_timeout);
    gloo_call("control allreduce", [&] { ::gloo::allreduce(o); });
  }

  // Every rank gets every message (an allgatherv): for the control path's short messages
  // one Gloo call is cheaper than a gather's many.
  std::vector<std::string> gather(const std::string& message, int root) override {
    std::vector<std::string> all = allgather(message);
    if (context_->rank != root) return {};
    return all;
  }

  void broadcast(std::string& message, int root) override {
    if (context_->size == 1) return;
    uint64_t length = message.size();
    broadcast_bytes(&length, sizeof length, root);
    message.resize(length);
    broadcast_bytes(message.data(), length, root);
  }

 private:
  std::vector<std::string> allgather(const std::string& message) {
    const int n = context_->size;
    if (n == 1) return {message};
    std::vector<uint64_t> lengths(static_cast<size_t>(n));
    uint64_t mine = message.size();
    {
      ::gloo::AllgathervOptions o(context_);
      o.setInput(&mine, 1);
      o.setOutput(lengths.data(), std::vector<size_t>(size_t(n), 1));
      o.setTimeout(options_.control_timeout);
      gloo_call("control allgather", [&] { ::gloo::allgatherv(o); });
    }
    std::string bytes(std::accumulate(lengths.begin(), lengths.end(), uint64_t(0)), '\0');
    {
      ::gloo::AllgathervOptions o(context_);
      o.setInput(const_cast<char*>(message.data()), message.size());  // only read
      o.setOutput(bytes.data(), std::vector<size_t>(lengths.begin(), lengths.end()));
      o.setTimeout(options_.control_timeout);
      gloo_call("control allgather", [&] { ::gloo::allgatherv(o); });
    }
    std::vector<std::string> all;
    size_t at = 0;
    for (uint64_t length : lengths) {
      all.push_back(bytes.substr(at, length));
      at += length;
    }
    return all;
  }

  void broadcast_bytes(void* data, size_t bytes, int root) {
    if (bytes == 0) return;
    ::gloo::BroadcastOptions o(context_);
    o.setOutput(static_cast<uint8_t*>(data), bytes);
    o.setRoot(root);
    o.setTimeout(options_.control_timeout);
    gloo_call("control broadcast", [&] { ::gloo::broadcast(o); });
  }

  std::shared_ptr<::gloo::Context> context_;
  GlooOptions options_;
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(std::shared_ptr<::gloo::Context> context, const GlooOptions& options) {
  return std::make_unique<GlooBackend>(std::move(context), options);
}

std::unique_ptr<ControlChannel> make_gloo_control_channel(std::shared_ptr<::gloo::Context> context,
                                                          const GlooOptions& options) {
  return std::make_unique<GlooControlChannel>(std::move(context), options);
}

}  // namespace kolo::ops
