// Allreduce of the ResNet-50 gradient set through kolo, against raw MPI in the same run:
//   (a) one MPI_Allreduce on a flat buffer of all 25,557,032 floats,
//   (b) one MPI_Allreduce per tensor (161 calls), in backprop order,
//   kolo: 161 allreduce_async calls in backprop order (in place), then wait for all, with
//   op Sum and with op Average (what DistributedOptimizer sends), measured turn about so
//   that both see the same machine, and each on both copies of the set in turn.
// The raw baselines run while kolo is not initialised (its idle cycle would slow them),
// before kolo and again after it; each one's figure is the median of both sets. The
// baseline is the faster of (a) and (b); the targets are kolo Sum / baseline <= 1.05,
// kolo Average / baseline <= 1.05 and kolo Average / kolo Sum <= 1.05.
// Also: one step of 161 tiny cached tensors, and the latency of one small allreduce.
//
//   mpirun -np 2 build/bench/allreduce/allreduce_benchmark [--reps N] [--sweep]
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
using kolo_bench::measure_times;
using kolo_bench::summary;
using kolo_bench::Timing;

// One copy of the gradient set. Sums in place grow by a factor of size() every step:
// refilled with ones (between timed runs) long before they could overflow.
struct Gradients {
  std::vector<GradientTensor> tensors = resnet50_gradients_backprop_order();
  std::vector<std::vector<float>> data;
  Gradients() {
    for (const GradientTensor& t : tensors) data.emplace_back(t.elements(), 1.0f);
  }
  void refill_if_large() {
    if (data[0][0] < 1e30f) return;
    for (auto& d : data) std::fill(d.begin(), d.end(), 1.0f);
  }
};

// Names differ per op (`prefix`), as in a training loop, where a tensor's op never
// changes: a new op under a cached name would be negotiated again by name every step.
void kolo_submit(Gradients& g, std::vector<kolo::Handle>& handles, const std::string& prefix, kolo::ReduceOp op) {
  for (std::size_t i = 0; i < g.tensors.size(); ++i)
    handles[i] = kolo::allreduce_async(prefix + g.tensors[i].name, kolo::view(g.data[i], g.tensors[i].shape),
                                       {.op = op});
  for (auto& h : handles) h.wait().throw_if_error();
}

Timing kolo_step(Gradients& g, int reps) {
  std::vector<kolo::Handle> handles(g.tensors.size());
  return measure(3, reps, [&] { kolo_submit(g, handles, "sum/", kolo::ReduceOp::Sum); }, [&] { g.refill_if_large(); });
}

