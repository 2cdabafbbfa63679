// Ranks as threads of one process. A ThreadGroup is a communicator of `size` members that
// hand each other pointers through shared memory, so that an algorithm built from Backends
// (the hierarchical collectives) runs on real data, several ranks at once, in a unit test.
// It moves data only: allgatherv, broadcast, barrier and sendrecv (every member at once,
// in pairs, as Adasum exchanges); the other collectives throw.
// Members must call the same collectives in the same order, as over MPI; a member whose
// counts or root differ from member 0's is recorded in mismatches() (a real transport
// would fail or hang).
#pragma once

#include <atomic>
#include <barrier>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ops/backend.h"

namespace kolo::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size)
      : sync_(size), buffers_(static_cast<std::size_t>(size)), counts_(static_cast<std::size_t>(size)) {}

  int size() const { return static_cast<int>(buffers_.size()); }
  // The backend of member `rank`, to be called from that member's thread only.
  std::unique_ptr<ops::Backend> member(int rank);
  // Collective calls made, summed over the members.
  int calls() const { return calls_; }
  std::vector<std::string> mismatches() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return mismatches_;
  }

 private:
  class Member;

  // Every member posts its buffer and counts, then reads the others' after the barrier.
  // `what` names the counts that must agree with member 0's (nullptr: none need to).
  void post(int rank, const void* buffer, std::vector<int64_t> counts, const char* what) {
    ++calls_;
    buffers_[static_cast<std::size_t>(rank)] = buffer;
    counts_[static_cast<std::size_t>(rank)] = std::move(counts);
    sync_.arrive_and_wait();
    if (what != nullptr && counts_[static_cast<std::size_t>(rank)] != counts_[0])
      mismatch(std::string(what) + ": member " + std::to_string(rank) + " disagrees with member 0");
  }
  void mismatch(std::string what) {
    std::lock_guard<std::mutex> lock(mutex_);
    mismatches_.push_back(std::move(what));
  }
  // Nobody reuses its buffer before every member has read it.
  void done() { sync_.arrive_and_wait(); }

  std::barrier<> sync_;
  std::vector<const void*> buffers_;
  std::vector<std::vector<int64_t>> counts_;
  std::atomic<int> calls_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> mismatches_;
};

class ThreadGroup::Member final : public ops::Backend {
 public:
  Member(ThreadGroup& group, int rank) : g_(group), rank_(rank) {}

  std::string name() const override { return "threads"; }
  bool supports(const Device&) const override { return true; }

  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    g_.post(rank_, input, {counts.begin(), counts.end()}, "allgatherv counts");
    const std::size_t element = dtype_size(dtype);
    auto* out = static_cast<std::byte*>(output);
    int64_t offset = 0;
    for (int q = 0; q < g_.size() && q < static_cast<int>(counts.size()); ++q) {
      std::byte* place = out + offset * static_cast<int64_t>(element);
      const void* part = g_.buffers_[static_cast<std::size_t>(q)];
      if (counts[q] > 0 && place != part) std::memcpy(place, part, static_cast<std::size_t>(counts[q]) * element);
      offset += counts[q];
    }
    g_.done();
  }
  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    g_.post(rank_, data, {count, root}, "broadcast count and root");
    if (rank_ != root && count > 0)
      std::memcpy(data, g_.buffers_[static_cast<std::size_t>(root)], static_cast<std::size_t>(count) * dtype_size(dtype));
    g_.done();
  }
  void barrier() override {
    g_.post(rank_, nullptr, {}, "barrier");
    g_.done();
  }
  // Each member posts what it sends and to whom; the peer must send this member as many
  // bytes as it expects.
  void sendrecv(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, int peer) override {
    g_.post(rank_, send, {static_cast<int64_t>(send_bytes), peer}, nullptr);
    const std::vector<int64_t> expected = {static_cast<int64_t>(recv_bytes), rank_};
    if (peer < 0 || peer >= g_.size() || g_.counts_[static_cast<std::size_t>(peer)] != expected)
      g_.mismatch("sendrecv: member " + std::to_string(rank_) + " and member " + std::to_string(peer) +
                  " do not send each other what the other expects");
    else if (recv_bytes > 0)
      std::memcpy(recv, g_.buffers_[static_cast<std::size_t>(peer)], recv_bytes);
    g_.done();
  }
  void allreduce(const void*, void*, int64_t, DType, ReduceOp, double) override { unsupported("allreduce"); }
  void alltoallv(const void*, std::span<const int64_t>, void*, std::span<const int64_t>, DType) override {
    unsupported("alltoallv");
  }
  void reducescatter(const void*, void*, std::span<const int64_t>, DType, ReduceOp, double) override {
    unsupported("reducescatter");
  }

 private:
  [[noreturn]] static void unsupported(const char* what) {
    throw Error(StatusCode::InvalidArgument, std::string("ThreadGroup: no ") + what);
  }
  ThreadGroup& g_;
  int rank_;
};

inline std::unique_ptr<ops::Backend> ThreadGroup::member(int rank) { return std::make_unique<Member>(*this, rank); }

}  // namespace kolo::testing
