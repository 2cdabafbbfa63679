// What a data-parallel step costs after backward, for ResNet-18's 11.2 M float32
// gradients on the ranks of one node, against what a one-rank job does then:
//   kolo:        kolo::allreduce_async(Average) of the gradients, then the SGD (momentum)
//                update of every parameter, on every rank (what DistributedOptimizer does);
//   node-shared: the design of DistributedOptions::node_shared_update, alone and written
//                out here (the measurement that led to it): one copy of the parameters and
//                every rank's gradients in memory the node's ranks share
//                (MPI_Win_allocate_shared); each rank averages its 1/p of the gradients and
//                updates that 1/p of the parameters and of the momentum in one loop, then a
//                barrier, after which every rank's next forward pass may read them;
//   np 1:        the SGD update of every parameter on one rank's own gradients: the
//                baseline, measured in the same run (each rank doing it at once, as two
//                one-rank jobs on the machine would).
// It prints each against the baseline: the cost of data parallelism after backward.
// docs/perf.md ("What bounds the ceiling target") has the figures.
//
//   mpirun -np 2 build/bench/allreduce/shared_update_benchmark [--reps N] [--elements N]
//
// Before timing, one step of each design from the same state must give the same
// parameters (within 1e-5 relative, on every rank); the run fails otherwise.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../cpu_model.h"
#include "in_turn.h"
#include "kolo/kolo.h"

namespace {

constexpr float kLr = 0.1f, kMomentum = 0.9f;

// The update DistributedOptimizer's SGD applies (models/cpu/optimizer_steps.cc, momentum,
// no decay, not the first step): buf = buf * momentum + g; p -= lr * buf.
void sgd(float* __restrict p, const float* __restrict g, float* __restrict buf, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    buf[i] = buf[i] * kMomentum + g[i];
    p[i] -= kLr * buf[i];
  }
}

// The same update on the average of p gradient arrays, read where each rank wrote them.
void sgd_on_average(float* __restrict p, const std::vector<const float*>& grads, float* __restrict buf,
                    std::size_t n) {
  const float inv = 1.0f / float(grads.size());
  for (std::size_t i = 0; i < n; ++i) {
    float g = 0;
    for (const float* r : grads) g += r[i];
    buf[i] = buf[i] * kMomentum + g * inv;
    p[i] -= kLr * buf[i];
  }
}

// Every rank's gradients, and rank 0's copy of the parameters, in one shared window, held
// in a passive-target epoch for its whole life (MPI_Win_sync needs one).
struct NodeShared {
  MPI_Win window = MPI_WIN_NULL;
  float* params = nullptr;
  std::vector<float*> grads;  // by rank
  NodeShared(std::size_t n, int rank, int size) {
    float* mine = nullptr;
    const std::size_t words = rank == 0 ? 2 * n : n;  // rank 0: parameters, then its gradients
    MPI_Win_allocate_shared(MPI_Aint(words * sizeof(float)), sizeof(float), MPI_INFO_NULL, MPI_COMM_WORLD, &mine,
                            &window);
    for (int r = 0; r < size; ++r) {
      MPI_Aint bytes = 0;
      int unit = 0;
      float* base = nullptr;
      MPI_Win_shared_query(window, r, &bytes, &unit, &base);
      if (r == 0) params = base;
      grads.push_back(r == 0 ? base + n : base);
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, window);
  }
  ~NodeShared() {
    MPI_Win_unlock_all(window);
    MPI_Win_free(&window);
  }
  NodeShared(const NodeShared&) = delete;
  NodeShared& operator=(const NodeShared&) = delete;
  // After every rank's writes to the window, before any rank reads what another wrote.
  void barrier() const {
    MPI_Win_sync(window);
    MPI_Barrier(MPI_COMM_WORLD);
  }
};

std::size_t parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < 1) {
    std::fprintf(stderr, "shared_update_benchmark: %s needs a positive whole number, got '%s'\n", flag, text);
    std::exit(2);
  }
  return std::size_t(value);
}

