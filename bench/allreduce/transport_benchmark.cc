// One step of the ResNet-50 gradient set (161 tensors, 25.6 M float32) through kolo's
// public API only, on whatever transport the job gives it: MPI under mpirun, Gloo under
// kolorun --gloo. gloo_vs_mpi.py runs it both ways, alternately, and prints the ratio.
//
//   mpirun -np 2 transport_benchmark --reps 10
//   kolorun --gloo -np 2 transport_benchmark --reps 10
//
// Rank 0 prints one line: KOLO_TRANSPORT_BENCH {"transport": ..., "median_ms": ..., ...}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../cpu_model.h"
#include "kolo/kolo.h"
#include "resnet50_gradients.h"

int main(int argc, char** argv) {
  int reps = 10;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  kolo::init();
  const std::vector<GradientTensor> tensors = resnet50_gradients_backprop_order();
  std::vector<std::vector<float>> data;
  for (const GradientTensor& t : tensors) data.emplace_back(t.elements(), 1.0f);
  std::vector<kolo::Handle> handles(tensors.size());
  std::vector<double> times;
  for (int rep = -3; rep < reps; ++rep) {  // three warm-up steps
    kolo::barrier();
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < tensors.size(); ++i)
      handles[i] = kolo::allreduce_async("grad/" + tensors[i].name, kolo::view(data[i], tensors[i].shape),
                                         {.op = kolo::ReduceOp::Average});
    for (kolo::Handle& h : handles) h.wait().throw_if_error();
    if (rep >= 0) times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  // Averages of ones stay ones: a wrong sum would show here.
  const bool exact = std::all_of(data.begin(), data.end(), [](const std::vector<float>& d) {
    return std::all_of(d.begin(), d.end(), [](float x) { return x == 1.0f; });
  });
  std::sort(times.begin(), times.end());
  if (kolo::rank() == 0)
    std::printf("KOLO_TRANSPORT_BENCH {\"transport\": \"%s\", \"np\": %d, \"reps\": %d, \"median_ms\": %.2f, "
                "\"min_ms\": %.2f, \"exact\": %s, \"cpu\": \"%s\"}\n",
                kolo::gloo_enabled() ? "gloo" : "mpi", kolo::size(), reps, times[times.size() / 2], times.front(),
                exact ? "true" : "false", kolo_bench::cpu_model().c_str());
  kolo::shutdown();
  return exact ? 0 : 1;
}
