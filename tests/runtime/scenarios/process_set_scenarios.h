// Scenarios of process sets and of the calls Horovod scripts hit (grouped allgather and
// reducescatter, automatic names, byte buffers, join's return value), run in-process at
// 2, 3 and 4 ranks (tests/runtime/inprocess/process_sets_test.cc) and under mpirun
// (tests/runtime/mpi/process_sets_test.cc), with KOLO_DYNAMIC_PROCESS_SETS=1.
//
// Each rank r of set s contributes value(r, i, s) = (r + 1) * (i + 1) + s at element i; the
// expected results are computed here from the set's ranks, independently of kolo.
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "scenarios/helpers.h"
#include "scenarios/peer.h"
#include "support/adasum_reference.h"

namespace kolo_scenarios {

inline double set_value(int rank, int64_t i, int set) { return double(rank + 1) * double(i + 1) + set; }

// Disjoint (evens, odds), overlapping ({0, 1} with both, where it is not the global set)
// and singleton ({size - 1}) sets, each listed once and none equal to the global set.
inline std::vector<std::vector<int>> sets_to_test(int size) {
  std::vector<std::vector<int>> candidates, sets;
  std::vector<int> evens, odds;
  for (int r = 0; r < size; ++r) (r % 2 ? odds : evens).push_back(r);
  candidates = {evens, odds, {0, 1}, {size - 1}};
  for (const std::vector<int>& c : candidates)
    if (static_cast<int>(c.size()) < size && std::find(sets.begin(), sets.end(), c) == sets.end()) sets.push_back(c);
  return sets;
}

inline bool member_of(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

// Every operation, on every set this rank is in, submitted at once on all of them (sets run
// concurrently) under the same names (a name is unique only within its set), then checked.
inline void every_op_on_overlapping_disjoint_and_singleton_sets(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  const std::vector<std::vector<int>> lists = sets_to_test(size);
  std::vector<kolo::ProcessSet> sets;
  for (const std::vector<int>& ranks : lists) peer.blocking([&] { sets.push_back(kolo::add_process_set(ranks)); });

  // The queries: ids in order of creation, every set's ranks, this rank's place.
  const std::map<int, std::vector<int>> table = kolo::process_sets();
  PEER_CHECK(peer, table.size() == lists.size() + 1, "process_sets() has " << table.size() << " entries");  // none left by earlier tests
  PEER_CHECK(peer, table.at(0) == ranks_from(0, size), "the global set's ranks");
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const kolo::ProcessSet& set = sets[k];
    // Ids follow creation (and are not reused after a removal: earlier tests may have used some).
    PEER_CHECK(peer, set.id() == sets.front().id() + static_cast<int>(k) && set.id() > 0, "set " << k << " has id " << set.id());
    PEER_CHECK(peer, table.at(set.id()) == lists[k] && set.ranks() == lists[k], "set " << set.id() << "'s ranks");
    PEER_CHECK(peer, set.size() == static_cast<int>(lists[k].size()), "set " << set.id() << "'s size");
    const auto at = std::find(lists[k].begin(), lists[k].end(), me);
    const int expected_rank = at == lists[k].end() ? -1 : static_cast<int>(at - lists[k].begin());
    PEER_CHECK(peer, set.rank() == expected_rank && set.included() == (expected_rank >= 0),
               "set " << set.id() << ": rank() " << set.rank() << ", expected " << expected_rank);
  }

  constexpr int64_t n = 6;
  struct Buffers {
    std::vector<float> sum, avg, group_a, group_b, bcast;
    std::vector<double> gather, gather_b, scatter, scatter_b, a2a, adasum;
    std::vector<kolo::Handle> handles;
  };
  std::vector<Buffers> buffers(sets.size());
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const kolo::ProcessSet& set = sets[k];
    const int id = set.id();
    Buffers& b = buffers[k];
    if (!set.included()) {
      // A rank outside the set is refused at once, and the set's ranks never hear of it.
      std::vector<float> v(n, 1.0f);
      kolo::AllreduceOptions outside{kolo::ReduceOp::Sum};
      outside.process_set = set;
      const kolo::Status s = peer.wait(kolo::allreduce_async("ps/outside", kolo::view(v), outside));
      PEER_CHECK(peer, s.code() == kolo::StatusCode::InvalidArgument && contains(s.message(), "is not in process set"),
                 describe(s));
      continue;
    }
    const int set_size = set.size(), set_rank = set.rank();
    auto fill = [&](auto& v, int64_t count, int extra) {
      v.resize(static_cast<std::size_t>(count));
      for (int64_t i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(set_value(me, i, id) + extra);
    };
    fill(b.sum, n, 0);
    fill(b.avg, n, 0);
    fill(b.group_a, n, 1);
    fill(b.group_b, n + 1, 2);
    b.bcast.assign(n, static_cast<float>(me));
    b.gather.assign(static_cast<std::size_t>(set_rank + 1), me + 0.5);  // first dimension differs per rank
    b.gather_b.assign(2, me * 10.0);
    b.scatter.resize(static_cast<std::size_t>(2 * set_size + 1));
    b.scatter_b.resize(static_cast<std::size_t>(set_size));
    for (std::size_t i = 0; i < b.scatter.size(); ++i) b.scatter[i] = set_value(me, static_cast<int64_t>(i), id);
    for (std::size_t i = 0; i < b.scatter_b.size(); ++i) b.scatter_b[i] = set_value(me, static_cast<int64_t>(i), id);
    b.a2a.resize(static_cast<std::size_t>(set_size));
    for (int j = 0; j < set_size; ++j) b.a2a[static_cast<std::size_t>(j)] = me * 100.0 + j;

    kolo::AllreduceOptions sum{kolo::ReduceOp::Sum};
    sum.process_set = set;
    kolo::AllreduceOptions avg{kolo::ReduceOp::Average, 1.0, 3.0};
    avg.process_set = set;
    kolo::ReducescatterOptions rs{kolo::ReduceOp::Average, 2.0, 0.25};  // a product != 1: both count
    rs.process_set = set;
    kolo::ReducescatterOptions rs_sum{kolo::ReduceOp::Sum};
    rs_sum.process_set = set;
    const int root = set.ranks().back();
    b.handles = {kolo::allreduce_async("ps/sum", kolo::view(b.sum), sum),
                 kolo::allreduce_async("ps/avg", kolo::view(b.avg), avg),
                 kolo::allgather_async("ps/gather", kolo::view(b.gather, {set_rank + 1}), set),
                 kolo::broadcast_async("ps/bcast", kolo::view(b.bcast), root, set),
                 kolo::alltoall_async("ps/a2a", kolo::view(b.a2a), {}, set),
                 kolo::reducescatter_async("ps/scatter", kolo::view(b.scatter), rs)};
    for (kolo::Handle& h : kolo::grouped_allreduce_async(
             {"ps/ga", "ps/gb"}, {kolo::view(b.group_a), kolo::view(b.group_b)},
             {kolo::view(b.group_a), kolo::view(b.group_b)}, sum))
      b.handles.push_back(h);
    for (kolo::Handle& h :
         kolo::grouped_allgather_async({"ps/gga", "ps/ggb"}, {kolo::view(b.gather, {set_rank + 1}), kolo::view(b.gather_b)}, set))
      b.handles.push_back(h);
    for (kolo::Handle& h : kolo::grouped_reducescatter_async({"ps/grs"}, {kolo::view(b.scatter_b)}, rs_sum))
      b.handles.push_back(h);
    // Adasum on the set's ranks, where they are a power of two.
    if ((set_size & (set_size - 1)) == 0) {
      b.adasum.resize(static_cast<std::size_t>(n));
      for (int64_t i = 0; i < n; ++i) b.adasum[static_cast<std::size_t>(i)] = set_value(me, i * i, id) * (me % 2 ? -1 : 1);
      kolo::AllreduceOptions adasum{kolo::ReduceOp::Adasum};
      adasum.process_set = set;
      b.handles.push_back(kolo::allreduce_async("ps/adasum", kolo::view(b.adasum), adasum));
    }
  }
  for (std::size_t k = 0; k < sets.size(); ++k) {
    if (!sets[k].included()) continue;
    Buffers& b = buffers[k];
    wait_all_ok(peer, b.handles, "set " + std::to_string(sets[k].id()));
    const std::vector<int>& ranks = lists[k];
    const int id = sets[k].id(), set_size = static_cast<int>(ranks.size()), set_rank = sets[k].rank();
    const std::string where = "set " + std::to_string(id) + ": ";
    auto total = [&](int64_t i, int extra) {
      double t = 0;
      for (int r : ranks) t += set_value(r, i, id) + extra;
      return t;
    };
    for (int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      PEER_CHECK(peer, b.sum[u] == total(i, 0), where << "sum[" << i << "] = " << b.sum[u]);
      PEER_CHECK(peer, close_enough(b.avg[u], total(i, 0) / set_size * 3.0, kolo::DType::Float32, false),
                 where << "average x 3 [" << i << "] = " << b.avg[u]);
      PEER_CHECK(peer, b.group_a[u] == total(i, 1), where << "grouped a[" << i << "] = " << b.group_a[u]);
      PEER_CHECK(peer, b.bcast[u] == ranks.back(), where << "broadcast[" << i << "] = " << b.bcast[u]);
    }
    for (int64_t i = 0; i <= n; ++i)
      PEER_CHECK(peer, b.group_b[static_cast<std::size_t>(i)] == total(i, 2), where << "grouped b[" << i << "]");
    // allgather: the set's ranks in order, rank j of the set with j + 1 rows.
    const kolo::TensorView gathered = b.handles[2].output();
    std::vector<double> want;
    for (int j = 0; j < set_size; ++j) want.insert(want.end(), static_cast<std::size_t>(j + 1), ranks[j] + 0.5);
    const auto* got = static_cast<const double*>(gathered.data);
    PEER_CHECK(peer, gathered.num_elements() == static_cast<int64_t>(want.size()) &&
                         std::equal(want.begin(), want.end(), got),
               where << "allgather has " << gathered.num_elements() << " elements");
    const kolo::TensorView gathered_b = b.handles[9].output();  // after 6 plain and 2 grouped allreduce handles
    for (int j = 0; j < set_size; ++j)
      PEER_CHECK(peer, gathered_b.num_elements() == 2 * set_size &&
                           static_cast<const double*>(gathered_b.data)[2 * j] == ranks[j] * 10.0,
                 where << "grouped allgather, rank " << ranks[j]);
    // alltoall: element j of the set's rank j's input comes to rank j.
    const kolo::TensorView a2a = b.handles[4].output();
    for (int j = 0; j < set_size; ++j)
      PEER_CHECK(peer, a2a.num_elements() == set_size &&
                           static_cast<const double*>(a2a.data)[j] == ranks[j] * 100.0 + set_rank,
                 where << "alltoall from rank " << ranks[j]);
    // reducescatter: rows split evenly (lower set ranks get the extra one), average of the
    // prescaled inputs, postscaled.
    const int64_t rows = 2 * set_size + 1;
    int64_t first = 0;
    for (int j = 0; j < set_rank; ++j) first += rows / set_size + (j < rows % set_size ? 1 : 0);
    const kolo::TensorView part = b.handles[5].output();
    const int64_t mine = rows / set_size + (set_rank < rows % set_size ? 1 : 0);
    PEER_CHECK(peer, part.num_elements() == mine, where << "reducescatter part has " << part.num_elements());
    for (int64_t i = 0; i < std::min(mine, part.num_elements()); ++i) {
      const double want_i = total(first + i, 0) * 2.0 / set_size * 0.25;
      PEER_CHECK(peer, close_enough(static_cast<const double*>(part.data)[i], want_i, kolo::DType::Float64, false),
                 where << "reducescatter[" << i << "]");
    }
    if (!b.adasum.empty()) {  // against the pairwise tree over the set's ranks, in set order
      std::vector<kolo_test::AdasumTensors> inputs;
      for (int r : ranks) {
        std::vector<long double> v;
        for (int64_t i = 0; i < n; ++i) v.push_back(set_value(r, i * i, id) * (r % 2 ? -1 : 1));
        inputs.push_back({v});
      }
      const std::vector<long double> want = kolo_test::adasum_tree(inputs, kolo::DType::Float64).front();
      const std::vector<long double> got(b.adasum.begin(), b.adasum.end());
      PEER_CHECK(peer, kolo_test::relative_error(got, want) <= kolo_test::adasum_tolerance(kolo::DType::Float64),
                 where << "Adasum off by " << static_cast<double>(kolo_test::relative_error(got, want)));
    }
    const kolo::TensorView grouped_part = b.handles[10].output();
    PEER_CHECK(peer, grouped_part.num_elements() == 1 &&
                         static_cast<const double*>(grouped_part.data)[0] == total(set_rank, 0),
               where << "grouped reducescatter");
  }

  // A barrier and a join on each set (in the order of their ids, on every rank), then the
  // sets go; a removed set can no longer be used.
  for (const kolo::ProcessSet& set : sets) {
    if (!set.included()) continue;
    peer.blocking([&] { kolo::barrier(set); });
    int last = -1;
    peer.blocking([&] { last = kolo::join(set); });
    const std::vector<int> members = set.ranks();
    PEER_CHECK(peer, member_of(members, last), "set " << set.id() << ": join() returned " << last);
  }
  for (const kolo::ProcessSet& set : sets) peer.blocking([&] { kolo::remove_process_set(set); });
  std::vector<float> v(1, 1.0f);
  kolo::AllreduceOptions removed{kolo::ReduceOp::Sum};
  removed.process_set = sets.front();
  const kolo::Status s = peer.wait(kolo::allreduce_async("ps/removed", kolo::view(v), removed));
  PEER_CHECK(peer, s.code() == kolo::StatusCode::InvalidArgument && contains(s.message(), "was removed"), describe(s));
  PEER_CHECK(peer, kolo::process_sets().size() == 1, "sets left after removal");
}

// Adding a set that exists, removing the global set or one that does not exist, a set of
// bad ranks, and ranks that disagree on the set to add: a clear error on every rank, and
// kolo goes on.
inline void process_set_errors_are_clear_on_every_rank(Peer& peer) {
  const int size = peer.size();
  const std::vector<int> first_ranks = size > 2 ? std::vector<int>{size - 1, 0} : std::vector<int>{1};
  kolo::ProcessSet first;
  peer.blocking([&] { first = kolo::add_process_set(first_ranks); });  // in any order
  auto error_of = [&](const std::function<void()>& call) {
    kolo::Status status;
    peer.blocking([&] {
      try {
        call();
      } catch (const kolo::Error& e) {
        status = kolo::Status(e.code(), e.what());
      }
    });
    return status;
  };
  kolo::Status s = error_of([&] { kolo::add_process_set(size > 2 ? std::vector<int>{0, size - 1} : std::vector<int>{1}); });
  PEER_CHECK(peer, s.code() == kolo::StatusCode::InvalidArgument &&
                       contains(s.message(), "already exists (id " + std::to_string(first.id()) + ")"),
             describe(s));
  s = error_of([&] { kolo::remove_process_set(kolo::global_process_set); });
  PEER_CHECK(peer, s.code() == kolo::StatusCode::InvalidArgument && contains(s.message(), "global process set"),
             describe(s));
  s = error_of([&] { kolo::remove_process_set(kolo::ProcessSet(42)); });
  PEER_CHECK(peer, s.code() == kolo::StatusCode::InvalidArgument && contains(s.message(), "no process set 42"),
             describe(s));
  s = error_of([&] { kolo::add_process_set({0, size}); });
  PEER_CHECK(peer, s.code() == kolo::StatusCode::InvalidArgument && contains(s.message(), "outside the job"),
             describe(s));
  s = error_of([&] { kolo::add_process_set(ranks_from(0, size)); });
  PEER_CHECK(peer, s.code() == kolo::StatusCode::InvalidArgument && contains(s.message(), "is the global set"),
             describe(s));
  // Rank 0 asks for {0}, the others for {1}: every rank hears which rank wanted what.
  s = error_of([&] { kolo::add_process_set(peer.rank() == 0 ? std::vector<int>{0} : std::vector<int>{1}); });
  PEER_CHECK(peer, s.code() == kolo::StatusCode::Mismatch && contains(s.message(), "disagree on the ranks") &&
                       contains(s.message(), "rank 0 gave [0]"),
             describe(s));
  // kolo goes on: the next set gets the next id, and works.
  kolo::ProcessSet next;
  peer.blocking([&] { next = kolo::add_process_set({0}); });
  PEER_CHECK(peer, next.id() == first.id() + 1 && kolo::process_sets().count(next.id()) == 1, "next id " << next.id());
  if (next.included()) {
    std::vector<float> v(3, 2.0f);
    kolo::AllreduceOptions options{kolo::ReduceOp::Sum};
    options.process_set = next;
    const kolo::Status ok = peer.wait(kolo::allreduce_async("ps/after-errors", kolo::view(v), options));
    PEER_CHECK(peer, ok.ok() && v[0] == 2.0f, describe(ok));
  }
  peer.blocking([&] { kolo::remove_process_set(next); });
  peer.blocking([&] { kolo::remove_process_set(first); });
}

// Two sets at once ({0, 1} and {0, 2}: rank 0 in both): while the first waits for rank 1,
// which holds back its tensor, the second completes step after step. Then rank 1 submits
// and the first completes too. At 2 ranks the second set is {0}.
inline void a_waiting_set_does_not_hold_up_another(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  kolo::ProcessSet held, busy;  // held: the global set at 2 ranks
  if (size > 2) peer.blocking([&] { held = kolo::add_process_set({0, 1}); });
  peer.blocking([&] { busy = kolo::add_process_set(size > 2 ? std::vector<int>{0, 2} : std::vector<int>{0}); });
  std::vector<float> held_v(4, 1.0f);
  kolo::AllreduceOptions held_options{kolo::ReduceOp::Sum};
  held_options.process_set = held;
  kolo::Handle held_h;
  if (held.included() && me != 1) held_h = kolo::allreduce_async("ps/held", kolo::view(held_v), held_options);
  if (busy.included()) {
    kolo::AllreduceOptions options{kolo::ReduceOp::Sum};
    options.process_set = busy;
    for (int step = 0; step < 20; ++step) {
      std::vector<float> v(8, static_cast<float>(me + step));
      const kolo::Status s = peer.wait(kolo::allreduce_async("ps/busy", kolo::view(v), options));
      float want = 0;
      for (int r : busy.ranks()) want += static_cast<float>(r + step);
      PEER_CHECK(peer, s.ok() && v[0] == want, "busy step " << step << ": " << describe(s) << ", got " << v[0]);
    }
    if (held_h.valid()) PEER_CHECK(peer, !held_h.ready(), "the held set's allreduce completed without rank 1");
  }
  peer.sync();
  if (held.included() && me == 1) held_h = kolo::allreduce_async("ps/held", kolo::view(held_v), held_options);
  if (held_h.valid()) {
    const kolo::Status s = peer.wait(held_h);
    PEER_CHECK(peer, s.ok() && held_v[0] == static_cast<float>(held.size()), describe(s) << ", got " << held_v[0]);
  }
  peer.blocking([&] { kolo::remove_process_set(busy); });
  if (held.id() != 0) peer.blocking([&] { kolo::remove_process_set(held); });
}

// A grouped allgather or reducescatter is negotiated as one unit: its members carry the
// group, so a rank that submits the same names one by one disagrees with the others on
// "group", and every rank hears it; the group itself then runs exact, in one piece.
inline void grouped_collectives_run_as_one_unit(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  std::vector<double> a = {double(me)}, b = {double(me), double(me)};
  std::vector<kolo::Handle> handles;
  if (me == 0) {
    handles = {kolo::allgather_async("group/a", kolo::view(a)), kolo::allgather_async("group/b", kolo::view(b))};
  } else {
    handles = kolo::grouped_allgather_async({"group/a", "group/b"}, {kolo::view(a), kolo::view(b)});
  }
  for (const kolo::Handle& h : handles) {
    const kolo::Status s = peer.wait(h);
    PEER_CHECK(peer, s.code() == kolo::StatusCode::Mismatch && contains(s.message(), "disagree on the group"),
               describe(s));
  }
  std::vector<double> rows(static_cast<std::size_t>(size), 1.0 + me);
  handles = kolo::grouped_reducescatter_async({"group/rs1", "group/rs2"}, {kolo::view(rows), kolo::view(a)},
                                              kolo::ReducescatterOptions{kolo::ReduceOp::Sum});
  for (std::size_t k = 0; k < handles.size(); ++k) {
    const kolo::Status s = peer.wait(handles[k]);
    PEER_CHECK(peer, s.ok(), "grouped reducescatter member " << k << ": " << describe(s));
  }
  const kolo::TensorView mine = handles[0].output();
  PEER_CHECK(peer, mine.num_elements() == 1 &&
                       static_cast<const double*>(mine.data)[0] == double(size) * (size + 1) / 2,
             "grouped reducescatter: this rank's row");
}

// Unnamed operations get names per type and set in submission order, so ranks that submit
// them in the same order match, here with different values per call; a mismatch then
// names the automatic name.
inline void unnamed_operations_match_in_submission_order(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  std::vector<std::vector<float>> v(5, std::vector<float>(3));
  std::vector<kolo::Handle> handles;
  for (std::size_t k = 0; k < v.size(); ++k) {
    std::fill(v[k].begin(), v[k].end(), static_cast<float>((me + 1) * (k + 1)));
    handles.push_back(kolo::allreduce_async("", kolo::view(v[k]), {kolo::ReduceOp::Sum}));
  }
  std::vector<double> g = {double(me)};
  handles.push_back(kolo::allgather_async("", kolo::view(g)));
  wait_all_ok(peer, handles, "unnamed");
  for (std::size_t k = 0; k < v.size(); ++k)
    PEER_CHECK(peer, v[k][0] == static_cast<float>((k + 1) * size * (size + 1) / 2), "unnamed allreduce " << k);
  const kolo::TensorView all = handles.back().output();
  for (int r = 0; r < size; ++r)
    PEER_CHECK(peer, all.num_elements() == size && static_cast<const double*>(all.data)[r] == r, "unnamed allgather");
  // The sixth unnamed allreduce: a shape that differs on rank 0.
  std::vector<float> odd(me == 0 ? 2 : 3, 1.0f);
  const kolo::Status s = peer.wait(kolo::allreduce_async("", kolo::view(odd), {kolo::ReduceOp::Sum}));
  PEER_CHECK(peer, s.code() == kolo::StatusCode::Mismatch && contains(s.message(), "'allreduce.noname."),
             describe(s));
}

// Byte buffers of 0 B, 1 B and 10 MB: broadcast from each root, allgather of sizes that
// differ per rank.
inline void byte_buffers_of_any_size(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  const std::vector<std::size_t> sizes = {0, 1, 10u << 20};
  auto pattern = [](int rank, std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + static_cast<std::size_t>(rank) * 7) & 0xff);
    return s;
  };
  for (std::size_t n : sizes) {
    const int root = static_cast<int>(n % static_cast<std::size_t>(size));
    std::string got;
    peer.blocking([&] { got = kolo::broadcast_bytes("", me == root ? pattern(root, n) : std::string("stale"), root); });
    PEER_CHECK(peer, got == pattern(root, n), "broadcast_bytes of " << n << " B: got " << got.size() << " B");
    // Each rank's own size: n, except rank 1 sends n / 2 + 1 (0 B sizes differ too).
    const std::size_t mine = me == 1 ? n / 2 + 1 : n;
    std::vector<std::string> all;
    peer.blocking([&] { all = kolo::allgather_bytes("bytes/" + std::to_string(n), pattern(me, mine)); });
    PEER_CHECK(peer, static_cast<int>(all.size()) == size, "allgather_bytes gave " << all.size() << " buffers");
    for (int r = 0; r < std::min(size, static_cast<int>(all.size())); ++r)
      PEER_CHECK(peer, all[static_cast<std::size_t>(r)] == pattern(r, r == 1 ? n / 2 + 1 : n),
                 "allgather_bytes of " << n << " B: rank " << r << "'s buffer");
  }
}

