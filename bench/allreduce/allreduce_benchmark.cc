// Allreduce of the ResNet-50 gradient set through kolo, against raw MPI in the same run:
//   (a) one MPI_Allreduce on a flat buffer of all 25,557,032 floats,
//   (b) one MPI_Allreduce per tensor (161 calls), in backprop order,
//   kolo: 161 allreduce_async calls in backprop order (in place), then wait for all, with
//   op Sum and with op Average (what DistributedOptimizer sends), measured turn about so
//   that both see the same machine, and each on both copies of the set in turn.
// The raw baselines run while kolo is not initialised (its idle cycle would slow them), so
// the run is a chain of short rounds: raw MPI, kolo (initialised for the round, then shut
// down), raw MPI, kolo, ..., raw MPI. These machines switch between speeds that differ by
// 2x within seconds, so each round's kolo figures are compared with the raw runs just
// before and after them, and a target's ratio is the median of the rounds' ratios. The
// baseline is the faster of (a) and (b); the targets are kolo Sum / baseline <= 1.05,
// kolo Average / baseline <= 1.05 and kolo Average / kolo Sum <= 1.05. The same rounds
// time the other scaled forms against kolo Sum, each <= 1.05: a postscale, a prescale,
// Horovod's gradient predivide (Average with prescale 1/f and postscale f), and Average
// against Sum on the fused path alone (the set's tensors under 256 KiB a rank, which kolo
// copies into a fusion buffer; the larger ones run on the caller's memory).
// Also: one step of 161 tiny cached tensors, and the latency of one small allreduce.
//
//   mpirun -np 2 build/bench/allreduce/allreduce_benchmark [--reps N] [--rounds R] [--sweep]
// --reps: timed runs of each case in all (default 20), spread over --rounds (default 10, or
// reps / 2 where --reps is under 20).
// --sweep repeats the kolo Sum measurement for several fusion thresholds and chunk sizes
// (kolo is restarted with new KOLO_* settings between them).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../cpu_model.h"
#include "in_turn.h"
#include "kolo/kolo.h"
#include "resnet50_gradients.h"

namespace {

using kolo_bench::measure;
using kolo_bench::median;
using kolo_bench::measure_times;
using kolo_bench::round_trip_us;
using kolo_bench::summary;
using kolo_bench::Timing;

// What kolo runs in one timed step: the set (or its fused part) with one op and scales.
// Names differ per case (`prefix`), as in a training loop, where a tensor's op never
// changes: a new op under a cached name would be negotiated again by name every step.
struct Case {
  const char* label;
  std::string prefix;
  kolo::AllreduceOptions options;
  bool fused_only = false;  // only the tensors under 256 KiB a rank (runtime/fusion.h)
};
// The fused part takes about 1 ms, where the machine's scheduling noise is of the same
// size: a timed run is this many steps of it (its times are divided back to one step).
constexpr int kFusedStepsPerRun = 10;

enum CaseIndex { kSum, kAverage, kPostscale, kPrescale, kPredivide, kFusedSum, kFusedAverage, kCases };

std::vector<Case> cases() {
  using kolo::ReduceOp;
  return {{"kolo, op Sum (default)", "sum/", {.op = ReduceOp::Sum}},
          {"kolo, op Average (default)", "average/", {.op = ReduceOp::Average}},
          {"kolo, Sum, postscale 0.5", "postscale/", {.op = ReduceOp::Sum, .postscale = 0.5}},
          {"kolo, Sum, prescale 0.5", "prescale/", {.op = ReduceOp::Sum, .prescale = 0.5}},
          {"kolo, Average, predivide 2", "predivide/", {.op = ReduceOp::Average, .prescale = 0.5, .postscale = 2.0}},
          {"kolo, fused part, Sum", "fused_sum/", {.op = ReduceOp::Sum}, true},
          {"kolo, fused part, Average", "fused_average/", {.op = ReduceOp::Average}, true}};
}

bool fused(const GradientTensor& t, int size) {
  return t.elements() * int64_t(sizeof(float)) < int64_t(256 * 1024) * size;
}

void kolo_submit(Gradients& g, std::vector<kolo::Handle>& handles, const Case& c, int size) {
  for (int step = 0; step < (c.fused_only ? kFusedStepsPerRun : 1); ++step) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < g.tensors.size(); ++i) {
      if (c.fused_only && !fused(g.tensors[i], size)) continue;
      handles[n++] =
          kolo::allreduce_async(c.prefix + g.tensors[i].name, kolo::view(g.data[i], g.tensors[i].shape), c.options);
    }
    for (std::size_t i = 0; i < n; ++i) handles[i].wait().throw_if_error();
  }
}

