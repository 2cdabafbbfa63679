// Scenarios (peer.h) of collectives that cannot run: ranks that disagree, a tensor that
// changes shape in the response cache, a tensor that some rank never submits (stall
// warning, then Stalled, and kolo stops on every rank), and a rank that hangs (the others fail with CommFailure). None
// of them hangs: every wait is bounded.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "scenarios/helpers.h"

namespace kolo_scenarios {

// The handle fails with Mismatch and a message naming the tensor, the field, rank 0's value
// and the other ranks' value.
inline void expect_mismatch(Peer& peer, const kolo::Handle& handle, const std::string& name, const std::string& field,
                            const std::string& rank0_gave, const std::string& others_gave) {
  const kolo::Status s = peer.wait(handle);
  const std::string others = ranks_phrase(ranks_from(1, peer.size())) + " gave " + others_gave;
  PEER_CHECK(peer, s.code() == kolo::StatusCode::Mismatch, name << ": " << describe(s));
  PEER_CHECK(peer,
             contains(s.message(), "'" + name + "'") && contains(s.message(), field) &&
                 contains(s.message(), "rank 0 gave " + rank0_gave) && contains(s.message(), others),
             name << ": the message '" << s.message() << "' should name the " << field << ", 'rank 0 gave "
                  << rank0_gave << "' and '" << others << "'");
}

// After an error the name is free again: a consistent submission succeeds everywhere.
inline void expect_name_reusable(Peer& peer, const std::string& name) {
  std::vector<float> v(3, 1.0f);
  const kolo::Status s = peer.wait(kolo::allreduce_async(name, kolo::view(v), {kolo::ReduceOp::Sum}));
  PEER_CHECK(peer, s.ok() && v == std::vector<float>(3, float(peer.size())),
             name << " after its error: " << describe(s) << ", [0] = " << v[0]);
}

// Rank 0 and the others disagree on a shape, a dtype, an op, a prescale, a broadcast root,
// an allgather's trailing dimensions and the collective itself, all in one burst: each
// fails on every rank with its own message, and the names are usable afterwards.
inline void mismatches_fail_on_every_rank(Peer& peer) {
  if (peer.size() < 2) return;
  const bool zero = peer.rank() == 0;
  const auto sum = kolo::AllreduceOptions{kolo::ReduceOp::Sum};
  std::vector<float> shape(zero ? 4 : 5, 1.0f), f(4, 1.0f), op(4, 1.0f), pre(4, 1.0f), gather(zero ? 2 : 3), kind(4, 1.0f);
  std::vector<double> d(4, 1.0);
  std::vector<int32_t> root(4, peer.rank());
  const kolo::Handle shape_h = kolo::allreduce_async("scn/mismatch/shape", kolo::view(shape), sum);
  const kolo::Handle dtype_h = zero ? kolo::allreduce_async("scn/mismatch/dtype", kolo::view(f), sum)
                                    : kolo::allreduce_async("scn/mismatch/dtype", kolo::view(d), sum);
  const kolo::Handle op_h =
      kolo::allreduce_async("scn/mismatch/op", kolo::view(op), {zero ? kolo::ReduceOp::Sum : kolo::ReduceOp::Min});
  const kolo::Handle pre_h =
      kolo::allreduce_async("scn/mismatch/prescale", kolo::view(pre), {kolo::ReduceOp::Sum, zero ? 1.0 : 2.0, 1.0});
  const kolo::Handle root_h = kolo::broadcast_async("scn/mismatch/root", kolo::view(root), zero ? 0 : 1);
  const kolo::Handle gather_h =
      kolo::allgather_async("scn/mismatch/gather", kolo::view(gather, {1, int64_t(gather.size())}));
  const kolo::Handle kind_h = zero ? kolo::allreduce_async("scn/mismatch/kind", kolo::view(kind), sum)
                                   : kolo::broadcast_async("scn/mismatch/kind", kolo::view(kind), 0);
  expect_mismatch(peer, shape_h, "scn/mismatch/shape", "shape", "[4]", "[5]");
  expect_mismatch(peer, dtype_h, "scn/mismatch/dtype", "dtype", "float32", "float64");
  expect_mismatch(peer, op_h, "scn/mismatch/op", "op", "sum", "min");
  expect_mismatch(peer, pre_h, "scn/mismatch/prescale", "prescale", "1", "2");
  expect_mismatch(peer, root_h, "scn/mismatch/root", "root", "0", "1");
  expect_mismatch(peer, gather_h, "scn/mismatch/gather", "shape", "[2]", "[3]");
  expect_mismatch(peer, kind_h, "scn/mismatch/kind", "operation", "allreduce", "broadcast");
  PEER_CHECK(peer, root == std::vector<int32_t>(4, peer.rank()), "the broadcast that failed wrote its buffer");
  for (const char* name : {"scn/mismatch/shape", "scn/mismatch/dtype", "scn/mismatch/op", "scn/mismatch/kind"})
    expect_name_reusable(peer, name);
}

// Five mismatched tensors among five good ones in one burst: each bad one fails with its
// own name, the good ones run.
inline void mismatched_and_good_tensors_in_one_burst(Peer& peer) {
  if (peer.size() < 2) return;
  std::vector<std::vector<float>> bad(5), good(5);
  std::vector<kolo::Handle> bad_h, good_h;
  for (int t = 0; t < 5; ++t) {
    bad[t].assign(static_cast<std::size_t>(peer.rank() == 0 ? 2 + t : 3 + t), 1.0f);
    good[t].assign(10, float(t));
    bad_h.push_back(kolo::allreduce_async("scn/burst/bad" + std::to_string(t), kolo::view(bad[t]), {kolo::ReduceOp::Sum}));
    good_h.push_back(
        kolo::allreduce_async("scn/burst/good" + std::to_string(t), kolo::view(good[t]), {kolo::ReduceOp::Sum}));
  }
  wait_all_ok(peer, good_h, "good tensors of the burst");
  for (int t = 0; t < 5; ++t) {
    expect_mismatch(peer, bad_h[t], "scn/burst/bad" + std::to_string(t), "shape", "[" + std::to_string(2 + t) + "]",
                    "[" + std::to_string(3 + t) + "]");
    PEER_CHECK(peer, good[t] == std::vector<float>(10, float(t * peer.size())), "scn/burst/good" << t);
  }
}

// A tensor in every rank's response cache changes shape on the ranks other than 0: it
// fails with a mismatch everywhere instead of running with the old parameters.
inline void cached_tensor_changing_shape_fails_on_every_rank(Peer& peer) {
  if (peer.size() < 2) return;
  for (int round = 0; round < 3; ++round) {
    std::vector<float> v(4, 2.0f);
    const kolo::Status s = peer.wait(kolo::allreduce_async("scn/cached", kolo::view(v), {kolo::ReduceOp::Sum}));
    PEER_CHECK(peer, s.ok() && v[0] == 2.0f * peer.size(), "warm-up round " << round << ": " << describe(s));
  }
  std::vector<float> v(peer.rank() == 0 ? 4 : 5, 1.0f);
  expect_mismatch(peer, kolo::allreduce_async("scn/cached", kolo::view(v), {kolo::ReduceOp::Sum}), "scn/cached",
                  "shape", "[4]", "[5]");
  expect_name_reusable(peer, "scn/cached");
}

// The first line of `text` that contains both parts ("" if none).
inline std::string line_with(const std::string& text, const std::string& a, const std::string& b) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (contains(line, a) && contains(line, b)) return line;
  return "";
}

