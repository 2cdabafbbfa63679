// Scenarios (peer.h) of collectives that succeed: exact results round after round (the
// response cache), many tiny tensors (fusion), submission orders that differ per rank, and
// every collective beside allreduce.
#pragma once

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "scenarios/helpers.h"

namespace kolo_scenarios {

// Rank r's element i in `round`: values every dtype holds, whose sum, min, max and product
// over up to 8 ranks every dtype holds exactly (a quarter of the ranks at most give 2 to a
// product, the others +-1).
inline double round_value(kolo::DType d, kolo::ReduceOp op, int r, int64_t i, int round) {
  const int64_t k = r + 3 * round;
  if (op == kolo::ReduceOp::Product) {
    if ((k + i) % 4 == 0) return 2;
    return d == kolo::DType::UInt8 || (k + 2 * i) % 3 != 0 ? 1 : -1;
  }
  const int64_t base = (k * 7 + i * 3) % 11;
  if (d == kolo::DType::UInt8) return double(base);
  return kolo_test::floating(d) ? double(base - 5) * 0.5 : double(base - 5);
}

// The reduction over `size` ranks of round_value(), computed here independently of kolo.
inline double round_expected(kolo::DType d, kolo::ReduceOp op, int size, int64_t i, int round) {
  double acc = round_value(d, op, 0, i, round);
  for (int q = 1; q < size; ++q) {
    const double x = round_value(d, op, q, i, round);
    switch (op) {
      case kolo::ReduceOp::Min: acc = std::min(acc, x); break;
      case kolo::ReduceOp::Max: acc = std::max(acc, x); break;
      case kolo::ReduceOp::Product: acc *= x; break;
      default: acc += x; break;
    }
  }
  return op == kolo::ReduceOp::Average ? acc / size : acc;
}

// Every dtype and op, three rounds. The first round goes by name; the later ones run from
// the response cache, where it is large enough, without a negotiation by name.
inline void allreduce_rounds_are_exact_and_cached(Peer& peer) {
  constexpr int kRounds = 3;
  constexpr int64_t kLength = 19;
  struct Tensor {
    std::string name;
    kolo::DType dtype;
    kolo::ReduceOp op;
    kolo_test::Buffer buffer;
  };
  std::vector<Tensor> tensors;
  for (kolo::DType d : kolo_test::all_dtypes())
    for (kolo::ReduceOp op : kolo_test::all_ops())
      if (op != kolo::ReduceOp::Average || kolo_test::floating(d))
        tensors.push_back({std::string("scn/rounds/") + kolo::dtype_name(d) + "/" + kolo::op_name(op), d, op, {}});
  // Averages over a number of ranks that is not a power of two round; the rest is exact.
  const bool average_exact = (peer.size() & (peer.size() - 1)) == 0;
  std::optional<int64_t> named_after_first_round;
  for (int round = 0; round < kRounds; ++round) {
    if (round == 1) named_after_first_round = named_negotiations_between_steps(peer);
    std::vector<kolo::Handle> handles;
    for (Tensor& t : tensors) {
      t.buffer = kolo_test::Buffer(t.dtype, {kLength});
      for (int64_t i = 0; i < kLength; ++i) t.buffer.set(i, round_value(t.dtype, t.op, peer.rank(), i, round));
      handles.push_back(kolo::allreduce_async(t.name, t.buffer.view(), {t.op}));
    }
    wait_all_ok(peer, handles, "round " + std::to_string(round));
    for (const Tensor& t : tensors) {
      const bool exact = t.op != kolo::ReduceOp::Average || average_exact;
      int64_t wrong = 0, first = -1;
      for (int64_t i = 0; i < kLength; ++i) {
        if (close_enough(t.buffer.get(i), round_expected(t.dtype, t.op, peer.size(), i, round), t.dtype, exact))
          continue;
        if (first < 0) first = i;
        ++wrong;
      }
      PEER_CHECK(peer, wrong == 0,
                 t.name << " round " << round << ": " << wrong << " wrong, first [" << first << "] = "
                        << t.buffer.get(std::max<int64_t>(first, 0)) << ", expected "
                        << round_expected(t.dtype, t.op, peer.size(), std::max<int64_t>(first, 0), round));
    }
  }
  const std::optional<int64_t> named_at_end = named_negotiations_between_steps(peer);
  if (named_at_end && peer.settings().cache_capacity >= static_cast<int>(tensors.size()))
    PEER_CHECK(peer, *named_at_end == *named_after_first_round,
               *named_at_end - *named_after_first_round
                   << " negotiations by name after the first round, expected none (all cached)");
}

// 150 tensors of 1 to 7 floats, three rounds: exact sums, and (where fusion can hold them
// and the calls are counted) a handful of backend calls instead of one per tensor.
inline void many_tiny_tensors_fuse(Peer& peer) {
  constexpr int kTensors = 150;
  const int n = peer.size();
  for (int round = 0; round < 3; ++round) {
    const std::optional<int64_t> calls_before = peer.data_allreduces();
    std::vector<std::vector<float>> values(kTensors);
    std::vector<kolo::Handle> handles;
    for (int t = 0; t < kTensors; ++t) {
      values[t].assign(static_cast<std::size_t>(1 + t % 7), float(peer.rank() + 1 + t + round));
      handles.push_back(kolo::allreduce_async("scn/tiny/" + std::to_string(t), kolo::view(values[t]),
                                              {kolo::ReduceOp::Sum}));
    }
    wait_all_ok(peer, handles, "tiny tensors, round " + std::to_string(round));
    for (int t = 0; t < kTensors; ++t) {
      const float want = float(n * (t + round) + n * (n + 1) / 2);
      PEER_CHECK(peer, values[t] == std::vector<float>(values[t].size(), want),
                 "scn/tiny/" << t << " round " << round << ": [0] = " << values[t][0] << ", expected " << want);
    }
    if (calls_before && peer.settings().fusion_threshold_bytes >= 8 * kTensors * 7)
      PEER_CHECK(peer, *peer.data_allreduces() - *calls_before <= 10,
                 *peer.data_allreduces() - *calls_before << " allreduce calls for " << kTensors
                                                           << " tiny tensors in round " << round);
  }
}

// 40 tensors of three dtypes, submitted in an order of each rank's own (rotated, and
// reversed on odd ranks), twice.
inline void submission_order_differs_per_rank(Peer& peer) {
  constexpr int kTensors = 40;
  const int n = peer.size();
  const kolo::DType dtypes[] = {kolo::DType::Float32, kolo::DType::Int32, kolo::DType::Float64};
  for (int round = 0; round < 2; ++round) {
    std::vector<int> order(kTensors);
    std::iota(order.begin(), order.end(), 0);
    std::rotate(order.begin(), order.begin() + (peer.rank() * 13 + round * 7) % kTensors, order.end());
    if (peer.rank() % 2 == 1) std::reverse(order.begin(), order.end());
    std::vector<kolo_test::Buffer> buffers(kTensors);
    std::vector<kolo::Handle> handles(kTensors);
    for (int t : order) {
      buffers[t] = kolo_test::Buffer(dtypes[t % 3], {3 + t % 5});
      for (int64_t i = 0; i < buffers[t].count(); ++i) buffers[t].set(i, double((peer.rank() + 1) * (t + i + round)));
      handles[t] = kolo::allreduce_async("scn/order/" + std::to_string(t), buffers[t].view(), {kolo::ReduceOp::Sum});
    }
    std::vector<kolo::Handle> in_order;
    for (int t : order) in_order.push_back(handles[t]);
    wait_all_ok(peer, in_order, "round " + std::to_string(round));
    for (int t = 0; t < kTensors; ++t)
      for (int64_t i = 0; i < buffers[t].count(); ++i) {
        const double want = double((t + i + round) * n * (n + 1) / 2);
        PEER_CHECK(peer, buffers[t].get(i) == want,
                   "scn/order/" << t << "[" << i << "] = " << buffers[t].get(i) << ", expected " << want);
      }
  }
}

// allgather (rank q gives q + 1 rows), broadcast from every root, alltoall with uneven
// splits (some empty), reducescatter of rows that do not divide by the number of ranks.
inline void other_collectives_are_exact(Peer& peer) {
  const int n = peer.size(), r = peer.rank();
  std::vector<int32_t> gather_in(static_cast<std::size_t>((r + 1) * 3));
  for (std::size_t k = 0; k < gather_in.size(); ++k) gather_in[k] = r * 100 + int32_t(k);
  kolo::Handle gather = kolo::allgather_async("scn/coll/allgather", kolo::view(gather_in, {r + 1, 3}));

  std::vector<std::vector<double>> broadcasts(static_cast<std::size_t>(n), std::vector<double>(5));
  std::vector<kolo::Handle> broadcast_handles;
  for (int root = 0; root < n; ++root) {
    for (int i = 0; i < 5; ++i) broadcasts[root][i] = r == root ? root * 1000 + i : -1;
    broadcast_handles.push_back(
        kolo::broadcast_async("scn/coll/broadcast/" + std::to_string(root), kolo::view(broadcasts[root]), root));
  }

  // Rank r sends (r + q) % 3 rows of 2 floats to rank q; row k of them holds r*100 + q*10 + k.
  std::vector<int64_t> splits;
  std::vector<float> alltoall_in;
  for (int q = 0; q < n; ++q) {
    splits.push_back((r + q) % 3);
    for (int k = 0; k < (r + q) % 3; ++k)
      for (int c = 0; c < 2; ++c) alltoall_in.push_back(float(r * 100 + q * 10 + k) + 0.5f * c);
  }
  const int64_t rows_out = static_cast<int64_t>(alltoall_in.size() / 2);
  kolo::Handle alltoall = kolo::alltoall_async("scn/coll/alltoall", kolo::view(alltoall_in, {rows_out, 2}), splits);

  const int64_t rows = 2 * n + 1;
  std::vector<int64_t> scatter_in(static_cast<std::size_t>(rows * 2));
  for (int64_t i = 0; i < rows * 2; ++i) scatter_in[i] = (r + 1) * i;
  kolo::Handle scatter =
      kolo::reducescatter_async("scn/coll/reducescatter", kolo::view(scatter_in, {rows, 2}), kolo::ReduceOp::Sum);

  std::vector<kolo::Handle> all = {gather, alltoall, scatter};
  all.insert(all.end(), broadcast_handles.begin(), broadcast_handles.end());
  wait_all_ok(peer, all, "collectives");

  const kolo::TensorView gathered = gather.output();
  PEER_CHECK(peer, gathered.shape == std::vector<int64_t>({n * (n + 1) / 2, 3}), "allgather shape");
  if (gathered.shape == std::vector<int64_t>({n * (n + 1) / 2, 3})) {
    const auto* g = static_cast<const int32_t*>(gathered.data);
    int64_t at = 0;
    for (int q = 0; q < n; ++q)
      for (int k = 0; k < (q + 1) * 3; ++k, ++at)
        PEER_CHECK(peer, g[at] == q * 100 + k, "allgather [" << at << "] = " << g[at] << ", expected " << q * 100 + k);
  }

  for (int root = 0; root < n; ++root)
    for (int i = 0; i < 5; ++i)
      PEER_CHECK(peer, broadcasts[root][i] == root * 1000 + i,
                 "broadcast from " << root << " [" << i << "] = " << broadcasts[root][i]);

  const kolo::TensorView received = alltoall.output();
  const auto* a = static_cast<const float*>(received.data);
  int64_t at = 0;
  for (int q = 0; q < n; ++q) {
    PEER_CHECK(peer, alltoall.received_splits().at(q) == (q + r) % 3, "alltoall rows from rank " << q);
    for (int k = 0; k < (q + r) % 3; ++k)
      for (int c = 0; c < 2; ++c, ++at)
        PEER_CHECK(peer, a[at] == float(q * 100 + r * 10 + k) + 0.5f * c,
                   "alltoall row " << k << " from rank " << q << " col " << c << " = " << a[at]);
  }

  const int64_t mine = rows / n + (r < rows % n ? 1 : 0);
  const int64_t first_row = r * (rows / n) + std::min<int64_t>(r, rows % n);
  const kolo::TensorView scattered = scatter.output();
  PEER_CHECK(peer, scattered.shape == std::vector<int64_t>({mine, 2}), "reducescatter shape");
  if (scattered.shape == std::vector<int64_t>({mine, 2})) {
    const auto* s = static_cast<const int64_t*>(scattered.data);
    for (int64_t i = 0; i < mine * 2; ++i)
      PEER_CHECK(peer, s[i] == (first_row * 2 + i) * n * (n + 1) / 2, "reducescatter [" << i << "] = " << s[i]);
  }
}

// Rank r runs r + 1 steps of allreduces (sum, average, integers, tensors that fuse), then
// joins: a joined rank contributes zeros, an average still divides by size().
inline void join_reduces_over_the_ranks_still_active(Peer& peer) {
  const int n = peer.size();
  const int64_t length = 37;
  const auto value = [](int q, int step, int64_t i) { return double((q + 1) * (i % 5 + 1) + step); };
  for (int step = 0; step <= peer.rank(); ++step) {
    std::vector<float> sum(length), avg(length);
    std::vector<int32_t> ints(length);
    for (int64_t i = 0; i < length; ++i) {
      sum[i] = avg[i] = float(value(peer.rank(), step, i));
      ints[i] = int32_t(value(peer.rank(), step, i));
    }
    // Small sums that fuse with each other: on a joined rank their zeros are written into
    // the fusion buffer.
    std::vector<float> f1(5, float(peer.rank() + 1)), f2(3, float(10 * (peer.rank() + 1)));
    std::vector<int32_t> i1(4, peer.rank() + 1), i2(6, 100 * (peer.rank() + 1));
    const std::string s = std::to_string(step);
    const auto sum_op = kolo::AllreduceOptions{kolo::ReduceOp::Sum};
    const std::vector<kolo::Handle> handles = {
        kolo::allreduce_async("scn/join/sum/" + s, kolo::view(sum), sum_op),
        kolo::allreduce_async("scn/join/avg/" + s, kolo::view(avg), {kolo::ReduceOp::Average}),
        kolo::allreduce_async("scn/join/int/" + s, kolo::view(ints), sum_op),
        kolo::allreduce_async("scn/join/fused1/" + s, kolo::view(f1), sum_op),
        kolo::allreduce_async("scn/join/fused2/" + s, kolo::view(f2), sum_op),
        kolo::allreduce_async("scn/join/ifused1/" + s, kolo::view(i1), sum_op),
        kolo::allreduce_async("scn/join/ifused2/" + s, kolo::view(i2), sum_op)};
    wait_all_ok(peer, handles, "step " + s);
    double active = 0;  // sum of (q + 1) over the ranks still active (q >= step)
    for (int q = step; q < n; ++q) active += q + 1;
    PEER_CHECK(peer, f1 == std::vector<float>(5, float(active)), "step " << step << ": fused1 [0] = " << f1[0]);
    PEER_CHECK(peer, f2 == std::vector<float>(3, float(10 * active)), "step " << step << ": fused2 [0] = " << f2[0]);
    PEER_CHECK(peer, i1 == std::vector<int32_t>(4, int32_t(active)), "step " << step << ": ifused1 [0] = " << i1[0]);
    PEER_CHECK(peer, i2 == std::vector<int32_t>(6, int32_t(100 * active)),
               "step " << step << ": ifused2 [0] = " << i2[0]);
    int64_t wrong = 0;
    for (int64_t i = 0; i < length; ++i) {
      double want = 0;
      for (int q = step; q < n; ++q) want += value(q, step, i);
      if (sum[i] != float(want) || ints[i] != int32_t(want) || !close_enough(avg[i], want / n, kolo::DType::Float32, false))
        ++wrong;
    }
    PEER_CHECK(peer, wrong == 0, "step " << step << ": " << wrong << " wrong elements");
  }
  const kolo::Status joined = peer.join();
  PEER_CHECK(peer, joined.ok(), "join: " << describe(joined));
  // Afterwards every rank takes part again.
  std::vector<float> after(8, float(peer.rank() + 1));
  const kolo::Status s = peer.wait(kolo::allreduce_async("scn/join/after", kolo::view(after), {kolo::ReduceOp::Sum}));
  PEER_CHECK(peer, s.ok() && after[7] == float(n * (n + 1) / 2), "after join: " << describe(s) << ", " << after[7]);
}

}  // namespace kolo_scenarios
