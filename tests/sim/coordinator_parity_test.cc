// The simulator's claim is that kolo's own coordinator decides inside it. This checks it
// against a real run: 2, 3 and 4 ranks of kolo's runtime (ranks as threads over the in-process
// transport, everything else as in production) submit the same gradients in the same
// order as the simulated ranks, step after step, in two bursts a step. Both write rank 0's
// timeline through kolo::Timeline; the fused groups read back from the two must be the
// same, collective for collective, and so must the steps that needed the coordinator's
// slow path (the first; every later one is negotiated from the response cache). The real
// run is the in-process one so that its ranks' submissions interleave as the simulated
// ranks' do (simulated time stands still while a rank submits); over MPI the same runtime
// runs with another transport only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "inprocess/job.h"
#include "kolo/kolo.h"
#include "sim/simulator.h"

namespace {

using Groups = std::vector<std::vector<std::string>>;

struct Tensor {
  std::string name;
  int64_t elements;
  double ready_fraction;  // the burst it belongs to
};

// Two bursts a step: sizes around the fusion threshold (256 KiB) and the smallest tensor
// that goes alone (256 KiB per rank: the unfused minimum), so that groups close for every reason at
// any size; layer4.conv, 300 KB per rank, always goes alone.
std::vector<Tensor> tensors(int size) {
  return {{"fc.weight", 40000, 0.25},  {"fc.bias", 10, 0.25},        {"layer4.conv", 75000 * size, 0.25},
          {"layer4.bn", 512, 0.25},    {"layer3.conv", 30000, 0.25}, {"layer3.bn", 256, 0.25},
          {"layer2.conv", 60000, 0.9}, {"layer2.bn", 128, 0.9},      {"layer1.conv", 9000, 0.9},
          {"conv1.weight", 2000, 0.9}};
}
constexpr int kSteps = 4;
constexpr int64_t kFusionThreshold = 256 * 1024;

// The collectives in a timeline, in the order they ran: each FUSED event's tensors, and
// each ALLREDUCE phase of a tensor that went alone.
Groups groups_in_timeline(const std::filesystem::path& file) {
  std::ifstream in(file);
  const nlohmann::json events = nlohmann::json::parse(in);
  std::map<int, std::string> lane_names;
  for (const auto& e : events)
    if (e.value("name", "") == "thread_name") lane_names[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
  std::vector<std::pair<double, std::vector<std::string>>> timed;
  for (const auto& e : events) {
    const std::string name = e.value("name", "");
    if (name == "FUSED") timed.emplace_back(e["ts"].get<double>(), e["args"]["tensors"].get<std::vector<std::string>>());
    if (name == "ALLREDUCE" && !e["args"].contains("fused_group"))
      timed.emplace_back(e["ts"].get<double>(), std::vector<std::string>{lane_names.at(e["tid"].get<int>())});
  }
  std::stable_sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Groups groups;
  for (auto& [ts, names] : timed) groups.push_back(std::move(names));
  return groups;
}

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("kolo-sim-parity-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace

TEST_CASE("the simulator's fusion groups and cache use equal a real run's for the same submissions, at 2, 3 and 4 ranks",
          "[sim][parity]") {
  const int size = GENERATE(2, 3, 4);
  INFO(size << " ranks");
  const std::vector<Tensor> kTensors = tensors(size);
  // ---- the real run ----
  const std::filesystem::path real_trace = scratch("real" + std::to_string(size) + ".json");
  kolo_inprocess::JobOptions options;
  options.size = size;
  options.config = kolo_inprocess::scenario_config();
  options.config.fusion_threshold_bytes = kFusionThreshold;
  kolo_inprocess::Job job(options);
  std::vector<int64_t> real_named_by_step(kSteps);
  job.run([&](kolo_scenarios::Peer& peer) {
    if (peer.rank() == 0) kolo::start_timeline(real_trace.string());
    // The background threads' first cycles are under way as the runtimes start: let them
    // settle into their idle sleep, as the simulated ranks are before their first step.
    peer.sleep(std::chrono::milliseconds(5));
    std::vector<std::vector<float>> buffers;
    for (const Tensor& t : kTensors) buffers.emplace_back(static_cast<std::size_t>(t.elements), 1.0f);
    for (int step = 0; step < kSteps; ++step) {
      const int64_t named_before = peer.named_negotiations().value_or(-1);
      for (double burst : {0.25, 0.9}) {
        std::vector<kolo::Handle> handles;
        for (std::size_t i = 0; i < kTensors.size(); ++i)
          if (kTensors[i].ready_fraction == burst)
            handles.push_back(kolo::allreduce_async(kTensors[i].name, kolo::view(buffers[i]), {kolo::ReduceOp::Average}));
        for (const kolo::Handle& h : handles) PEER_CHECK(peer, peer.wait(h).ok(), "tensor of burst " << burst);
      }
      if (peer.rank() == 0) real_named_by_step[step] = peer.named_negotiations().value_or(-1) - named_before;
    }
    if (peer.rank() == 0) kolo::stop_timeline();
  });
  const Groups real = groups_in_timeline(real_trace);

  // ---- the simulated run, same tensors and order ----
  kolo::sim::Workload workload;
  workload.profile.model = "parity";
  for (const Tensor& t : kTensors) workload.profile.gradients.push_back({t.name, t.elements, t.ready_fraction});
  workload.batch_per_rank = 1;
  workload.images_per_epoch = size * kSteps;
  workload.compute_s_per_image = 0.1;  // bursts 60 ms apart: each burst done before the next
  kolo::sim::Hardware cluster = kolo::sim::load_hardware(std::filesystem::path(KOLO_SIM_HARDWARE_DIR) / "this_machine.json");
  cluster.ranks_per_node = size;
  cluster.nodes = 1;
  kolo::sim::KoloSettings settings;
  settings.config.fusion_threshold_bytes = kFusionThreshold;
  const std::filesystem::path sim_trace = scratch("sim" + std::to_string(size) + ".json");
  kolo::Timeline timeline;
  timeline.open(sim_trace.string(), 0, kolo::Timeline::Clock::time_point());
  kolo::sim::RunOptions run_options;
  run_options.trace = &timeline;
  run_options.trace_steps = kSteps;
  const kolo::sim::SimResult simulated = kolo::sim::simulate(workload, cluster, settings, {}, run_options);
  timeline.close();
  const Groups from_sim = groups_in_timeline(sim_trace);

  REQUIRE(simulated.steps_simulated == kSteps);
  // Several groups a step, at least one fused and one alone: the comparison has teeth.
  CHECK(real.size() >= 3 * kSteps);
  CHECK(std::any_of(real.begin(), real.end(), [](const auto& g) { return g.size() > 1; }));
  CHECK(std::any_of(real.begin(), real.end(), [](const auto& g) { return g.size() == 1; }));
  CHECK(from_sim == real);
  Groups flattened;
  for (const Groups& step : simulated.groups_by_step) flattened.insert(flattened.end(), step.begin(), step.end());
  CHECK(flattened == real);
  // The first step negotiates both bursts by name, every later one by cache bit. The real
  // run may take a burst in two named rounds: a rank that has submitted part of the next
  // burst can meet the other rank's idle cycle (the threads' skew in real time), which
  // changes no group. So the steps that needed names are compared, not the rounds.
  CHECK(simulated.named_cycles_by_step == std::vector<int64_t>{2, 0, 0, 0});
  REQUIRE(real_named_by_step.size() == simulated.named_cycles_by_step.size());
  for (std::size_t step = 0; step < real_named_by_step.size(); ++step) {
    INFO("step " << step << ": " << real_named_by_step[step] << " named rounds in the real run");
    CHECK((real_named_by_step[step] > 0) == (simulated.named_cycles_by_step[step] > 0));
  }
  CHECK(real_named_by_step[0] >= 2);
  CHECK(simulated.named_tensors == static_cast<int64_t>(kTensors.size()));
  CHECK(simulated.cached_tensors == static_cast<int64_t>(kTensors.size()) * (kSteps - 1));
  std::filesystem::remove(real_trace);
  std::filesystem::remove(sim_trace);
}
