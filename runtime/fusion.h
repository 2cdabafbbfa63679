// Packs consecutive compatible allreduce responses into one, so that many small
// tensors cost one collective. Every rank runs this on the same response sequence with
// the same settings, so all ranks pack identically without talking.
#pragma once

#include <cstdint>
#include <vector>

#include "message.h"

namespace kolo {

struct FusionOptions {
  int64_t threshold_bytes = 64 * 1024 * 1024;  // largest fused buffer; 0 disables fusion
  // Tensors at least this large run on their own memory, without copies: they already
  // fill a pipeline piece of the backend, so fusing them would only add two memcpys.
  int64_t unfused_min_bytes = 512 * 1024;
};

std::vector<Response> fuse_responses(std::vector<Response> responses, const FusionOptions& options);

int64_t response_bytes(const Response& response);

}  // namespace kolo
