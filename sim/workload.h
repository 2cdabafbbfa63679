// sim/workload.h: what one rank's training step asks of kolo, as the simulator replays it:
// the gradients in the order backward produces them, each with the point of the backward
// pass at which it is ready, and the step's compute time split into forward, backward and
// the optimizer's update. Read from a model profile, of one of two kinds:
//   - from FLOPs (sim/profiles/<model>.json, make_profiles.py): "layers", each with its
//     parameters and forward FLOPs; the time comes from a measured one-device throughput
//     (a published table's 1-GPU time, this machine's calibration) or the device's FLOP/s;
//   - measured (profile_from_timeline.py, from a kolo timeline of a real run):
//     "gradients", each with its size and ready_fraction, and "compute_s_per_image".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kolo::sim {

struct Gradient {
  std::string name;
  int64_t elements = 0;
  double ready_fraction = 0;  // of the backward pass done when this gradient is ready, (0, 1]
};

struct ModelProfile {
  std::string model;
  std::string source;
  int64_t parameters = 0;
  double forward_flops_per_image = 0;  // 0 in a profile measured from a timeline
  double measured_s_per_image = 0;     // a measured profile's compute time per image; 0: none
  std::vector<Gradient> gradients;  // in the order backward makes them ready
};

// A bad profile: the message names the file and the field.
ModelProfile parse_profile(const nlohmann::json& document, const std::string& origin);
ModelProfile load_profile(const std::filesystem::path& file);

struct Workload {
  ModelProfile profile;
  int batch_per_rank = 32;
  int64_t images_per_epoch = 0;  // all ranks together
  // One device's compute time per image, forward + backward + update (s).
  double compute_s_per_image = 0;
  // Shares of that time; backward takes twice the forward's FLOPs.
  double forward_share = 1.0 / 3.0;
  double optimizer_share = 0.0;
  // CPU seconds that loading and augmenting one image costs a loader; 0: no loader
  // (synthetic data, or data already in memory).
  double loader_cpu_s_per_image = 0;
  int bytes_per_element = 4;  // float32 gradients

  double step_compute_s() const { return compute_s_per_image * batch_per_rank; }
  int64_t steps_per_epoch(int ranks) const;  // whole steps, at least 1
};

// Compute time per image from FLOPs: 3 x forward FLOPs (backward is twice the forward) at
// `device_flops` x `utilization`.
double compute_s_per_image_from_flops(const ModelProfile& profile, double device_flops, double utilization);

}  // namespace kolo::sim