// The sizes in the byte collectives' first step are other ranks' words: rank 0 calls
// allgather_bytes and broadcast_bytes while the others run the two steps by hand with sizes
// that do not match their bytes (or are negative). Rank 0 gets a clear Mismatch error, not
// a read past the bytes that arrived (ASan would see one) or an allocation of -3 bytes.
inline void byte_buffer_sizes_from_other_ranks_are_checked(Peer& peer) {
  const int me = peer.rank();
  for (int64_t lie : {int64_t{100}, int64_t{-3}, int64_t{1}}) {
    const std::string name = "lying/" + std::to_string(lie);
    if (me == 0) {
      std::string why;
      try {
        peer.blocking([&] { kolo::allgather_bytes(name, "abc"); });
      } catch (const kolo::Error& e) {
        PEER_CHECK(peer, e.code() == kolo::StatusCode::Mismatch, e.what());
        why = e.what();
      }
      PEER_CHECK(peer, contains(why, "allgather_bytes of '" + name + "'"), "allgather_bytes gave no error: " << why);
    } else {
      std::vector<int64_t> size = {lie};
      std::string bytes = "xyz";  // 3 bytes, whatever the size says
      PEER_CHECK(peer, peer.wait(kolo::allgather_async(name + ".size", kolo::view(size))).ok(), "the size step");
      kolo::TensorView view{bytes.data(), kolo::DType::UInt8, {3}, kolo::Device::cpu()};
      PEER_CHECK(peer, peer.wait(kolo::allgather_async(name + ".bytes", view)).ok(), "the bytes step");
    }
  }
  // A root that claims a negative size: the others stop after the first step.
  if (me == 0) {
    std::vector<int64_t> size = {-5};
    PEER_CHECK(peer, peer.wait(kolo::broadcast_async("lying/broadcast.size", kolo::view(size), 0)).ok(), "size");
  } else {
    std::string why;
    try {
      peer.blocking([&] { kolo::broadcast_bytes("lying/broadcast", "", 0); });
    } catch (const kolo::Error& e) {
      PEER_CHECK(peer, e.code() == kolo::StatusCode::Mismatch, e.what());
      why = e.what();
    }
    PEER_CHECK(peer, contains(why, "sent a size of -5 bytes"), "broadcast_bytes gave no error: " << why);
  }
}

