// The simulated epoch against closed forms computed here: one large gradient's step is
// its compute, one negotiation and one ring allreduce; a loader-bound node runs at its
// loaders' rate; the seed makes runs repeatable; the model profiles hold the nets' real
// parameter counts.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/collective_cost.h"
#include "sim/simulator.h"

using namespace kolo::sim;

namespace {

// A flat cluster of `nodes` x `per_node` ranks with round numbers for links.
Hardware cluster(int per_node, int nodes) {
  Hardware hw;
  hw.name = "test";
  hw.ranks_per_node = per_node;
  hw.nodes = nodes;
  hw.intra_node = {LinkKind::nvlink, 2e-6, 1.0 / 50e9};
  hw.inter_node = {LinkKind::infiniband, 5e-6, 1.0 / 10e9};
  hw.devices_per_node = per_node;
  hw.loader_cores_per_node = 8;
  hw.device_flops = 1e13;
  return hw;
}

Workload one_gradient(int64_t elements, double ready_fraction = 1.0) {
  Workload w;
  w.profile.model = "one";
  w.profile.gradients = {{"w", elements, ready_fraction}};
  w.batch_per_rank = 10;
  w.compute_s_per_image = 0.01;  // a 100 ms step
  return w;
}

}  // namespace

TEST_CASE("one large gradient ready at the end of backward: step = compute + negotiation + 2(p-1)a + 2(p-1)/p N b",
          "[sim]") {
  const int64_t elements = 50'000'000;  // 200 MB: the ring is the cheaper algorithm
  const double bytes = 4.0 * elements;
  for (auto [per_node, nodes] : {std::pair{4, 1}, std::pair{4, 8}, std::pair{8, 128}}) {
    const Hardware hw = cluster(per_node, nodes);
    const int p = hw.ranks();
    Workload w = one_gradient(elements);
    w.images_per_epoch = int64_t{10} * p;  // one step
    const SimResult r = simulate(w, hw, KoloSettings{});
    const Link& link = nodes > 1 ? hw.inter_node : hw.intra_node;
    const double ring = 2.0 * (p - 1) * link.alpha_s + 2.0 * (p - 1) / p * bytes * link.beta_s_per_byte;
    // The AND-allreduce of [flags | setting | 16 words of bits] and their complements,
    // by recursive doubling: log2 p exchanges of 288 bytes.
    const double steps = std::log2(double(p));
    const double negotiation = steps * (link.alpha_s + 288 * link.beta_s_per_byte);
    // The first sight of a name: the slow path gathers each rank's request (96 bytes) at
    // rank 0 and broadcasts the response along a binomial tree.
    const double slow_path = steps * link.alpha_s + (p - 1) * 96 * link.beta_s_per_byte +
                             steps * (link.alpha_s + 96 * link.beta_s_per_byte);
    INFO(p << " ranks on " << nodes << " nodes");
    CHECK(allreduce_seconds(bytes, hw, KoloSettings{}) == Approx(ring).epsilon(1e-12));
    CHECK(r.epoch_s == Approx(0.1 + negotiation + slow_path + ring).epsilon(1e-9));
    CHECK(r.allreduce_s_per_step == Approx(ring).epsilon(1e-12));
    CHECK(r.responses == 1);
    CHECK(r.named_tensors == 1);
  }
}

TEST_CASE("a cluster on kolo's MPI backend: 249 KB at np 4 over 2 nodes is Open MPI's Rabenseifner, 1 MiB kolo's ring",
          "[sim]") {
  Hardware hw = cluster(2, 2);
  hw.collectives = Collectives::mpi;
  const LinkCost inter = link_cost(hw.inter_node);
  CHECK(allreduce_seconds(249e3, hw, KoloSettings{}) == Approx(rabenseifner_traffic(4, 249e3, hw).seconds(inter)));
  CHECK(allreduce_seconds(1 << 20, hw, KoloSettings{}) ==
        Approx(flat_traffic(FlatAlgorithm::ring, 4, 1 << 20, hw).seconds(inter)));
  // The piece is KOLO_ALLREDUCE_CHUNK_BYTES (by default 1 MiB a rank: the whole 1 MiB
  // here); pieces of 128 KiB hold 32 KiB a rank, and go to MPI_Allreduce one by one.
  KoloSettings small_pieces;
  small_pieces.config.allreduce_chunk_bytes = 128 * 1024;
  CHECK(allreduce_seconds(1 << 20, hw, small_pieces) ==
        Approx(8 * rabenseifner_traffic(4, 128 * 1024, hw).seconds(inter)));
}