// Rank 0 submits a tensor the others never do, and rank 1 one that the others never do.
// Rank 0 warns about each (after KOLO_STALL_CHECK_TIME_SECONDS), naming the ranks missing,
// then fails both as Stalled after KOLO_STALL_SHUTDOWN_TIME_SECONDS, and kolo stops on
// every rank, as Horovod's stall shutdown stops it: a later operation fails at once, saying
// why. The caller starts kolo again if it needs it. Needs short stall settings (in-process
// they are simulated).
inline void stalled_tensor_warns_then_fails(Peer& peer) {
  if (peer.size() < 2) return;
  const kolo::Config& settings = peer.settings();
  PEER_CHECK(peer, settings.stall_check_enabled && settings.stall_shutdown_seconds > 0 &&
                       settings.stall_shutdown_seconds <= 30,
             "this scenario needs short stall settings");
  const double fail_after = settings.stall_shutdown_seconds;
  std::vector<int> all_but_0 = ranks_from(1, peer.size()), all_but_1 = ranks_from(0, peer.size());
  all_but_1.erase(all_but_1.begin() + 1);
  const auto missing = [](const std::vector<int>& ranks) {
    std::string s = "rank(s) ";
    for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    return s;
  };
  const std::string mine = peer.rank() == 0 ? "scn/stall/only_rank0" : peer.rank() == 1 ? "scn/stall/only_rank1" : "";
  std::vector<float> v(8, 1.0f);
  if (peer.rank() == 0) peer.capture_log();  // the coordinator logs
  if (!mine.empty()) {
    const double start = peer.seconds();
    const kolo::Status s = peer.wait(kolo::allreduce_async(mine, kolo::view(v), {kolo::ReduceOp::Sum}),
                                     std::chrono::milliseconds(static_cast<int64_t>(fail_after * 1000) + 30000));
    const double took = peer.seconds() - start;
    const std::string missing_here = missing(peer.rank() == 0 ? all_but_0 : all_but_1);
    PEER_CHECK(peer, s.code() == kolo::StatusCode::Stalled, describe(s));
    // Both fail in the same stall check, unless they reached the coordinator on either
    // side of one: then the second did not run because kolo had stopped.
    PEER_CHECK(peer, contains(s.message(), mine) && (contains(s.message(), missing_here) ||
                                                     contains(s.message(), "' did not run")),
               "'" << s.message() << "' should name " << mine << " and " << missing_here);
    PEER_CHECK(peer, took >= fail_after - 0.5 && took <= fail_after + 7,
               "failed after " << took << " s; KOLO_STALL_SHUTDOWN_TIME_SECONDS is " << fail_after);
    PEER_CHECK(peer, v == std::vector<float>(8, 1.0f), "a stalled tensor's buffer was written");
  }
  if (peer.rank() == 0) {
    const std::string log = peer.captured_log();
    const std::string warned0 = line_with(log, "WARNING", "'scn/stall/only_rank0'");
    const std::string warned1 = line_with(log, "WARNING", "'scn/stall/only_rank1'");
    PEER_CHECK(peer, contains(warned0, missing(all_but_0)), "no warning naming the missing ranks in:\n" << log);
    PEER_CHECK(peer, contains(warned1, missing(all_but_1)), "no warning naming the missing ranks in:\n" << log);
    PEER_CHECK(peer, contains(log, "failing it") && log.find("WARNING") < log.find("failing it"),
               "the warnings should come before the failures:\n" << log);
  }
  peer.sync();
  std::vector<float> later(3, 1.0f);
  const double asked = peer.seconds();
  const kolo::Status after = peer.wait(kolo::allreduce_async("scn/stall/after", kolo::view(later), {kolo::ReduceOp::Sum}));
  PEER_CHECK(peer, after.code() == kolo::StatusCode::Stalled &&
                       contains(after.message(), "has shut down on every rank after a stall: tensor 'scn/stall/only_rank"),
             "an operation after the stall shutdown: " << describe(after));
  PEER_CHECK(peer, peer.seconds() - asked < 1, "it should fail at once, not after " << peer.seconds() - asked << " s");
  PEER_CHECK(peer, later == std::vector<float>(3, 1.0f), "an operation after the stall shutdown wrote its buffer");
}