// Ranks join one after another (rank r after r steps of kolo's time): join() returns the
// last, on every rank; then allgather and broadcast while a rank has joined fail as in
// Horovod, and allreduce goes on.
inline void join_returns_the_last_rank_to_join(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  peer.sleep(std::chrono::milliseconds(200 * me));
  int last = -2;
  const kolo::Status s = peer.join(&last);
  PEER_CHECK(peer, s.ok() && last == size - 1, describe(s) << ", join() returned " << last);
  peer.sync();
  // Rank 0 joins at once; the others try an allgather and a broadcast, then join.
  if (me == 0) {
    const kolo::Status j = peer.join(&last);
    PEER_CHECK(peer, j.ok() && last == size - 1, describe(j) << ", join() returned " << last);
    return;
  }
  peer.sleep(std::chrono::milliseconds(100));
  std::vector<double> g = {1.0};
  const kolo::Status ag = peer.wait(kolo::allgather_async("join/allgather", kolo::view(g)));
  PEER_CHECK(peer, ag.code() == kolo::StatusCode::InvalidArgument && contains(ag.message(), "have joined"),
             describe(ag));
  const kolo::Status bc = peer.wait(kolo::broadcast_async("join/broadcast", kolo::view(g), 1));
  PEER_CHECK(peer, bc.code() == kolo::StatusCode::InvalidArgument && contains(bc.message(), "have joined"),
             describe(bc));
  std::vector<float> v(2, 1.0f);
  const kolo::Status ar = peer.wait(kolo::allreduce_async("join/allreduce", kolo::view(v), {kolo::ReduceOp::Sum}));
  PEER_CHECK(peer, ar.ok() && v[0] == static_cast<float>(size - 1), describe(ar));
  peer.sleep(std::chrono::milliseconds(100 * me));
  const kolo::Status j = peer.join(&last);
  PEER_CHECK(peer, j.ok() && last == size - 1, describe(j) << ", join() returned " << last);
}

