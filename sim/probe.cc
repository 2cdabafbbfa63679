// kolo-sim-probe: times kolo's allreduce of one tensor at several sizes on this job's ranks,
// for `kolo-sim fit-link` (sim/calibrate.py runs it). Rank 0 prints "bytes,ranks,seconds"
// lines: the median of --reps timed allreduces after 3 untimed ones. With --idle-ms, every
// allreduce follows that long with the link idle (a shaper's bucket refills), not the last.
//
// With --under-compute, it measures instead what communication and compute cost each other
// on ranks that compute on every core: a thread keeps allreduces of --bytes in flight
// for a second while the main thread sleeps, then for a second while it runs a compute
// loop (also timed alone). Rank 0 prints, as medians over the ranks,
// "compute_loss,<share>" (1 − the compute rate beside the allreduces / alone) and
// "comm_slowdown,<x>" (the allreduce rate idle / beside the compute): a hardware file's
// "comm_slowdown_under_compute".
//
// With --start-delay, it measures how late a collective starts when it is submitted while
// every core computes (its background thread must first get a core): each step submits an
// allreduce of --bytes and then computes for 20 ms in slices of about 20 us, noting after
// each slice whether the allreduce is done; the same steps with the rank idle (sleeping in
// 20 us slices) are the baseline. Rank 0 prints, as medians over the ranks of each rank's
// median over steps, "start_idle_ms,<t>", "start_computing_ms,<t>" and
// "start_delay_ms,<computing − idle>": a hardware file's "comm_start_delay_ms".
//
// With --shared-steps, it measures what a step costs when its ranks' compute differs: every
// rank computes a seeded draw of work (1 + cv·z loop units, the same draws known to all)
// and then waits for the others in an allreduce, as training waits for its gradients; in
// alternating blocks the same with equal work. Rank 0 prints the measured ratio of the
// mean step (jittered / equal) and what kolo-sim's two candidate models predict from the
// same draws: "shared" (the ranks of this host take turns on its cores,
// sim::shared_device_finish) and "slowest" (each rank waits for the slowest draw).
//
//   kolorun -np 2 build/sim/kolo-sim-probe [--reps 20] [--sizes 4096,65536,1048576,16777216]
//   kolorun -np 2 build/sim/kolo-sim-probe --under-compute
//   kolorun -np 2 build/sim/kolo-sim-probe --start-delay [--bytes 4096]
//   kolorun -np 4 build/sim/kolo-sim-probe --shared-steps [--cv 0.2] [--steps 400]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kolo/kolo.h"
#include "sim/simulator.h"

