// Which algorithm and piece should the MPI backend run on this machine, and what does the
// runtime add? The ResNet-50 gradient set, on one copy, in the same rounds: in the MPI
// backend's pieces through kolo's ring (ops/ring_allreduce.h) and through MPI_Allreduce,
// Sum and Average; each tensor whole through MPI_Allreduce (baseline (b) of
// allreduce_benchmark) and through the ring; and through kolo itself (the runtime, Sum).
// Each round's 1-byte round trip says where a VM's host put the vCPUs (docs/perf.md,
// "Which algorithm the pieces take").
//
//   mpirun -np 2 --oversubscribe build/bench/allreduce/ring_vs_mpi_benchmark [--rounds 30]
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
#include "ops/backend.h"
#include "ops/dtype.h"
#include "ops/ring_allreduce.h"
#include "resnet50_gradients.h"

namespace {

using kolo::DType;
using kolo::ReduceOp;
using kolo_bench::median;

enum Variant { kRingSum, kRingAverage, kMpiSum, kMpiAverage, kMpiPerTensor, kRingPerTensor, kKoloSum, kVariants };
const char* const kNames[kVariants] = {"ring, pieces, Sum",           "ring, pieces, Average",
                                       "MPI_Allreduce, pieces, Sum",  "MPI_Allreduce, pieces, Average",
                                       "MPI_Allreduce per tensor, Sum", "ring per tensor, Sum",
                                       "kolo, Sum"};

struct Allreducer {
  int size = 1;
  int64_t piece = 0;  // floats, the MPI backend's default piece
  std::vector<std::byte> scratch;
  std::vector<kolo::Handle> handles;