// The last rank hangs (it stops taking part in anything) while every rank has an
// allreduce in flight: after the control timeout the others' operations fail with
// CommFailure, naming the tensor and saying that a rank has died or hung; the hung rank's
// own operation fails too once they give up. Only where a rank can be made to hang and
// the job carry on (in-process); under mpirun the kolo_init_modes hung-rank test does it
// with SIGSTOP.
inline void hung_rank_fails_the_others_with_comm_failure(Peer& peer) {
  if (!peer.can_stop_taking_part() || peer.size() < 2) return;
  std::vector<float> v(4, 1.0f);
  const kolo::Status warm = peer.wait(kolo::allreduce_async("scn/hung/warmup", kolo::view(v), {kolo::ReduceOp::Sum}));
  PEER_CHECK(peer, warm.ok(), "warm-up: " << describe(warm));
  peer.sync();
  const double timeout = peer.settings().control_timeout_seconds;
  const bool hung = peer.rank() == peer.size() - 1;
  if (hung) peer.stop_taking_part();
  const double start = peer.seconds();
  const kolo::Status s = peer.wait(kolo::allreduce_async("scn/hung/op", kolo::view(v), {kolo::ReduceOp::Sum}),
                                   std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000) + 30000));
  const double took = peer.seconds() - start;
  PEER_CHECK(peer, s.code() == kolo::StatusCode::CommFailure, describe(s));
  PEER_CHECK(peer, contains(s.message(), "scn/hung/op") &&
                       contains(s.message(), "a rank has died, hung, or lost its network link"),
             s.message());
  if (!hung)
    PEER_CHECK(peer, took >= timeout - 0.5 && took <= timeout + 5,
               "failed after " << took << " s; the control timeout is " << timeout << " s");
}

}  // namespace kolo_scenarios