// The check, then the timing; 0, or 1 if the designs disagree. Its window is freed before
// kolo shuts down (which may finalise MPI).
int run(std::size_t n, int reps, int rank, int size) {
  std::vector<float> params(n), grads(n), momentum(n);
  NodeShared shared(n, rank, size);
  const std::size_t share = n / std::size_t(size), lo = share * std::size_t(rank),
                    hi = rank == size - 1 ? n : lo + share;
  std::vector<float> shared_momentum(hi - lo);
  std::vector<const float*> my_share;  // every rank's gradients, this rank's part of them
  for (float* g : shared.grads) my_share.push_back(g + lo);

  // Each rank's gradients differ; the parameters and momentum start the same everywhere.
  auto reset = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      grads[i] = shared.grads[std::size_t(rank)][i] = 1e-3f * float(rank + 1) + 1e-6f * float(i % 997);
      params[i] = 0.01f + 1e-7f * float(i % 101);
      momentum[i] = 1e-4f * float(i % 13);
    }
    for (std::size_t i = lo; i < hi; ++i) {
      shared.params[i] = params[i];
      shared_momentum[i - lo] = momentum[i];
    }
  };
  auto kolo_step = [&] {
    kolo::allreduce_async("shared_update/grads", kolo::view(grads), {.op = kolo::ReduceOp::Average}).wait();
    sgd(params.data(), grads.data(), momentum.data(), n);
  };
  auto shared_step = [&] {
    shared.barrier();  // every rank's gradients are written
    sgd_on_average(shared.params + lo, my_share, shared_momentum.data(), hi - lo);
    shared.barrier();  // every share is updated: the next forward pass may read them
  };
  auto alone_step = [&] { sgd(params.data(), grads.data(), momentum.data(), n); };

  // The check: one step of each from the same state gives the same parameters.
  reset();
  kolo_step();
  shared_step();
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::fabs(double(shared.params[i]) - params[i]) / std::max(1e-6, std::fabs(double(params[i]))));
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (!(worst <= 1e-5)) {
    if (rank == 0) std::fprintf(stderr, "shared_update_benchmark: the designs disagree: relative difference %g\n", worst);
    return 1;
  }

  const auto times = kolo_bench::measure_times(2, reps, {kolo_step, shared_step, alone_step}, reset);
  const double kolo_ms = kolo_bench::summary(times[0]).median_ms, shared_ms = kolo_bench::summary(times[1]).median_ms,
               alone_ms = kolo_bench::summary(times[2]).median_ms;
  if (rank == 0) {
    std::printf("CPU: %s\n", kolo_bench::cpu_model().c_str());
    std::printf("np %d, %zu float32 gradients, medians of %d steps (slowest rank); check passed (%.1e)\n", size, n,
                reps, worst);
    std::printf("after backward   kolo allreduce Average + update       %8.2f ms   / np 1 = %.2f\n", kolo_ms,
                kolo_ms / alone_ms);
    std::printf("after backward   node-shared average + 1/%d update      %8.2f ms   / np 1 = %.2f\n", size, shared_ms,
                shared_ms / alone_ms);
    std::printf("after backward   np 1: the update alone                %8.2f ms\n", alone_ms);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  std::size_t n = 11'200'000;  // ResNet-18's parameters at 32x32 (about 44.8 MB of float32)
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if ((flag == "--reps" || flag == "--elements") && i + 1 < argc) {
      const std::size_t value = parse_count(argv[i], argv[i + 1]);
      if (flag == "--reps") reps = int(value);
      else n = value;
      ++i;
    } else {
      std::fprintf(stderr, "usage: shared_update_benchmark [--reps N] [--elements N]\n");
      return 2;
    }
  }
  kolo::init();
  const int rank = kolo::rank(), size = kolo::size();
  if (kolo::local_size() != size) {
    if (rank == 0) std::fprintf(stderr, "shared_update_benchmark: needs every rank on one node\n");
    kolo::shutdown();
    return 2;
  }

  const int status = run(n, reps, rank, size);
  kolo::shutdown();
  return status;
}