namespace {

// `iterations` of a floating-point loop the compiler cannot drop: the probes' CPU work.
void spin(int64_t iterations) {
  volatile double sink = 0;
  double x = 1.0;
  for (int64_t i = 0; i < iterations; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
  (void)sink;
}

// Iterations per second of spin(), over `seconds`.
double compute_rate(double seconds) {
  int64_t iterations = 0;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    spin(4096);
    iterations += 4096;
  }
  return double(iterations) / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Allreduces of `bytes` completed per second by a thread that keeps them in flight, while
// the main thread computes or not; every rank runs the same number (they stop together).
double allreduces_per_s(std::vector<float>& buffer, double seconds, bool compute, double* compute_rate_out) {
  kolo::barrier();
  std::atomic<bool> running{true};
  int64_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  std::thread communicate([&] {
    for (bool more = true; more; ++done) {
      kolo::allreduce("probe.under_compute", kolo::view(buffer), {kolo::ReduceOp::Sum});
      std::vector<int32_t> go{running.load() ? 1 : 0};
      kolo::allreduce("probe.under_compute.more", kolo::view(go), {kolo::ReduceOp::Min});
      more = go[0] == 1;
    }
  });
  if (compute) *compute_rate_out = compute_rate(seconds);
  else std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  running = false;
  communicate.join();
  return double(done) / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_of(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

double median_over_ranks(const std::string& name, double value) {
  std::vector<double> all;
  for (const std::string& v : kolo::allgather_bytes(name, std::to_string(value))) all.push_back(std::stod(v));
  return median_of(std::move(all));
}

// What communication and compute cost each other on a rank whose cores all compute:
// (compute lost per second of communication in flight, how many times longer an allreduce
// takes while the rank computes).
std::pair<double, double> under_compute(int64_t bytes, double seconds) {
  std::vector<float> buffer(static_cast<std::size_t>(bytes / 4), 1.0f);
  kolo::barrier();
  const double alone = compute_rate(seconds);
  double busy = 0;
  const double idle_rate = allreduces_per_s(buffer, seconds, false, nullptr);
  const double busy_rate = allreduces_per_s(buffer, seconds, true, &busy);
  return {median_over_ranks("probe.compute_loss", 1.0 - busy / alone),
          median_over_ranks("probe.comm_slowdown", idle_rate / busy_rate)};
}

// --start-delay: per step, how long after its submission an allreduce of `bytes` is done
// while the rank computes (or sleeps) in slices; the median over `steps` steps, in seconds.
double completion_after_submit(int64_t bytes, bool computing, double step_s, int steps) {
  std::vector<float> buffer(static_cast<std::size_t>(bytes / 4), 1.0f);
  const auto slice_iterations = computing ? static_cast<int64_t>(compute_rate(0.2) * 20e-6) : 0;
  std::vector<double> done_after;
  for (int s = 0; s < steps; ++s) {
    kolo::barrier();
    const auto start = std::chrono::steady_clock::now();
    const kolo::Handle handle = kolo::allreduce_async("probe.start_delay", kolo::view(buffer));
    double done = -1, elapsed = 0;
    while (elapsed < step_s && !(done >= 0 && !computing)) {
      if (computing) spin(slice_iterations);
      else std::this_thread::sleep_for(std::chrono::microseconds(20));
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (done < 0 && handle.ready()) done = elapsed;
    }
    handle.wait();  // a rank that computes on keeps computing; one not done by the end waits
    if (done < 0) done = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done_after.push_back(done);
  }
  return median_of(std::move(done_after));
}

// --shared-steps: steps of seeded unequal work, each ended by an allreduce, against steps of
// equal work, in alternating blocks of 20. Returns rank 0's line of figures.
std::string shared_steps(int steps, double cv, double unit_seconds) {
  const int size = kolo::size(), rank = kolo::rank();
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Loop iterations per unit: rank 0's rate alone, for every rank.
  std::vector<int64_t> iterations{rank == 0 ? static_cast<int64_t>(compute_rate(0.3) * unit_seconds) : 0};
  kolo::broadcast("probe.shared.iterations", kolo::view(iterations), 0);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::vector<int32_t> token{1};
  double jittered_s = 0, equal_s = 0, shared_model = 0, slowest_model = 0;
  int jittered_steps = 0, equal_steps = 0;
  constexpr int kBlock = 20;
  for (int s = 0; s < 2 * steps; ++s) {
    const bool jittered = (s / kBlock) % 2 == 1;
    std::vector<double> work(size, 1.0);
    if (jittered)
      for (double& w : work) w = std::max(0.2, 1.0 + cv * normal(rng));
    const auto start = std::chrono::steady_clock::now();
    spin(static_cast<int64_t>(work[rank] * double(iterations[0])));  // the same CPU work however cores are shared
    kolo::allreduce("probe.shared.step", kolo::view(token), {kolo::ReduceOp::Sum});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s < 2 * kBlock) continue;  // the first pair of blocks warms up
    (jittered ? jittered_s : equal_s) += seconds;
    ++(jittered ? jittered_steps : equal_steps);
    if (jittered) {
      const std::vector<double> finish = kolo::sim::shared_device_finish(work, cores);
      shared_model += *std::max_element(finish.begin(), finish.end());
      slowest_model += *std::max_element(work.begin(), work.end());
    }
  }
  const double equal_step = equal_s / equal_steps;
  char line[256];
  std::snprintf(line, sizeof line,
                "ranks,%d\ncores,%d\ncv,%.3f\nmeasured,%.4f\nshared,%.4f\nslowest,%.4f\nequal_step_s,%.5f\n", size,
                cores, cv, jittered_s / jittered_steps / equal_step, shared_model / jittered_steps,
                slowest_model / jittered_steps, equal_step);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kolo-sim-probe: kolo's allreduce time by size, for kolo-sim fit-link"};
  int reps = 20;
  std::vector<int64_t> sizes = {4096, 65536, 1 << 20, 16 << 20};
  app.add_option("--reps", reps, "timed allreduces per size")->capture_default_str()->check(CLI::Range(1, 10000));
  double idle_ms = 0;
  app.add_option("--idle-ms", idle_ms, "the ranks sleep this long (after a barrier) before each timed allreduce")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--sizes", sizes, "message sizes in bytes (multiples of 4)")->delimiter(',')->check(CLI::Range(int64_t{4}, int64_t{1} << 31));
  bool measure_under_compute = false;
  int64_t bytes = 0;  // 0: each mode's own default
  app.add_flag("--under-compute", measure_under_compute, "measure what allreduces and compute cost each other (see above)");
  app.add_option("--bytes", bytes, "the allreduces' size for --under-compute (default 1 MiB) and --start-delay (4 KiB)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 30));
  bool measure_start_delay = false;
  app.add_flag("--start-delay", measure_start_delay, "measure how late a collective starts while every core computes (see above)");
  bool measure_shared_steps = false;
  int steps = 400;
  double cv = 0.2;
  app.add_flag("--shared-steps", measure_shared_steps, "measure a step of unequal work against the two models (see above)");
  app.add_option("--steps", steps, "--shared-steps: steps of each kind, jittered and equal")
      ->capture_default_str()
      ->check(CLI::Range(60, 100000));
  app.add_option("--cv", cv, "--shared-steps: the work's relative standard deviation")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.5));
  CLI11_PARSE(app, argc, argv);

  kolo::init();
  if (measure_shared_steps) {
    const std::string line = shared_steps(steps, cv, 0.02);
    if (kolo::rank() == 0) std::fputs(line.c_str(), stdout);
    kolo::shutdown();
    return 0;
  }
  if (measure_start_delay) {
    constexpr double kStepSeconds = 0.02;
    constexpr int kSteps = 60;
    const int64_t size = bytes > 0 ? bytes : 4096;
    const double idle = median_over_ranks("probe.start_idle", completion_after_submit(size, false, kStepSeconds, kSteps));
    const double computing =
        median_over_ranks("probe.start_computing", completion_after_submit(size, true, kStepSeconds, kSteps));
    if (kolo::rank() == 0)
      std::printf("start_idle_ms,%.4f\nstart_computing_ms,%.4f\nstart_delay_ms,%.4f\n", 1e3 * idle, 1e3 * computing,
                  1e3 * std::max(0.0, computing - idle));
    kolo::shutdown();
    return 0;
  }
  if (measure_under_compute) {
    const auto [compute_loss, comm_slowdown] = under_compute(bytes > 0 ? bytes : int64_t{1} << 20, 1.0);
    if (kolo::rank() == 0) std::printf("compute_loss,%.4f\ncomm_slowdown,%.4f\n", compute_loss, comm_slowdown);
    kolo::shutdown();
    return 0;
  }
  const int rank = kolo::rank(), size = kolo::size();
  if (rank == 0) std::printf("bytes,ranks,seconds\n");
  for (int64_t bytes : sizes) {
    std::vector<float> buffer(static_cast<std::size_t>(bytes / 4), 1.0f);
    std::vector<double> times;
    for (int i = 0; i < reps + 3; ++i) {
      if (idle_ms > 0) {
        kolo::barrier();
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(idle_ms));
      }
      const auto start = std::chrono::steady_clock::now();
      kolo::allreduce("probe." + std::to_string(bytes), kolo::view(buffer), {kolo::ReduceOp::Sum});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i >= 3) times.push_back(seconds);
    }
    if (rank == 0) std::printf("%lld,%d,%.9g\n", static_cast<long long>(bytes), size, median_of(std::move(times)));
  }
  kolo::shutdown();
  return 0;
}
