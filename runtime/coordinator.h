// Rank 0's bookkeeping during negotiation: which ranks have submitted which names, and,
// once every rank has, whether they agree on what to run. Pure logic over messages, so
// that it is tested in-process without MPI.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "message.h"

namespace kolo {

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;

  // `global_ranks[r]`: how messages name rank r (the process set's ranks as ranks of the
  // global set; empty: as they are). `where`: how messages name the set, e.g. " in process
  // set 1" (empty for the global set).
  explicit Coordinator(int size, std::vector<int> global_ranks = {}, std::string where = "");

  // Records one rank's round of requests (and whether that rank has joined).
  void add(int rank, const RequestList& list, Clock::time_point now);

  // Responses for every operation now submitted by all ranks (joined ranks count as
  // submitted for allreduce), in the order they became ready. A disagreement among the
  // ranks yields an Error response that names the tensor, the field and the ranks.
  std::vector<Response> take_ready();

  struct StallReport {
    std::vector<std::string> warnings;  // one line per tensor waiting longer than warn_after
    std::vector<Response> failures;     // Error responses for those waiting past fail_after
  };
  // fail_after <= 0 never fails. Each tensor is warned about once.
  StallReport inspect_stalls(Clock::time_point now, std::chrono::duration<double> warn_after,
                             std::chrono::duration<double> fail_after);

  bool empty() const { return pending_.empty(); }
  bool joined(int rank) const { return joined_[rank]; }
  // The rank that joined last (of those that joined in one round, the highest, as in
  // Horovod), in the numbering of `global_ranks`; -1 before any has joined.
  int last_joined() const { return last_joined_; }
  // Every rank has joined and join() returns: the next join starts afresh. (A rank's next
  // round would say it no longer has joined, but cached allreduces send no rounds, and a
  // rank still marked joined would not count as the last to join again.)
  void end_join();

 private:
  struct Pending {
    std::vector<std::optional<Request>> by_rank;
    Clock::time_point first_seen;
    uint64_t sequence = 0;
    bool warned = false;
  };

  static const Request& submitted_request(const Pending& p);
  bool complete(const Pending& p) const;
  std::vector<int> missing_ranks(const Pending& p) const;
  Response build_response(const std::string& name, const Pending& p) const;
  std::string rank_list(const std::vector<int>& ranks) const;

  int size_;
  std::vector<int> global_ranks_;
  std::string where_;
  std::vector<bool> joined_;
  int last_joined_ = -1;
  std::map<std::string, Pending> pending_;
  uint64_t next_sequence_ = 0;
};

}  // namespace kolo