TEST_CASE("fp16 halves the bytes on the wire, hierarchical runs the three phases across nodes", "[sim]") {
  const Hardware hw = cluster(4, 8);
  KoloSettings fp16;
  fp16.fp16 = true;
  CHECK(allreduce_seconds(2e8, hw, fp16) == Approx(allreduce_seconds(1e8, hw, KoloSettings{})).epsilon(1e-12));
  KoloSettings hierarchical;
  hierarchical.config.hierarchical_allreduce = true;
  const double expected =
      hierarchical_allreduce(4, 8, 1e8, link_cost(hw.intra_node), link_cost(hw.inter_node)).total();
  CHECK(allreduce_seconds(1e8, hw, hierarchical) == Approx(expected).epsilon(1e-12));
  CHECK(allreduce_seconds(1e8, cluster(4, 1), hierarchical) == allreduce_seconds(1e8, cluster(4, 1), KoloSettings{}));
}

TEST_CASE("a node whose loaders are slower than its devices trains at the loaders' rate", "[sim]") {
  const Hardware hw = cluster(4, 2);
  Workload w = one_gradient(1000, 0.5);
  w.compute_s_per_image = 0.001;  // 1000 images/s a rank
  w.images_per_epoch = 10 * 8 * 200;
  w.loader_cpu_s_per_image = 0.01;  // 8 cores: 800 images/s a node, 200 a rank
  const SimResult r = simulate(w, hw, KoloSettings{});
  CHECK(r.images_per_s == Approx(2 * 800.0).epsilon(0.01));
  CHECK(r.loader_wait_share > 0.7);
  w.loader_cpu_s_per_image = 0.001;  // now 8000 images/s a node: the devices' rate rules
  CHECK(simulate(w, hw, KoloSettings{}).images_per_s == Approx(8 * 1000.0).epsilon(0.02));
}

TEST_CASE("jitter and stragglers slow the step to its slowest rank, the same for the same seed", "[sim]") {
  const Hardware hw = cluster(4, 4);
  Workload w = one_gradient(1000);
  w.images_per_epoch = 10 * 16 * 50;
  const double steady = simulate(w, hw, KoloSettings{}).epoch_s;
  const Variation jitter{0.05, 0, 1, 7};
  const SimResult a = simulate(w, hw, KoloSettings{}, jitter);
  CHECK(a.epoch_s == simulate(w, hw, KoloSettings{}, jitter).epoch_s);
  CHECK(a.epoch_s != simulate(w, hw, KoloSettings{}, Variation{0.05, 0, 1, 8}).epoch_s);
  // The expected maximum of 16 normal draws is about 1.77 standard deviations.
  CHECK(a.epoch_s / steady == Approx(1 + 0.05 * 1.77).epsilon(0.02));
  const SimResult slow = simulate(w, hw, KoloSettings{}, Variation{0, 1.0, 3.0, 1});
  CHECK(slow.epoch_s == Approx(3 * steady).epsilon(0.01));
}

