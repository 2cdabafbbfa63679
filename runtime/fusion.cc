#include "fusion.h"

namespace kolo {
namespace {

bool fusable(const Response& r, const FusionOptions& options) {
  return r.kind == Response::Kind::Run && r.type == OpType::Allreduce &&
         response_bytes(r) < options.unfused_min_bytes;
}

bool compatible(const Response& a, const Response& b) {
  return a.dtype == b.dtype && a.op == b.op && a.prescale == b.prescale &&
         a.postscale == b.postscale && a.device == b.device;
}

}  // namespace

int64_t response_bytes(const Response& response) {
  int64_t elements = 0;
  for (int64_t n : response.element_counts) elements += n;
  return elements * static_cast<int64_t>(dtype_size(response.dtype));
}

std::vector<Response> fuse_responses(std::vector<Response> responses,
                                     const FusionOptions& options) {
  if (options.threshold_bytes <= 0) return responses;
  std::vector<Response> fused;
  int64_t open_bytes = 0;  // bytes in fused.back() when it is open for more tensors
  bool open = false;
  for (Response& r : responses) {
    const int64_t bytes = response_bytes(r);
    if (open && fusable(r, options) && compatible(fused.back(), r) &&
        open_bytes + bytes <= options.threshold_bytes) {
      Response& target = fused.back();
      target.names.push_back(std::move(r.names.front()));
      target.element_counts.push_back(r.element_counts.front());
      open_bytes += bytes;
      continue;
    }
    open = fusable(r, options);
    open_bytes = bytes;
    fused.push_back(std::move(r));
  }
  return fused;
}

}  // namespace kolo
