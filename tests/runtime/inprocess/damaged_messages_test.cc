// Negotiation messages damaged on their way (InProcessWorld::damage_messages): values that
// parse but do not fit the receiving rank's state (a cache slot past its cache, element
// counts that are not its tensor's, an allgather's first dimensions for the wrong number
// of ranks, a broadcast root outside the set, a shape whose elements overflow) end the
// operation with CommFailure on every rank, with the damage named on the rank that found
// it, and nothing reads or writes past a buffer (these run under ASan in CI:
// tools/sanitize.sh).
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "inprocess/job.h"
#include "runtime/message.h"

using kolo_inprocess::Job;
using kolo_inprocess::JobOptions;
using kolo_scenarios::Peer;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What a rank does once the damage is armed: an operation on `data`, waited for.
using Act = std::function<kolo::Status(Peer& peer, std::vector<float>& data)>;

// Runs `act` on every rank of a 3-rank job (after one clean allreduce) with messages of
// kind `call` from `sender` rewritten by `damage`, and checks that every rank's operation
// fails with CommFailure and that some rank's message contains `named`.
void expect_damage_found(kolo::InProcessCall call, int sender, const std::function<void(std::string&)>& damage,
                         const Act& act, const std::string& named) {
  JobOptions options;
  options.size = 3;
  options.config = kolo_inprocess::scenario_config();
  options.config.control_timeout_seconds = 5;
  Job job(options);
  std::atomic<bool> armed{false};
  job.world().damage_messages([&](kolo::InProcessCall c, int from, std::string& message) {
    if (armed && c == call && from == sender) damage(message);
  });
  std::mutex mutex;
  std::vector<std::string> messages;
  job.run([&](Peer& peer) {
    std::vector<float> warm(4, 1.0f);
    const kolo::Status w = peer.wait(kolo::allreduce_async("damage/warm", kolo::view(warm), {kolo::ReduceOp::Sum}));
    PEER_CHECK(peer, w.ok(), w.message());
    peer.sync();
    if (peer.rank() == 0) armed = true;
    peer.sync();
    std::vector<float> data(64, float(peer.rank() + 1));
    const kolo::Status s = act(peer, data);
    PEER_CHECK(peer, s.code() == kolo::StatusCode::CommFailure, s.message());
    std::lock_guard<std::mutex> lock(mutex);
    messages.push_back(s.message());
  });
  bool found = false;
  for (const std::string& m : messages) found = found || contains(m, named);
  INFO("the ranks' errors:\n" << [&] {
    std::string all;
    for (const std::string& m : messages) all += m + "\n";
    return all;
  }());
  CHECK(found);
}

// Rewrites the parsed message in place and serializes it back.
std::function<void(std::string&)> requests(const std::function<void(kolo::RequestList&)>& change) {
  return [change](std::string& bytes) {
    kolo::RequestList list = kolo::parse_request_list(bytes);
    change(list);
    bytes = kolo::serialize(list);
  };
}
std::function<void(std::string&)> responses(const std::function<void(kolo::Response&)>& change) {
  return [change](std::string& bytes) {
    kolo::ResponseList list = kolo::parse_response_list(bytes);
    for (kolo::Response& r : list.responses) change(r);
    bytes = kolo::serialize(list);
  };
}

Act submitting(const std::function<kolo::Handle(std::vector<float>& data)>& submit) {
  return [submit](Peer& peer, std::vector<float>& data) { return peer.wait(submit(data), std::chrono::seconds(60)); };
}

const Act allreduce = submitting([](std::vector<float>& data) {
  return kolo::allreduce_async("damage/x", kolo::view(data), {kolo::ReduceOp::Sum});
});

}  // namespace

TEST_CASE("in-process: a peer that invalidates a cache slot past the cache fails the job, not the memory",
          "[inprocess][damage]") {
  expect_damage_found(kolo::InProcessCall::ControlGather, 1,
                      requests([](kolo::RequestList& l) { l.invalidate_slots.push_back(1u << 20); }), allreduce,
                      "invalidates response-cache slot 1048576 of a cache of");
}

TEST_CASE("in-process: a response whose element count is not the local tensor's fails everywhere",
          "[inprocess][damage]") {
  expect_damage_found(kolo::InProcessCall::ControlBroadcast, 0, responses([](kolo::Response& r) {
                        for (int64_t& n : r.element_counts) n *= 1000;
                      }),
                      allreduce, "on 64000 elements, but this rank's tensor has 64");
}

TEST_CASE("in-process: a response naming more tensors than this rank matched fails everywhere",
          "[inprocess][damage]") {
  expect_damage_found(kolo::InProcessCall::ControlBroadcast, 0, responses([](kolo::Response& r) {
                        r.names.push_back("damage/y");
                        r.element_counts.push_back(64);
                      }),
                      allreduce, "a response names 2 tensors where this rank matched 1");
}

TEST_CASE("in-process: a response whose bytes overflow 64 bits fails at the parser, before a joined rank sizes zeros",
          "[inprocess][damage]") {
  expect_damage_found(kolo::InProcessCall::ControlBroadcast, 0, responses([](kolo::Response& r) {
                        if (r.type == kolo::OpType::Allreduce) r.element_counts[0] = int64_t{1} << 62;
                      }),
                      [](Peer& peer, std::vector<float>& data) {
                        if (peer.rank() == 2) return peer.join();
                        return allreduce(peer, data);
                      },
                      "a response's tensors take more bytes than 64 bits count");
}

TEST_CASE("in-process: an allgather's first dimensions for the wrong number of ranks fail everywhere",
          "[inprocess][damage]") {
  expect_damage_found(kolo::InProcessCall::ControlBroadcast, 0, responses([](kolo::Response& r) {
                        r.rank_first_dims.push_back(1000000);
                      }),
                      submitting([](std::vector<float>& data) {
                        return kolo::allgather_async("damage/g", kolo::view(data));
                      }),
                      "first dimensions for 3 ranks");
}

TEST_CASE("in-process: first dimensions whose bytes overflow 64 bits fail everywhere", "[inprocess][damage]") {
  expect_damage_found(kolo::InProcessCall::ControlBroadcast, 0, responses([](kolo::Response& r) {
                        for (std::size_t i = 1; i < r.rank_first_dims.size(); ++i)
                          r.rank_first_dims[i] = int64_t{1} << 61;
                      }),
                      submitting([](std::vector<float>& data) {
                        return kolo::allgather_async("damage/g", kolo::view(data));
                      }),
                      "first dimensions: more bytes than 64 bits count");
}

TEST_CASE("in-process: a broadcast root outside the set fails everywhere", "[inprocess][damage]") {
  expect_damage_found(kolo::InProcessCall::ControlBroadcast, 0, responses([](kolo::Response& r) { r.root = 7; }),
                      submitting([](std::vector<float>& data) {
                        return kolo::broadcast_async("damage/b", kolo::view(data), 0);
                      }),
                      "has root 7");
}

TEST_CASE("in-process: a peer's shape of negative or overflowing dimensions fails at rank 0's parser",
          "[inprocess][damage]") {
  const int64_t bad = GENERATE(int64_t{-5}, int64_t{1} << 40);
  expect_damage_found(kolo::InProcessCall::ControlGather, 2, requests([bad](kolo::RequestList& l) {
                        for (kolo::Request& q : l.requests) q.shape = {bad, bad};
                      }),
                      allreduce, "has the shape");
}
