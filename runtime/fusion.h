// Packs consecutive compatible allreduces into one response, so that many small tensors
// cost one collective. Every rank plans the same response sequence with the same
// settings, so all ranks pack identically without talking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "message.h"
#include "ops/backend.h"

namespace kolo {

struct FusionOptions {
  int64_t threshold_bytes = 64 * 1024 * 1024;  // largest fused buffer; 0 disables fusion
  // Tensors at least this large run on their own memory, without copies: their time is
  // the bytes', not the call's, so fusing them would only add two memcpys.
  int64_t unfused_min_bytes = 512 * 1024;

  bool operator==(const FusionOptions&) const = default;
};

// A tensor of this many bytes a rank runs unfused (or of one pipeline piece, where
// KOLO_ALLREDUCE_CHUNK_BYTES sets smaller pieces).
inline constexpr int64_t kUnfusedMinBytesPerRank = 256 * 1024;

// The options a runtime of `size` ranks fuses with (KOLO_FUSION_THRESHOLD,
// KOLO_ALLREDUCE_CHUNK_BYTES, 0 for the backend's default piece). The scaling simulator
// plans with the same.
FusionOptions fusion_options(int64_t threshold_bytes, int64_t chunk_bytes, int size);

// The MPI backend's pipeline piece (ops/backend.h), for the runtime and the simulator.
using ops::allreduce_piece_bytes;

// Builds the fused sequence one tensor at a time, in order.
class FusionPlan {
 public:
  explicit FusionPlan(const FusionOptions& options) : options_(options) {}

  // Each returns the index of the response that now holds the tensor.
  std::size_t add(Response single);                          // a one-tensor response
  std::size_t add(const Request& params, std::string name);  // a cached request

  std::vector<Response> take() { return std::move(responses_); }

 private:
  template <typename Params>
  bool joins_open(const Params& next, int64_t bytes) const;
  void opened(int64_t bytes, bool fusable);

  FusionOptions options_;
  std::vector<Response> responses_;
  bool open_ = false;  // responses_.back() can take more tensors
  int64_t open_bytes_ = 0;
};

std::vector<Response> fuse_responses(std::vector<Response> responses, const FusionOptions& options);

int64_t response_bytes(const Response& response);

}  // namespace kolo