TEST_CASE("the shipped profiles hold the nets' parameters, gradients in backward order", "[sim]") {
  const std::filesystem::path dir = std::filesystem::path(KOLO_SIM_HARDWARE_DIR).parent_path() / "profiles";
  // torchvision's parameter counts, as its documentation lists them.
  for (auto [model, parameters] : {std::pair{"resnet18", 11'689'512}, std::pair{"resnet50", 25'557'032},
                                   std::pair{"vgg16", 138'357'544}, std::pair{"mnist_convnet", 62'346}}) {
    const ModelProfile profile = load_profile(dir / (std::string(model) + ".json"));
    INFO(model);
    CHECK(profile.parameters == parameters);
    int64_t sum = 0;
    for (std::size_t i = 0; i < profile.gradients.size(); ++i) {
      sum += profile.gradients[i].elements;
      if (i > 0) CHECK(profile.gradients[i].ready_fraction >= profile.gradients[i - 1].ready_fraction);
    }
    CHECK(sum == parameters);
    CHECK(profile.gradients.back().ready_fraction == 1.0);
  }
  const ModelProfile resnet = load_profile(dir / "resnet18.json");
  // The last layer's gradients come first.
  CHECK(resnet.gradients[0].name == "fc.weight");
  CHECK(resnet.gradients[1].name == "fc.bias");
}

TEST_CASE("a bad profile names the file and the field", "[sim]") {
  CHECK_THROWS_WITH(parse_profile(nlohmann::json::parse(R"({"model":"m","source":"s","layers":[]})"), "p.json"),
                    "p.json: field 'layers' must be a non-empty array");
  CHECK_THROWS_WITH(
      parse_profile(nlohmann::json::parse(
                        R"({"model":"m","source":"s","layers":[{"forward_flops":1,"params":[{"name":"w","elements":0}]}]})"),
                    "p.json"),
      "p.json: field 'layers[0].params[0].elements' must be a whole number of at least 1, got 0");
  CHECK_THROWS_WITH(load_profile("/nonexistent/profile.json"), "/nonexistent/profile.json: cannot open the model profile");
}

TEST_CASE("a response cache smaller than the step's tensors: evicted slots go by name, every tensor runs once a step",
          "[sim]") {
  const ModelProfile resnet =
      load_profile(std::filesystem::path(KOLO_SIM_HARDWARE_DIR).parent_path() / "profiles" / "resnet18.json");
  Workload w;
  w.profile = resnet;
  w.batch_per_rank = 32;
  w.images_per_epoch = 32 * 4 * 5;
  w.compute_s_per_image = 0.003;
  for (int capacity : {0, 1, 10, 61, 62, 1024}) {
    KoloSettings settings;
    settings.config.cache_capacity = capacity;
    const SimResult r = simulate(w, cluster(4, 1), settings);
    INFO("capacity " << capacity);
    CHECK(r.cached_tensors + r.named_tensors == 5 * static_cast<int64_t>(resnet.gradients.size()));
    int64_t in_groups = 0;
    for (const auto& step : r.groups_by_step)
      for (const auto& group : step) in_groups += static_cast<int64_t>(group.size());
    CHECK(in_groups == 5 * static_cast<int64_t>(resnet.gradients.size()));
    if (capacity >= 62) CHECK(r.named_tensors == static_cast<int64_t>(resnet.gradients.size()));
    if (capacity == 0) CHECK(r.cached_tensors == 0);
  }
}

TEST_CASE("a measured profile gives its gradients and time per image, its errors name the field", "[sim]") {
  const ModelProfile measured = parse_profile(nlohmann::json::parse(R"({"model":"m","source":"timeline",
      "compute_s_per_image":0.002,"gradients":[{"name":"fc","elements":10,"ready_fraction":0.3},
      {"name":"conv","elements":800,"ready_fraction":1}]})"), "m.json");
  CHECK(measured.measured_s_per_image == 0.002);
  CHECK(measured.parameters == 810);
  REQUIRE(measured.gradients.size() == 2);
  CHECK(measured.gradients[0].ready_fraction == 0.3);
  CHECK_THROWS_WITH(compute_s_per_image_from_flops(measured, 1e12, 0.5),
                    "the profile of m has no FLOPs: give its measured time per image (--one-device-images-per-s)");
  CHECK_THROWS_WITH(parse_profile(nlohmann::json::parse(R"({"model":"m","source":"s","compute_s_per_image":1,
      "gradients":[{"name":"a","elements":1,"ready_fraction":0.5},{"name":"b","elements":1,"ready_fraction":0.4}]})"),
                                  "m.json"),
                    "m.json: field 'gradients[1].ready_fraction' must not be below the previous gradient's (backward order)");
}

TEST_CASE("ranks sharing a node's devices slow the latency and the shared-memory copies, not the wire", "[sim]") {
  Hardware one_node = cluster(4, 1);
  one_node.devices_per_node = 2;  // 2 ranks a device
  const double n = 1e8;
  const Link& intra = one_node.intra_node;
  CHECK(allreduce_seconds(n, one_node, KoloSettings{}) ==
        Approx(2.0 * 3 * 2 * intra.alpha_s + 2.0 * 3 / 4 * n * 2 * intra.beta_s_per_byte).epsilon(1e-12));
  Hardware two_nodes = cluster(4, 2);
  two_nodes.devices_per_node = 2;
  const Link& inter = two_nodes.inter_node;
  CHECK(allreduce_seconds(n, two_nodes, KoloSettings{}) ==
        Approx(2.0 * 7 * 2 * inter.alpha_s + 2.0 * 7 / 8 * n * inter.beta_s_per_byte).epsilon(1e-12));
}

namespace {

// E[max of p independent standard normal draws]: the integral of x·p·φ(x)·Φ(x)^(p-1).
double expected_max_of_normals(int p) {
  double total = 0;
  const double h = 1e-4;
  for (double x = -10; x < 10; x += h) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    total += x * p * phi * std::pow(cdf, p - 1) * h;
  }
  return total;
}

// Links that cost (almost) nothing: the step is the compute alone.
Hardware free_links(int per_node, int nodes) {
  Hardware hw = cluster(per_node, nodes);
  hw.intra_node = {LinkKind::nvlink, 0, 1e-18};
  hw.inter_node = {LinkKind::infiniband, 0, 1e-18};
  return hw;
}

}  // namespace

