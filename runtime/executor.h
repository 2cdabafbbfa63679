// Runs one negotiated Response on this rank: gathers the local entries it names, packs
// them into the fusion buffer when fused (casting to 16 bits when compressed), calls the
// backend, scales, unpacks, and fills in results. Knows nothing of negotiation; it is
// given the same responses in the same order on every rank.
//
// The same code serves every device: the response's device picks the Devices path (the
// backend and the DeviceOps that copy, cast and scale). On the host everything is done
// when run() returns; on a GPU run() only enqueues the work on kolo's stream and returns
// the event that will say it is done.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "clock.h"
#include "devices.h"
#include "message.h"
#include "ops/device.h"
#include "tensor_queue.h"
#include "timeline.h"

namespace kolo {

// The dtype a response's tensors travel in: 16 bits when compressed, else their own.
DType wire_dtype(DType dtype, Compression compression);

// The process set an Executor runs for: its id (for the timeline) and its ranks as ranks
// of the global set (a broadcast's root is one of those; empty: the global set).
struct ExecutorRole {
  int set_id = 0;
  std::vector<int> global_ranks;
};

class Executor {
 public:
  // The timeline's times are read from `clock`.
  Executor(Devices& devices, int rank, int size, Timeline& timeline, const Clock& clock, ExecutorRole role = {});

  // `entries[i]` is this rank's entry for response.names[i], or nullptr where this rank
  // has joined (it then contributes zeros to an allreduce). Returns nullptr when the work
  // is done, or the event a GPU reaches when it is. Throws kolo::Error when the backend
  // fails (the caller fails the handles), GpuSetupError when there is no GPU path.
  std::shared_ptr<ops::Event> run(const Response& response, const std::vector<TensorEntry*>& entries,
                                  Clock::time_point decided);

  int64_t fused_bytes_total() const { return fused_bytes_total_; }

 private:
  using Path = Devices::Path;
  void allreduce(const Response& r, const std::vector<TensorEntry*>& entries, Path& path);
  void allreduce_one(const Response& r, TensorEntry* entry, Path& path);
  std::byte* pack(const Response& r, const std::vector<TensorEntry*>& entries, Path& path);
  void unpack(const Response& r, const std::vector<TensorEntry*>& entries, const std::byte* buffer, Path& path,
              double scale);
  void allgather(const Response& r, TensorEntry& entry, Path& path);
  void alltoall(const Response& r, TensorEntry& entry, Path& path);
  void reducescatter(const Response& r, TensorEntry& entry, Path& path);
  void* allocate_output(TensorEntry& entry, std::vector<int64_t> shape, Path& path);

  int set_rank_of(int global_rank) const;
  // Factor applied after the reduction: postscale, and 1/size for an average.
  double final_scale(const Response& r) const;
  void mark(const char* phase, const std::vector<TensorEntry*>& entries, const Response& r);

  Devices& devices_;
  int rank_, size_;
  Timeline& timeline_;
  const Clock& clock_;
  ExecutorRole role_;
  std::array<ops::GrowingBuffer, 2> fusion_buffers_;  // by Device::Kind
  std::vector<ops::CopyPiece> pieces_;
  std::vector<std::byte> adasum_scratch_;  // ops::adasum_allreduce's working memory
  int64_t fused_bytes_total_ = 0;
  int64_t next_group_id_ = 0;
  Clock::time_point phase_start_;
};

}  // namespace kolo