// A join after a join, with only cached allreduces between them (which send no rounds to
// the coordinator): the ranks join in reverse order, so rank 0 is the last. Horovod's test
// asserts that the rank that joined first is not what join() returns.
inline void a_second_join_after_cached_allreduces_returns_its_own_last_rank(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  std::vector<float> v(2);
  for (int round = 0; round < 2; ++round) {
    peer.sleep(std::chrono::milliseconds(100 * me));
    int last = -2;
    const kolo::Status j = peer.join(&last);
    PEER_CHECK(peer, j.ok() && last == size - 1, "first join of round " << round << ": " << describe(j) << ", returned " << last);
    for (int step = 0; step < 3; ++step) {  // the first puts it in the response cache
      std::fill(v.begin(), v.end(), 1.0f);
      const kolo::Status ar = peer.wait(kolo::allreduce_async("join/cached", kolo::view(v), {kolo::ReduceOp::Sum}));
      PEER_CHECK(peer, ar.ok() && v[0] == static_cast<float>(size), describe(ar));
    }
    peer.sleep(std::chrono::milliseconds(100 * (size - 1 - me)));
    const kolo::Status again = peer.join(&last);
    PEER_CHECK(peer, again.ok() && last == 0, "second join of round " << round << ": " << describe(again) << ", returned " << last);
  }
}

