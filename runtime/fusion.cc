#include "fusion.h"

#include <algorithm>

namespace kolo {

FusionOptions fusion_options(int64_t threshold_bytes, int64_t chunk_bytes, int size) {
  return {threshold_bytes, std::min(kUnfusedMinBytesPerRank * size, allreduce_piece_bytes(chunk_bytes, size))};
}

int64_t response_bytes(const Response& response) {
  int64_t elements = 0;
  for (int64_t n : response.element_counts) elements += n;
  return elements * static_cast<int64_t>(dtype_size(response.dtype));
}

template <typename Params>
bool FusionPlan::joins_open(const Params& next, int64_t bytes) const {
  if (!open_ || next.type != OpType::Allreduce || bytes >= options_.unfused_min_bytes ||
      open_bytes_ + bytes > options_.threshold_bytes)
    return false;
  const Response& open = responses_.back();
  return open.dtype == next.dtype && open.op == next.op && open.prescale == next.prescale &&
         open.postscale == next.postscale && open.compression == next.compression &&
         open.device.kind == next.device.kind;
}

void FusionPlan::opened(int64_t bytes, bool fusable) {
  open_ = fusable && options_.threshold_bytes > 0 && bytes < options_.unfused_min_bytes;
  open_bytes_ = bytes;
}

std::size_t FusionPlan::add(Response single) {
  const int64_t bytes = response_bytes(single);
  if (single.kind == Response::Kind::Run && joins_open(single, bytes)) {
    Response& open = responses_.back();
    open.names.push_back(std::move(single.names.front()));
    open.element_counts.push_back(single.element_counts.front());
    open_bytes_ += bytes;
  } else {
    opened(bytes, single.kind == Response::Kind::Run && single.type == OpType::Allreduce);
    responses_.push_back(std::move(single));
  }
  return responses_.size() - 1;
}

std::size_t FusionPlan::add(const Request& params, std::string name) {
  const int64_t bytes = params.num_elements() * static_cast<int64_t>(dtype_size(params.dtype));
  if (joins_open(params, bytes)) {
    Response& open = responses_.back();
    open.names.push_back(std::move(name));
    open.element_counts.push_back(params.num_elements());
    open_bytes_ += bytes;
    return responses_.size() - 1;
  }
  opened(bytes, params.type == OpType::Allreduce);
  responses_.push_back(response_for(params, std::move(name)));
  return responses_.size() - 1;
}

std::vector<Response> fuse_responses(std::vector<Response> responses, const FusionOptions& options) {
  FusionPlan plan(options);
  for (Response& r : responses) plan.add(std::move(r));
  return plan.take();
}

}  // namespace kolo
