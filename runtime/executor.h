// Runs one negotiated Response on this rank: gathers the local entries it names, packs
// them into the fusion buffer when fused, calls the backend, scales, unpacks, and fills
// in results. Knows nothing of negotiation; it is given the same responses in the same
// order on every rank.
#pragma once

#include <cstddef>
#include <functional>
#include <unordered_map>
#include <vector>

#include "message.h"
#include "ops/backend.h"
#include "tensor_queue.h"
#include "timeline.h"

namespace kolo {

class Executor {
 public:
  using Clock = std::chrono::steady_clock;

  Executor(ops::Backend& backend, int rank, int size, Timeline& timeline);

  // `entries[i]` is this rank's entry for response.names[i], or nullptr where this rank
  // has joined (it then contributes zeros to an allreduce). Throws kolo::Error when the
  // backend fails; the caller fails the handles.
  void run(const Response& response, const std::vector<TensorEntry*>& entries,
           Clock::time_point decided);

  int64_t fused_bytes_total() const { return fused_bytes_total_; }

 private:
  void allreduce(const Response& r, const std::vector<TensorEntry*>& entries);
  void allreduce_one(const Response& r, TensorEntry* entry);
  void allreduce_fused(const Response& r, const std::vector<TensorEntry*>& entries);
  void allgather(const Response& r, TensorEntry& entry);
  void alltoall(const Response& r, TensorEntry& entry);
  void reducescatter(const Response& r, TensorEntry& entry);

  // Factor applied after the reduction: postscale, and 1/size for an average.
  double final_scale(const Response& r) const;
  std::byte* fusion_buffer(std::size_t bytes);
  void mark(const char* phase, const std::vector<TensorEntry*>& entries, const Response& r);

  ops::Backend& backend_;
  int rank_, size_;
  Timeline& timeline_;
  std::vector<std::byte> fusion_buffer_;
  int64_t fused_bytes_total_ = 0;
  int64_t next_group_id_ = 0;
  Clock::time_point phase_start_;
};

}  // namespace kolo