// Horovod's test_horovod_join_allgather at three or more ranks: each rank joins first once
// while the others try an unnamed allgather, which fails. The ranks that tried have each
// counted one more automatic name than the rank that had joined; without the names the
// failure used up on every rank, the next round's allgathers would differ in name and wait
// for each other for ever.
inline void automatic_names_stay_in_step_after_an_operation_some_ranks_did_not_run(Peer& peer) {
  const int me = peer.rank(), size = peer.size();
  std::vector<double> g = {1.0, 2.0};
  for (int first = 0; first < size; ++first) {
    int last = -2;
    if (me != first) {
      peer.sleep(std::chrono::milliseconds(100));
      const kolo::Status ag = peer.wait(kolo::allgather_async("", kolo::view(g)));
      PEER_CHECK(peer, ag.code() == kolo::StatusCode::InvalidArgument && contains(ag.message(), "have joined"),
                 "round " << first << ": " << describe(ag));
    }
    const kolo::Status j = peer.join(&last);
    PEER_CHECK(peer, j.ok() && last != first, "round " << first << ": " << describe(j) << ", returned " << last);
  }
  std::vector<double> mine = {static_cast<double>(me)};
  kolo::Handle h = kolo::allgather_async("", kolo::view(mine));
  const kolo::Status s = peer.wait(h);
  PEER_CHECK(peer, s.ok() && h.output().num_elements() == size, "an unnamed allgather after the rounds: " << describe(s));
}

}  // namespace kolo_scenarios
