// Allreduce of the ResNet-50 gradient set through kolo, against raw MPI in the same run:
//   (a) one MPI_Allreduce on a flat buffer of all 25,557,032 floats,
//   (b) one MPI_Allreduce per tensor (161 calls), in backprop order,
//   kolo: 161 allreduce_async calls in backprop order, then wait for all.
// The baseline is the faster of (a) and (b); the target is kolo / baseline <= 1.05.
// Also: one step of 161 tiny cached tensors, and the latency of one small allreduce.
//
//   mpirun -np 2 build/bench/allreduce/allreduce_benchmark [--reps N] [--sweep]
// --sweep repeats the kolo measurement for several fusion thresholds and chunk sizes
// (kolo is restarted with new KOLO_* settings between them).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kolo/kolo.h"
#include "resnet50_gradients.h"

namespace {

struct Timing {
  double min_ms = 0, median_ms = 0;
};

// Runs `body` `reps` times after `warmup` untimed runs; every rank starts each run
// together and the time of a run is the slowest rank's.
Timing measure(int warmup, int reps, const std::function<void()>& body) {
  std::vector<double> times;
  for (int i = 0; i < warmup + reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    body();
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= warmup) times.push_back(elapsed * 1e3);
  }
  std::sort(times.begin(), times.end());
  return {times.front(), times[times.size() / 2]};
}

struct Gradients {
  std::vector<GradientTensor> tensors = resnet50_gradients_backprop_order();
  std::vector<std::vector<float>> data;
  Gradients() {
    for (const GradientTensor& t : tensors) data.emplace_back(t.elements(), 1.0f);
  }
};

Timing kolo_step(Gradients& g, int reps) {
  std::vector<kolo::Handle> handles(g.tensors.size());
  return measure(3, reps, [&] {
    for (std::size_t i = 0; i < g.tensors.size(); ++i)
      handles[i] = kolo::allreduce_async("grad/" + g.tensors[i].name,
                                         kolo::view(g.data[i], g.tensors[i].shape),
                                         {.op = kolo::ReduceOp::Sum});
    for (auto& h : handles) h.wait().throw_if_error();
  });
}

void print_row(const char* name, const Timing& t, double baseline_ms) {
  std::printf("| %-34s | %8.2f | %8.2f | %5.2f |\n", name, t.min_ms, t.median_ms,
              t.median_ms / baseline_ms);
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

  Gradients g;
  int64_t total = 0;
  for (const GradientTensor& t : g.tensors) total += t.elements();
  std::vector<float> flat(static_cast<std::size_t>(total), 1.0f);

  const Timing flat_mpi = measure(2, reps, [&] {
    MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });
  const Timing per_tensor_mpi = measure(2, reps, [&] {
    for (auto& d : g.data)
      MPI_Allreduce(MPI_IN_PLACE, d.data(), static_cast<int>(d.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });
  const double baseline = std::min(flat_mpi.median_ms, per_tensor_mpi.median_ms);

  kolo::init();
  const Timing kolo_default = kolo_step(g, reps);

  // 161 tiny tensors: after the first step they are all in the response cache.
  std::vector<std::vector<float>> tiny(g.tensors.size(), std::vector<float>(4, 1.0f));
  std::vector<kolo::Handle> handles(tiny.size());
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

  if (rank == 0) {
    std::printf("ResNet-50 gradient set: %zu tensors, %lld floats, np=%d, %d reps\n\n",
                g.tensors.size(), static_cast<long long>(total), size, reps);
    std::printf("| %-34s | %8s | %8s | %5s |\n", "case", "min ms", "med ms", "ratio");
    std::printf("|%s|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(10, '-').c_str(),
                std::string(10, '-').c_str(), std::string(7, '-').c_str());
    print_row("(a) MPI flat buffer, 1 call", flat_mpi, baseline);
    print_row("(b) MPI per tensor, 161 calls", per_tensor_mpi, baseline);
    print_row("kolo (default settings)", kolo_default, baseline);
    std::printf("\nkolo / min(a, b) = %.3f (target <= 1.05)\n", kolo_default.median_ms / baseline);
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
        const Timing t = kolo_step(g, reps);
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