TEST_CASE("with jitter cv, a step waits for the slowest of p ranks: compute x (1 + cv e(p)), e(p) = E[max of p normals]",
          "[sim]") {
  CHECK(expected_max_of_normals(2) == Approx(1 / std::sqrt(M_PI)).epsilon(1e-4));  // a closed form at p = 2
  for (auto [per_node, nodes] : {std::pair{2, 1}, std::pair{4, 4}, std::pair{4, 64}}) {
    const Hardware hw = free_links(per_node, nodes);
    const int p = hw.ranks();
    Workload w = one_gradient(1000);
    w.images_per_epoch = int64_t{10} * p * 2000;  // 2,000 steps: the mean within 0.3 %
    const double cv = 0.05;
    const SimResult r = simulate(w, hw, KoloSettings{}, Variation{cv, 0, 1, 3});
    INFO(p << " ranks");
    CHECK(r.epoch_s / (2000 * 0.1) == Approx(1 + cv * expected_max_of_normals(p)).epsilon(0.004));
  }
}

TEST_CASE("a link achieves its achieved_fraction of the line rate: the ring costs 2(p-1)a + 2(p-1)/p N b / f", "[sim]") {
  Hardware hw = cluster(4, 8);
  hw.inter_node.achieved_fraction = 0.8;
  const int p = hw.ranks();
  const double bytes = 2e8;
  const double ring = 2.0 * (p - 1) * hw.inter_node.alpha_s + 2.0 * (p - 1) / p * bytes * hw.inter_node.beta_s_per_byte / 0.8;
  CHECK(allreduce_seconds(bytes, hw, KoloSettings{}) == Approx(ring).epsilon(1e-12));
  hw.inter_node.achieved_fraction = 0;  // unresolved: refused, not taken as the line rate
  CHECK_THROWS_AS(allreduce_seconds(bytes, hw, KoloSettings{}), std::invalid_argument);
}