// The raw baselines: (a) one call on a flat buffer, (b) one call per tensor. Each list
// gets `reps` more times.
void raw_mpi(std::vector<float>& flat, Gradients& g, int reps, std::vector<double>& a, std::vector<double>& b) {
  const auto times = measure_times(
      2, reps,
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

void print_target(const char* what, double ratio) {
  std::printf("%-32s = %.3f  target <= 1.05: %s\n", what, ratio, ratio <= 1.05 ? "PASS" : "FAIL");
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int reps = 10;
  bool sweep = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--sweep")) sweep = true;
    else {
      std::fprintf(stderr, "usage: %s [--reps N] [--sweep]\n", argv[0]);
      return 2;
    }
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // Two copies of the set for kolo. Each op runs on both in turn (Sum on one while Average
  // runs on the other, then the other way round): the same op on the two copies measured
  // 12-15% apart here (AMD EPYC, np 2), whatever the op, so a fixed copy per op biased the
  // Average / Sum ratio by as much.
  Gradients raw, copies[2];
  int64_t total = 0;
  for (const GradientTensor& t : raw.tensors) total += t.elements();
  std::vector<float> flat(static_cast<std::size_t>(total), 1.0f);

  std::vector<double> flat_times, per_tensor_times;
  raw_mpi(flat, raw, reps, flat_times, per_tensor_times);

  kolo::init();
  std::vector<kolo::Handle> handles(raw.tensors.size());
  int runs = 0;  // both ops run once per round, in either order: the round is runs / 2
  const auto copy_for = [&](int op) -> Gradients& { return copies[(runs++ / 2 + op) % 2]; };
  constexpr int kWarmup = 3;
  const auto kolo_times = measure_times(
      kWarmup, reps,
      {[&] { kolo_submit(copy_for(0), handles, "sum/", kolo::ReduceOp::Sum); },
       [&] { kolo_submit(copy_for(1), handles, "average/", kolo::ReduceOp::Average); }},
      [&] {
        copies[0].refill_if_large();
        copies[1].refill_if_large();
      });
  // Op `op`'s run j (after the warmup) was on copy (kWarmup + j + op) % 2. Its figure is the
  // mean of its median on each copy; its paired ratio compares runs on the same copy (the
  // Average of run j and the Sum of run j + 1).
  const auto on_copy = [&](int op, int copy) {
    std::vector<double> t;
    for (std::size_t j = 0; j < kolo_times[op].size(); ++j)
      if ((kWarmup + j + op) % 2 == std::size_t(copy)) t.push_back(kolo_times[op][j]);
    return summary(t);
  };
  const auto over_copies = [&](int op) {
    const Timing a = on_copy(op, 0), b = on_copy(op, 1);
    return Timing{std::min(a.min_ms, b.min_ms), (a.median_ms + b.median_ms) / 2};
  };
  const Timing kolo_sum = over_copies(0), kolo_average = over_copies(1);
  std::vector<double> paired(kolo_times[0].size() - 1);
  for (std::size_t j = 0; j < paired.size(); ++j) paired[j] = kolo_times[1][j] / kolo_times[0][j + 1];
  const double paired_ratio = summary(paired).median_ms;

  // 161 tiny tensors: after the first step they are all in the response cache.
  std::vector<std::vector<float>> tiny(raw.tensors.size(), std::vector<float>(4, 1.0f));
  const Timing tiny_step = measure(20, reps * 20, [&] {
    for (std::size_t i = 0; i < tiny.size(); ++i)
      handles[i] = kolo::allreduce_async("tiny/" + std::to_string(i), kolo::view(tiny[i]), {.op = kolo::ReduceOp::Sum});
    for (auto& h : handles) h.wait().throw_if_error();
  });
  std::vector<float> one(4, 1.0f);
  const Timing kolo_latency = measure(20, reps * 50, [&] {
    kolo::allreduce("latency", kolo::view(one), {.op = kolo::ReduceOp::Sum});
  });
  const Timing mpi_latency = measure(20, reps * 50, [&] {
    MPI_Allreduce(MPI_IN_PLACE, one.data(), 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });
  kolo::shutdown();

  raw_mpi(flat, raw, reps, flat_times, per_tensor_times);
  const Timing flat_mpi = summary(flat_times), per_tensor_mpi = summary(per_tensor_times);
  const double baseline = std::min(flat_mpi.median_ms, per_tensor_mpi.median_ms);

  if (rank == 0) {
    std::printf("CPU: %s\n", kolo_bench::cpu_model().c_str());
    std::printf("ResNet-50 gradient set: %zu tensors, %lld floats, in place, np=%d, %d reps "
                "(raw MPI: %d before kolo and %d after)\n\n",
                raw.tensors.size(), static_cast<long long>(total), size, reps, reps, reps);
    std::printf("| %-34s | %8s | %8s | %10s |\n", "case", "min ms", "med ms", "/ min(a,b)");
    std::printf("|%s|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(10, '-').c_str(),
                std::string(10, '-').c_str(), std::string(12, '-').c_str());
    print_row("(a) MPI flat buffer, 1 call", flat_mpi, baseline);
    print_row("(b) MPI per tensor, 161 calls", per_tensor_mpi, baseline);
    print_row("kolo, op Sum (default)", kolo_sum, baseline);
    print_row("kolo, op Average (default)", kolo_average, baseline);
    std::printf("(kolo's med ms: the mean of its medians on the set's two copies)\n\n");
    print_target("kolo Sum / min(a, b)", kolo_sum.median_ms / baseline);
    print_target("kolo Average / min(a, b)", kolo_average.median_ms / baseline);
    print_target("kolo Average / kolo Sum", kolo_average.median_ms / kolo_sum.median_ms);
    std::printf("  (median of %zu paired runs' Average / Sum, each pair on the same copy: %.3f)\n", paired.size(),
                paired_ratio);
    std::printf("161 tiny cached tensors, one step: median %.1f us (min %.1f us; target <= 100 us at np=2)\n",
                tiny_step.median_ms * 1e3, tiny_step.min_ms * 1e3);
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
        const Timing t = kolo_step(copies[0], reps);
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