  // One tensor as the MPI backend runs it, with every piece through the ring or through MPI
  // (an average scaled after it, as the backend scales a piece below the ring's minimum),
  // in the backend's pieces or `whole`.
  void tensor(std::vector<float>& data, bool ring, bool average, bool whole) {
    const int64_t count = int64_t(data.size());
    const int64_t step = whole ? count : piece;
    const double scale = average ? 1.0 / size : 1.0;
    for (int64_t at = 0; at < count; at += step) {
      const int n = int(std::min(step, count - at));
      float* p = data.data() + at;
      if (ring && int64_t(n) * 4 >= kolo::ops::kRingMinBytesPerRank * size) {
        kolo::ops::ring_allreduce(MPI_COMM_WORLD, p, p, n, DType::Float32, ReduceOp::Sum, 1.0, scale, scratch);
      } else {
        MPI_Allreduce(MPI_IN_PLACE, p, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        kolo::ops::scale(p, n, DType::Float32, scale);
      }
    }
  }

  void set(Gradients& g, Variant v) {
    if (v == kKoloSum) {  // as a training step submits its gradients, then waits for them
      handles.resize(g.tensors.size());
      for (std::size_t i = 0; i < g.tensors.size(); ++i)
        handles[i] = kolo::allreduce_async("sum/" + g.tensors[i].name, kolo::view(g.data[i], g.tensors[i].shape),
                                           {.op = ReduceOp::Sum});
      for (kolo::Handle& h : handles) h.wait().throw_if_error();
      return;
    }
    for (auto& d : g.data) {
      if (v == kMpiPerTensor)
        MPI_Allreduce(MPI_IN_PLACE, d.data(), int(d.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else
        tensor(d, v != kMpiSum && v != kMpiAverage, v == kRingAverage || v == kMpiAverage, v == kRingPerTensor);
    }
  }
};

void print_ratio(const char* what, const std::vector<double>& ratios) {
  if (ratios.empty()) return;
  std::printf("  %-52s = %.3f  (%zu rounds, %.2f-%.2f)\n", what, median(ratios), ratios.size(),
              *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()));
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rounds = 30;
  const bool usage = argc != 1 && (argc != 3 || std::strcmp(argv[1], "--rounds") != 0);
  if (argc == 3 && !usage) rounds = std::atoi(argv[2]);
  if (usage || rounds < 1) {
    if (usage) std::fprintf(stderr, "usage: %s [--rounds N]\n", argv[0]);
    else std::fprintf(stderr, "%s: --rounds must be at least 1\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  int rank = 0;
  Allreducer run;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &run.size);
  run.piece = kolo::ops::allreduce_piece_bytes(0, run.size) / int64_t(sizeof(float));

  kolo::init();
  Gradients g;
  std::vector<std::function<void()>> bodies;
  for (int v = 0; v < kVariants; ++v) bodies.push_back([&, v] { run.set(g, Variant(v)); });
  const auto refill = [&] { g.refill_if_large(); };
  kolo_bench::measure_times(1, 0, bodies, refill);  // warm-up: every variant once

  // Per round: the round trip, then every variant twice (forward order, then backward), its
  // figure the mean of the two.
  std::vector<double> round_trip(rounds);
  std::vector<std::vector<double>> ms(kVariants, std::vector<double>(rounds));
  for (int r = 0; r < rounds; ++r) {
    round_trip[r] = kolo_bench::round_trip_us();
    const auto times = kolo_bench::measure_times(0, 2, bodies, refill);
    for (int v = 0; v < kVariants; ++v) ms[v][r] = (times[v][0] + times[v][1]) / 2;
  }
  // Sums of ones are the ranks, averages of ones are ones: a wrong reduction would show here.
  bool correct = true;
  for (const auto& [v, expected] : {std::pair{kKoloSum, float(run.size)}, std::pair{kRingAverage, 1.0f}}) {
    g = Gradients();
    bodies[v]();
    for (const auto& d : g.data)
      correct = correct && std::all_of(d.begin(), d.end(), [&](float x) { return x == expected; });
  }

  if (rank == 0) {
    std::printf("CPU: %s\n", kolo_bench::cpu_model().c_str());
    std::printf("ResNet-50 gradient set, %zu tensors, np=%d, %d rounds; pieces of %lld bytes (the MPI backend's)\n",
                g.tensors.size(), run.size, rounds, static_cast<long long>(run.piece * 4));
    std::printf("\n| round | round trip us |");
    for (const char* name : kNames) std::printf(" %s ms |", name);
    std::printf("\n|---:|---:|");
    for (int v = 0; v < kVariants; ++v) std::printf("---:|");
    std::printf("\n");
    for (int r = 0; r < rounds; ++r) {
      std::printf("| %d | %.2f |", r, round_trip[r]);
      for (int v = 0; v < kVariants; ++v) std::printf(" %.1f |", ms[v][r]);
      std::printf("\n");
    }
    // Rounds whose round trip is well above the run's fastest: on a VM, the host has put
    // the two vCPUs apart (no shared cache); judged within the run, not by a fixed figure.
    const double fastest = *std::min_element(round_trip.begin(), round_trip.end());
    for (const bool slow : {false, true}) {
      std::vector<double> ring_vs_mpi, ring_vs_mpi_average, ring_vs_tensor, pieces_vs_whole, kolo_vs_ring;
      std::vector<double> average_ring, average_mpi;
      for (int r = 0; r < rounds; ++r) {
        if ((round_trip[r] > 1.5 * fastest) != slow) continue;
        ring_vs_mpi.push_back(ms[kRingSum][r] / ms[kMpiSum][r]);
        ring_vs_tensor.push_back(ms[kRingSum][r] / ms[kMpiPerTensor][r]);
        pieces_vs_whole.push_back(ms[kRingSum][r] / ms[kRingPerTensor][r]);
        kolo_vs_ring.push_back(ms[kKoloSum][r] / ms[kRingSum][r]);
        ring_vs_mpi_average.push_back(ms[kRingAverage][r] / ms[kMpiAverage][r]);
        average_ring.push_back(ms[kRingAverage][r] / ms[kRingSum][r]);
        average_mpi.push_back(ms[kMpiAverage][r] / ms[kMpiSum][r]);
      }
      if (ring_vs_mpi.empty()) continue;
      std::printf("\nRounds with a round trip %s 1.5x the run's fastest (%.2f us): medians of the per-round ratios\n",
                  slow ? "above" : "within", fastest);
      print_ratio("ring Sum / MPI_Allreduce Sum, same pieces", ring_vs_mpi);
      print_ratio("ring Average / MPI_Allreduce Average, same pieces", ring_vs_mpi_average);
      print_ratio("ring Sum / MPI_Allreduce per tensor", ring_vs_tensor);
      print_ratio("ring Sum: pieces / one piece a tensor", pieces_vs_whole);
      print_ratio("kolo Sum / ring Sum", kolo_vs_ring);
      print_ratio("ring: Average / Sum", average_ring);
      print_ratio("MPI_Allreduce pieces: Average / Sum", average_mpi);
    }
    std::printf("\ncheck: kolo's sum and the ring's average of ones are right: %s\n", correct ? "yes" : "NO");
  }
  kolo::shutdown();
  MPI_Finalize();
  return correct ? 0 : 1;
}