TEST_CASE("where communication waits for compute, a gradient ready mid-backward adds its allreduce to the step", "[sim]") {
  Hardware hw = cluster(4, 1);
  Workload w = one_gradient(10'000'000, 0.5);  // 40 MB, ready halfway through backward
  w.images_per_epoch = 10 * 4 * 20;
  const double allreduce = allreduce_seconds(4e7, hw, KoloSettings{});
  REQUIRE(allreduce < 0.03);  // fits in the 33 ms of backward left
  const SimResult overlapped = simulate(w, hw, KoloSettings{});
  hw.comm_overlaps_compute = false;
  const SimResult serial = simulate(w, hw, KoloSettings{});
  CHECK(overlapped.epoch_s / 20 == Approx(0.1).epsilon(1e-6));  // hidden behind the backward pass
  CHECK(serial.epoch_s / 20 == Approx(0.1 + allreduce).epsilon(1e-6));
}

TEST_CASE("a token bucket sends its burst at the link's speed and the rest at the shaped rate", "[sim]") {
  Hardware hw = cluster(1, 2);  // 2 ranks on 2 nodes: recursive doubling, 1 step of the whole buffer
  hw.inter_node = {LinkKind::ethernet, 20e-6, 1.0 / 12.5e6};  // 100 Mbit/s
  hw.inter_node.burst_bytes = 131072;
  hw.inter_node.unshaped_beta_s_per_byte = 1.0 / 3e9;
  Workload w = one_gradient(250'000);  // 1 MB
  w.images_per_epoch = 10 * 2;         // one step: the bucket starts full
  const SimResult r = simulate(w, hw, KoloSettings{});
  CHECK(r.allreduce_s_per_step == Approx(20e-6 + 131072 / 3e9 + (1e6 - 131072) / 12.5e6).epsilon(1e-9));
  Workload small = one_gradient(25'000);  // 100 KB: all of it in the burst
  small.images_per_epoch = 10 * 2;
  CHECK(simulate(small, hw, KoloSettings{}).allreduce_s_per_step == Approx(20e-6 + 1e5 / 3e9).epsilon(1e-9));
  hw.inter_node.burst_bytes = 0;
  CHECK(simulate(w, hw, KoloSettings{}).allreduce_s_per_step == Approx(20e-6 + 1e6 / 12.5e6).epsilon(1e-9));
}

TEST_CASE("a node whose every device computes is slower by its measured factor, one rank or an idle device is not",
          "[sim]") {
  Hardware hw = free_links(2, 1);
  Workload w = one_gradient(1000);
  w.images_per_epoch = 10 * 2 * 50;
  const double plain = simulate(w, hw, KoloSettings{}).epoch_s;
  hw.compute_slowdown_when_busy = 1.25;
  // The step is its compute and a cycle's sub-millisecond overheads: within 1 % of 1.25 x.
  CHECK(simulate(w, hw, KoloSettings{}).epoch_s / plain == Approx(1.25).epsilon(0.01));
  hw.ranks_per_node = 1;  // one rank of two devices: nothing shared
  hw.devices_per_node = 2;
  w.images_per_epoch = 10 * 50;
  const double alone = simulate(w, hw, KoloSettings{}).epoch_s;
  hw.compute_slowdown_when_busy = 1;
  CHECK(alone == simulate(w, hw, KoloSettings{}).epoch_s);
}

namespace {

// E[X_(k)], the k-th smallest of n independent standard normal draws:
// the integral of x · n!/((k-1)!(n-k)!) · φ(x) · Φ(x)^(k-1) · (1 - Φ(x))^(n-k).
double expected_order_statistic(int k, int n) {
  const double ways = std::tgamma(n + 1) / (std::tgamma(k) * std::tgamma(n - k + 1));
  double total = 0;
  const double h = 1e-4;
  for (double x = -10; x < 10; x += h) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    total += x * ways * phi * std::pow(cdf, k - 1) * std::pow(1 - cdf, n - k) * h;
  }
  return total;
}

}  // namespace

TEST_CASE("ranks sharing devices take turns: processor-sharing finish times by hand", "[sim]") {
  // 4 ranks on 2 devices, work 2, 6, 1, 3 (mean 3): all four at half a device until rank 2
  // is done at 2; three at 2/3 until rank 0 at 2 + 1.5; two at full speed until rank 3 at
  // 4.5; rank 1 alone until 7.5. Over full sharing's 3 x 2 = 6.
  const std::vector<double> finish = shared_device_finish({2.0 / 3, 6.0 / 3, 1.0 / 3, 3.0 / 3}, 2);
  CHECK(finish[2] == Approx(2.0 / 6));
  CHECK(finish[0] == Approx(3.5 / 6));
  CHECK(finish[3] == Approx(4.5 / 6));
  CHECK(finish[1] == Approx(7.5 / 6));
  for (double f : shared_device_finish({1, 1, 1, 1}, 2)) CHECK(f == Approx(1));
  // A device each: nothing shared, each finishes at its own work.
  CHECK(shared_device_finish({0.9, 1.2}, 2) == std::vector<double>{0.9, 1.2});
}

TEST_CASE("with jitter cv and 4 ranks on 2 devices, a step waits for (E[X(1)] + E[X(2)]) / 2 + E[X(4)] over 2 draws",
          "[sim]") {
  // The last of 4 ranks on 2 devices finishes at w1/2 + w2/2 + w4 (shared_device_finish),
  // over 2 at full sharing: compute x (1 + cv (e1/2 + e2/2 + e4) / 2), about 1 + 0.18 cv,
  // against 1 + 1.03 cv for 4 ranks on 4 devices.
  Hardware hw = free_links(4, 1);
  hw.devices_per_node = 2;
  Workload w = one_gradient(1000);
  w.images_per_epoch = int64_t{10} * 4 * 2000;
  const double cv = 0.05;
  const SimResult r = simulate(w, hw, KoloSettings{}, Variation{cv, 0, 1, 3});
  const double e = (expected_order_statistic(1, 4) + expected_order_statistic(2, 4)) / 2 + expected_order_statistic(4, 4);
  CHECK(expected_order_statistic(4, 4) == Approx(expected_max_of_normals(4)).epsilon(1e-6));
  CHECK(r.epoch_s / (2000 * 0.1 * 2) == Approx(1 + cv * e / 2).epsilon(0.003));
}

TEST_CASE("a collective submitted mid-backward starts its measured delay late, or when backward ends", "[sim]") {
  Hardware hw = cluster(4, 1);
  Workload w = one_gradient(10'000'000, 0.5);  // 40 MB, ready halfway through backward: 33 ms before its end
  w.images_per_epoch = 10 * 4 * 20;
  const double allreduce = allreduce_seconds(4e7, hw, KoloSettings{});
  REQUIRE(allreduce < 0.02);
  const double backward_left = 0.1 * 2.0 / 3.0 / 2.0;  // forward a third of the step, the gradient halfway
  hw.comm_start_delay_s = 0.5 * (backward_left - allreduce);  // still ends before backward does
  CHECK(simulate(w, hw, KoloSettings{}).epoch_s / 20 == Approx(0.1).epsilon(1e-6));
  hw.comm_start_delay_s = backward_left - allreduce / 2;  // half of it runs past backward's end
  const double late = simulate(w, hw, KoloSettings{}).epoch_s / 20;
  CHECK(late == Approx(0.1 + allreduce / 2).margin(1.5e-3));  // within a cycle (1 ms) and its negotiation
  hw.comm_start_delay_s = 0.05;  // longer than what is left of backward: it starts when backward ends
  const double at_end = simulate(w, hw, KoloSettings{}).epoch_s / 20;
  hw.comm_start_delay_s = 0;
  hw.comm_overlaps_compute = false;
  const double serial = simulate(w, hw, KoloSettings{}).epoch_s / 20;
  CHECK(at_end == Approx(serial).margin(1e-4));  // the same, but for one negotiation
  hw.comm_start_delay_s = 0.01;  // where communication waits for compute anyway, the delay changes nothing
  CHECK(simulate(w, hw, KoloSettings{}).epoch_s / 20 == Approx(serial).epsilon(1e-9));
}