Timing kolo_step(Gradients& g, int reps, int size) {
  std::vector<kolo::Handle> handles(g.tensors.size());
  const Case sum = cases()[kSum];
  return measure(3, reps, [&] { kolo_submit(g, handles, sum, size); }, [&] { g.refill_if_large(); });
}

// The raw baselines: (a) one call on a flat buffer, (b) one call per tensor. Each list
// gets `reps` more times, after `warmup` untimed runs.
void raw_mpi(std::vector<float>& flat, Gradients& g, int warmup, int reps, std::vector<double>& a,
             std::vector<double>& b) {
  const auto times = measure_times(
      warmup, reps,
      {[&] { MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(flat.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
       [&] {
         for (auto& d : g.data)
           MPI_Allreduce(MPI_IN_PLACE, d.data(), static_cast<int>(d.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
       }},
      [&] {
        if (flat[0] >= 1e30f) std::fill(flat.begin(), flat.end(), 1.0f);
        g.refill_if_large();
      });
  a.insert(a.end(), times[0].begin(), times[0].end());
  b.insert(b.end(), times[1].begin(), times[1].end());
}

void print_row(const char* name, const Timing& t, double baseline_ms) {
  std::printf("| %-34s | %8.2f | %8.2f | %10.3f |\n", name, t.min_ms, t.median_ms, t.median_ms / baseline_ms);
}

void print_target(const std::string& what, const std::vector<double>& per_round) {
  const double ratio = median(per_round);
  std::printf("%-40s = %.3f  target <= 1.05: %s   (rounds:", what.c_str(), ratio, ratio <= 1.05 ? "PASS" : "FAIL");
  for (double r : per_round) std::printf(" %.2f", r);
  std::printf(")\n");
}

// One round's kolo runs: `warmup` untimed, then `reps` of every case in turn, each case on
// both copies of the set (its j-th timed run on copy (warmup + j + case) % 2, so an even
// `reps` gives each case as many runs on one copy as on the other). The whole-set cases
// take turns among themselves, then the fused part's: a whole-set run right after the
// fused part's many small cycles read up to 1.3x its neighbours on the AMD EPYC while its
// vCPUs sat apart, whatever its op (an A/A check).
struct KoloRound {
  std::vector<double> times[kCases];      // per case
  std::vector<double> on_copy[kCases][2];  // per case, per copy
  // A case's figure in the round: the mean of its medians on the two copies.
  double figure(int c) const { return (median(on_copy[c][0]) + median(on_copy[c][1])) / 2; }
};

KoloRound kolo_round(Gradients (&copies)[2], std::vector<kolo::Handle>& handles, int warmup, int reps, int size) {
  const std::vector<Case> all = cases();
  KoloRound round;
  for (const auto& [first, end] : {std::pair{0, int(kFusedSum)}, std::pair{int(kFusedSum), int(kCases)}}) {
    int iteration = 0, bodies_run = 0;  // every case of the turn runs once per iteration, in some order
    std::vector<std::function<void()>> bodies;
    for (int c = first; c < end; ++c) {
      bodies.push_back([&, c] {
        kolo_submit(copies[(iteration + c) % 2], handles, all[c], size);
        if (++bodies_run % (end - first) == 0) ++iteration;
      });
    }
    const auto times = measure_times(warmup, reps, bodies, [&] {
      copies[0].refill_if_large();
      copies[1].refill_if_large();
    });
    for (int c = first; c < end; ++c) {
      round.times[c] = times[c - first];
      if (all[c].fused_only)
        for (double& t : round.times[c]) t /= kFusedStepsPerRun;
      for (std::size_t j = 0; j < round.times[c].size(); ++j)
        round.on_copy[c][(warmup + j + c) % 2].push_back(round.times[c][j]);
    }
  }
  return round;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int reps = 20, rounds = 0;  // rounds 0: 10, or as many as --reps allows (reps / 2)
  bool sweep = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc && std::atoi(argv[i + 1]) > 0)
      rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--sweep")) sweep = true;
    else {
      std::fprintf(stderr, "usage: %s [--reps N] [--rounds R] [--sweep]\n", argv[0]);
      return 2;
    }
  }
  if (rounds == 0) rounds = std::max(1, std::min(10, reps / 2));
  if (reps < 2 || rounds < 1 || rounds > reps / 2) {
    std::fprintf(stderr, "%s: need --reps >= 2 and 1 <= --rounds <= reps / 2 (each round times every case twice or more)\n",
                 argv[0]);
    return 2;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Runs per round, even (see kolo_round); the last round takes what is left.
  const int per_round = std::max(2, reps / rounds / 2 * 2);

  // Two copies of the set for kolo. Each op runs on both in turn (Sum on one while Average
  // runs on the other, then the other way round): the same op on the two copies measured
  // 12-15% apart here (AMD EPYC, np 2), whatever the op, so a fixed copy per op biased the
  // Average / Sum ratio by as much.
  Gradients raw, copies[2];
  int64_t total = 0;
  for (const GradientTensor& t : raw.tensors) total += t.elements();
  std::vector<float> flat(static_cast<std::size_t>(total), 1.0f);
  std::vector<kolo::Handle> handles(raw.tensors.size());

  // raw[r] runs before kolo's round r and after round r - 1.
  std::vector<std::vector<double>> flat_runs(rounds + 1), per_tensor_runs(rounds + 1);
  std::vector<KoloRound> kolo_rounds;
  std::vector<double> round_trips;  // per round, before its kolo runs
  Timing tiny_step, kolo_latency, mpi_latency;
  for (int r = 0; r <= rounds; ++r) {
    raw_mpi(flat, raw, r == 0 ? 2 : 1, per_round, flat_runs[r], per_tensor_runs[r]);
    if (r == rounds) break;
    round_trips.push_back(round_trip_us());
    const int round_reps = r + 1 < rounds ? per_round : std::max(per_round, (reps - per_round * (rounds - 1) + 1) / 2 * 2);
    kolo::init();
    // Each init negotiates every name afresh: the first step of a round is not a cached one.
    kolo_rounds.push_back(kolo_round(copies, handles, 2, round_reps, size));
    if (r + 1 == rounds) {
      // 161 tiny tensors: after the first step they are all in the response cache.
      std::vector<std::vector<float>> tiny(raw.tensors.size(), std::vector<float>(4, 1.0f));
      tiny_step = measure(20, reps * 20, [&] {
        for (std::size_t i = 0; i < tiny.size(); ++i)
          handles[i] = kolo::allreduce_async("tiny/" + std::to_string(i), kolo::view(tiny[i]), {.op = kolo::ReduceOp::Sum});
        for (auto& h : handles) h.wait().throw_if_error();
      });
      std::vector<float> one(4, 1.0f);
      kolo_latency = measure(20, reps * 50, [&] { kolo::allreduce("latency", kolo::view(one), {.op = kolo::ReduceOp::Sum}); });
      mpi_latency = measure(20, reps * 50, [&] {
        MPI_Allreduce(MPI_IN_PLACE, one.data(), 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      });
    }
    kolo::shutdown();
  }

  // Per round: its baseline from the raw runs on either side of it, its ratios.
  std::vector<double> sum_ratio, average_ratio, paired, over_sum[kCases];
  std::vector<double> all_flat, all_per_tensor, on_copy[kCases][2];
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> a = flat_runs[r], b = per_tensor_runs[r];
    a.insert(a.end(), flat_runs[r + 1].begin(), flat_runs[r + 1].end());
    b.insert(b.end(), per_tensor_runs[r + 1].begin(), per_tensor_runs[r + 1].end());
    const double baseline = std::min(median(a), median(b));
    const KoloRound& k = kolo_rounds[r];
    sum_ratio.push_back(k.figure(kSum) / baseline);
    average_ratio.push_back(k.figure(kAverage) / baseline);
    for (int c = kAverage; c < kCases; ++c) {
      // Each against its own op Sum: the fused part's Average against the fused part's Sum.
      over_sum[c].push_back(k.figure(c) / k.figure(c == kFusedAverage ? kFusedSum : kSum));
    }
    // Pairs on the same copy: the Average of run j and the Sum of run j + 1.
    for (std::size_t j = 0; j + 1 < k.times[kSum].size(); ++j)
      paired.push_back(k.times[kAverage][j] / k.times[kSum][j + 1]);
    for (int c = 0; c < kCases; ++c)
      for (int copy = 0; copy < 2; ++copy)
        on_copy[c][copy].insert(on_copy[c][copy].end(), k.on_copy[c][copy].begin(), k.on_copy[c][copy].end());
  }
  for (int r = 0; r <= rounds; ++r) {
    all_flat.insert(all_flat.end(), flat_runs[r].begin(), flat_runs[r].end());
    all_per_tensor.insert(all_per_tensor.end(), per_tensor_runs[r].begin(), per_tensor_runs[r].end());
  }
  const Timing flat_mpi = summary(all_flat), per_tensor_mpi = summary(all_per_tensor);
  const double baseline = std::min(flat_mpi.median_ms, per_tensor_mpi.median_ms);
  const auto over_copies = [&](int c) {
    const Timing a = summary(on_copy[c][0]), b = summary(on_copy[c][1]);
    return Timing{std::min(a.min_ms, b.min_ms), (a.median_ms + b.median_ms) / 2};
  };
  const std::vector<Case> all = cases();
  std::size_t fused_count = 0;
  int64_t fused_elements = 0;
  for (const GradientTensor& t : raw.tensors) {
    if (!fused(t, size)) continue;
    ++fused_count;
    fused_elements += t.elements();
  }

  if (rank == 0) {
    std::printf("CPU: %s\n", kolo_bench::cpu_model().c_str());
    std::printf("ResNet-50 gradient set: %zu tensors, %lld floats, in place, np=%d; %d rounds of raw MPI and kolo in "
                "turn, %d runs of each case in all (raw MPI: %zu)\n\n",
                raw.tensors.size(), static_cast<long long>(total), size, rounds,
                static_cast<int>(on_copy[kSum][0].size() + on_copy[kSum][1].size()), all_flat.size());
    std::printf("| %-34s | %8s | %8s | %10s |\n", "case, over all rounds", "min ms", "med ms", "/ min(a,b)");
    std::printf("|%s|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(10, '-').c_str(),
                std::string(10, '-').c_str(), std::string(12, '-').c_str());
    print_row("(a) MPI flat buffer, 1 call", flat_mpi, baseline);
    print_row("(b) MPI per tensor, 161 calls", per_tensor_mpi, baseline);
    for (int c = 0; c < kCases; ++c) print_row(all[c].label, over_copies(c), baseline);
    std::printf("(kolo's med ms: the mean of its medians on the set's two copies; the fused part: the %zu tensors "
                "under 256 KiB a rank, %lld floats, timed %d steps a run, per step)\n\n",
                fused_count, static_cast<long long>(fused_elements), kFusedStepsPerRun);
    std::printf("Targets: the median of the rounds' ratios, each round against the raw MPI runs on either side of it\n");
    std::printf("%-32s         (rounds:", "1-byte round trip, rank 0-1, us");
    for (double t : round_trips) std::printf(" %.2f", t);
    std::printf(")\n");
    print_target("kolo Sum / min(a, b)", sum_ratio);
    print_target("kolo Average / min(a, b)", average_ratio);
    print_target("kolo Average / kolo Sum", over_sum[kAverage]);
    std::printf("  (median of %zu paired runs' Average / Sum, each pair on the same copy: %.3f)\n", paired.size(),
                median(paired));
    print_target("kolo Sum, postscale 0.5 / kolo Sum", over_sum[kPostscale]);
    print_target("kolo Sum, prescale 0.5 / kolo Sum", over_sum[kPrescale]);
    print_target("kolo Average, predivide 2 / kolo Sum", over_sum[kPredivide]);
    print_target("fused part: kolo Average / kolo Sum", over_sum[kFusedAverage]);
    const double tiny_us = tiny_step.median_ms * 1e3;
    std::printf("161 tiny cached tensors, one step: median %.1f us (min %.1f us)  target <= 100 us at np=2: %s\n",
                tiny_us, tiny_step.min_ms * 1e3, size != 2 ? "(not np=2)" : tiny_us <= 100 ? "PASS" : "FAIL");
    std::printf("one 16-byte allreduce: kolo median %.1f us, MPI median %.1f us\n",
                kolo_latency.median_ms * 1e3, mpi_latency.median_ms * 1e3);
  }

  if (sweep) {
    if (rank == 0) std::printf("\nsweep (kolo restarted with each setting):\n");
    const char* thresholds[] = {"0", "1048576", "4194304", "67108864"};
    const char* chunks[] = {"262144", "524288", "1048576", "4194304"};
    for (const char* threshold : thresholds) {
      for (const char* chunk : chunks) {
        setenv("KOLO_FUSION_THRESHOLD", threshold, 1);
        setenv("KOLO_ALLREDUCE_CHUNK_BYTES", chunk, 1);
        kolo::init();
        const Timing t = kolo_step(copies[0], reps, size);
        kolo::shutdown();
        if (rank == 0)
          std::printf("  fusion %9s  chunk %8s: median %7.2f ms  ratio %.3f\n", threshold, chunk,
                      t.median_ms, t.median_ms / baseline);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
