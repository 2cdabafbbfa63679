// sim/simulator.h: one epoch of data-parallel training on a simulated cluster, with kolo's
// own negotiation logic in the loop: the Coordinator (runtime/coordinator.h) validates the
// first sight of every tensor from every rank's request, the ResponseCache gives later
// steps their slots and bits, FusionPlan packs what is ready into buffers exactly as a
// rank's background thread does, and the Autotuner (KOLO_AUTOTUNE) picks its settings from
// the simulated throughput. Only time and data movement are modelled:
//
//   - each rank computes at the times a backward pass would (workload.h), scaled by a
//     seeded per-rank, per-step jitter and by stragglers;
//   - a node's loaders share its CPU cores: a rank's next batch is ready no sooner than
//     its share of the node's loading rate allows;
//   - the background thread's cycle (runtime.h) is followed step by step: an idle rank
//     sleeps a cycle time (or until its caller waits), a rank with work cycles at once, and
//     a burst of submissions is taken in one cycle (tensor_queue.cc's settling); every
//     cycle costs the AND-allreduce of its bits, and a cycle that needs names the gather
//     and broadcast of the slow path;
//   - each response costs its collective on the cluster's links (collective_cost.h), one
//     after the other, as the executor runs them.
//
// docs/simulator.md gives the equations and what is not modelled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config.h"
#include "runtime/timeline.h"
#include "sim/hardware.h"
#include "sim/workload.h"

namespace kolo::sim {

// What a user sets: the runtime's own Config (runtime/config.h: its defaults, and the KOLO_*
// settings the simulation reads from it: fusion threshold, allreduce chunk, cycle time, cache
// capacity, hierarchical allreduce, autotune), and fp16 compression, an option of each
// allreduce rather than a setting (half the bytes on the wire).
struct KoloSettings {
  Config config;
  bool fp16 = false;
};

// Differences between ranks, seeded: the same seed gives the same run.
struct Variation {
  double jitter = 0;              // relative standard deviation of a rank's step compute
  double straggler_fraction = 0;  // of the ranks, each step, chosen anew
  double straggler_slowdown = 1;  // their compute takes this many times longer
  uint64_t seed = 1;
};

struct RunOptions {
  int64_t max_steps = 0;  // > 0: simulate this many steps and scale the epoch from them
  // Rank 0's view of the first trace_steps steps, in kolo's timeline format; null: none.
  Timeline* trace = nullptr;
  int64_t trace_steps = 3;
};

struct SimResult {
  int ranks = 0, nodes = 0;
  int64_t steps_per_epoch = 0, steps_simulated = 0;
  double epoch_s = 0;
  double images_per_s = 0;
  double allreduce_s_per_step = 0;    // time the collectives ran, per step
  double bytes_per_step = 0;          // allreduced, per step (before fp16 compression)
  double negotiation_s_per_step = 0;  // the cycles' AND-allreduces and slow paths
  double comm_share = 0;              // allreduce time / epoch time
  double loader_wait_share = 0;       // of the time, ranks waited for their next batch
  int64_t cycles = 0;
  int64_t cached_tensors = 0;  // negotiated by bit (a response-cache hit)
  int64_t named_tensors = 0;   // negotiated by name (the coordinator's slow path)
  int64_t responses = 0;       // collectives run (fused groups and single tensors)
  std::string autotune_choice;  // "fusion threshold X bytes, pieces of Y bytes"
  // The collectives of the first steps, each as the names it carried, and the cycles
  // that needed the slow path, per step (what a real run's timeline shows).
  std::vector<std::vector<std::vector<std::string>>> groups_by_step;
  std::vector<int64_t> named_cycles_by_step;
};

// Throws std::invalid_argument for a setting that cannot run (no ranks, no gradients...).
SimResult simulate(const Workload& workload, const Hardware& cluster, const KoloSettings& settings,
                   const Variation& variation = {}, const RunOptions& options = {});

// How many ranks share each device of a node (at least 1): they compute that many times
// slower, and so do their CPUs' part of every message (latency, shared-memory copies);
// the bytes on a wire between nodes are not slowed.
double device_sharing(const Hardware& cluster);

// Ranks that share a node's devices take turns on them, and one that has finished its
// step's compute gives its turn to the others while it waits for their gradients (kolo's
// background thread yields with mpi_yield_when_idle and sleeps between control polls):
// processor sharing, each of the a ranks still computing getting min(1, devices / a) of
// a device. `work`: each rank's compute as a factor of the mean (its jitter). Returns when
// each finishes, as a factor of the time the mean work takes at full sharing (work x
// ranks / devices): all 1 for equal work. So a rank slower than the rest is helped by the
// devices the others leave, and the step waits for much less than its slowest draw.
std::vector<double> shared_device_finish(const std::vector<double>& work, int devices);

// How many times longer a rank computes because every device of its node computes
// (Hardware::compute_slowdown_when_busy; 1 while a device is idle or the job has one rank).
double busy_node_slowdown(const Hardware& cluster);

// The time one allreduce of `bytes` takes on the whole cluster with these settings
// (exported for tests and for the what-if report). piece_bytes: the backend's pipeline
// piece (KOLO_ALLREDUCE_CHUNK_BYTES); 0: the settings' (1 MiB a rank by default).
double allreduce_seconds(double bytes, const Hardware& cluster, const KoloSettings& settings, double piece_bytes = 0);

}  // namespace kolo::sim
