// The shipped hardware files load; a bad file's error names the file and the field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim/hardware.h"

using namespace kolo::sim;
using Catch::Matchers::Contains;

namespace {

const std::filesystem::path kShipped = KOLO_SIM_HARDWARE_DIR;

nlohmann::json valid() {
  return nlohmann::json::parse(R"({
    "name": "test", "ranks_per_node": 4, "nodes": 2,
    "intra_node": {"kind": "nvlink", "latency_us": 2, "bandwidth_GBps": 50},
    "inter_node": {"kind": "infiniband", "latency_us": 1.5, "bandwidth_GBps": 12.5},
    "loader_cores_per_node": 32, "device_tflops": 15.7, "sources": {"nodes": "a test"}})");
}

}  // namespace

TEST_CASE("the three shipped hardware files load, with a source for every number") {
  for (const char* file : {"this_machine.json", "v100_nvlink2_edr.json", "pascal_25g_roce.json"}) {
    INFO(file);
    const Hardware hw = load_hardware(kShipped / file);
    CHECK(hw.ranks() >= 1);
    CHECK(hw.inter_node.beta_s_per_byte > 0);
    for (const char* field : {"intra_node.bandwidth_GBps", "intra_node.latency_us", "inter_node.bandwidth_GBps",
                              "inter_node.latency_us", "loader_cores_per_node", "device_tflops"})
      CHECK(hw.sources.count(field) == 1);
  }
}

TEST_CASE("a hardware file's units become seconds, seconds per byte and FLOP/s") {
  const Hardware hw = parse_hardware(valid(), "test");
  CHECK(hw.intra_node.kind == LinkKind::nvlink);
  CHECK(hw.inter_node.alpha_s == Approx(1.5e-6));
  CHECK(hw.inter_node.beta_s_per_byte == Approx(1.0 / 12.5e9));
  CHECK(hw.device_flops == Approx(15.7e12));
  CHECK(hw.ranks() == 8);
  CHECK(hw.sources.at("nodes") == "a test");
}

TEST_CASE("a missing hardware file is named in the error") {
  CHECK_THROWS_WITH(load_hardware("/nonexistent/cluster.json"), Contains("/nonexistent/cluster.json") && Contains("cannot open"));
}

TEST_CASE("a hardware file that is not JSON is named in the error") {
  const auto path = std::filesystem::temp_directory_path() / "kolo_sim_not_json.json";
  std::ofstream(path) << "{ not json";
  CHECK_THROWS_WITH(load_hardware(path), Contains(path.string()) && Contains("not valid JSON"));
  std::filesystem::remove(path);
}

TEST_CASE("a bad field is named in the error, with the origin") {
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* field;
    const char* complaint;
  };
  const Case cases[] = {
      {"/inter_node/bandwidth_GBps", -3, "'inter_node.bandwidth_GBps'", "negative"},
      {"/inter_node/bandwidth_GBps", 0, "'inter_node.bandwidth_GBps'", "positive"},
      {"/intra_node/latency_us", -1, "'intra_node.latency_us'", "negative"},
      {"/intra_node/latency_us", "fast", "'intra_node.latency_us'", "number"},
      {"/intra_node/kind", "carrier_pigeon", "'intra_node.kind'", "carrier_pigeon"},
      {"/ranks_per_node", 2.5, "'ranks_per_node'", "whole number"},
      {"/nodes", 0, "'nodes'", "whole number"},
      {"/device_tflops", -15.7, "'device_tflops'", "negative"},
      {"/inter_node", 12, "'inter_node'", "JSON object"},
      {"/sources/nodes", 3, "'sources.nodes'", "string"},
  };
  for (const Case& c : cases) {
    INFO(c.pointer);
    nlohmann::json doc = valid();
    doc[nlohmann::json::json_pointer(c.pointer)] = c.value;
    CHECK_THROWS_AS(parse_hardware(doc, "cluster.json"), HardwareError);
    CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"),
                      Contains("cluster.json") && Contains(c.field) && Contains(c.complaint));
  }
}

TEST_CASE("a missing field is named in the error") {
  for (const char* pointer : {"/device_tflops", "/intra_node/bandwidth_GBps", "/sources"}) {
    INFO(pointer);
    nlohmann::json doc = valid();
    const nlohmann::json::json_pointer p(pointer);
    doc[p.parent_pointer()].erase(p.back());
    CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"), Contains("is missing"));
  }
}

TEST_CASE("a hardware file may give a link's achieved share, its own variation, whether comm overlaps compute and how late it starts") {
  nlohmann::json doc = valid();
  CHECK(parse_hardware(doc, "test").inter_node.achieved_fraction == 0);  // left to the defaults
  CHECK(parse_hardware(doc, "test").comm_overlaps_compute);
  CHECK_FALSE(parse_hardware(doc, "test").variation.given());
  doc["inter_node"]["achieved_fraction"] = 0.5;
  doc["comm_overlaps_compute"] = false;
  doc["variation"] = {{"jitter", 0.05}, {"jitter_low", 0.04}, {"jitter_high", 0.1}};
  const Hardware hw = parse_hardware(doc, "test");
  CHECK(hw.inter_node.achieved_fraction == 0.5);
  CHECK_FALSE(hw.comm_overlaps_compute);
  CHECK(hw.variation.jitter == 0.05);
  CHECK(hw.variation.high == 0.1);
  doc["inter_node"]["achieved_fraction"] = 1.5;
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"),
                    Contains("cluster.json") && Contains("inter_node.achieved_fraction") && Contains("at most 1"));
  doc["inter_node"]["achieved_fraction"] = 0.5;
  doc["variation"]["jitter"] = 0.2;
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"), Contains("variation.jitter"));
  doc["variation"]["jitter"] = 0.05;
  doc["comm_overlaps_compute"] = "no";
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"), Contains("comm_overlaps_compute") && Contains("true or false"));
  doc["comm_overlaps_compute"] = false;
  CHECK(parse_hardware(doc, "test").comm_start_delay_s == 0);  // a GPU cluster's CPU is free
  doc["comm_start_delay_ms"] = 4.5;
  CHECK(parse_hardware(doc, "test").comm_start_delay_s == Approx(0.0045));
  doc["comm_start_delay_ms"] = -1;
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"), Contains("comm_start_delay_ms") && Contains("negative"));
  doc.erase("comm_start_delay_ms");
  doc["compute_slowdown_when_busy"] = 1.2;
  CHECK(parse_hardware(doc, "test").compute_slowdown_when_busy == 1.2);
  doc["compute_slowdown_when_busy"] = 0.9;
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"), Contains("compute_slowdown_when_busy") && Contains("at least 1"));
}

TEST_CASE("a hardware file may give the range of its busy-node slowdown, around the value") {
  nlohmann::json doc = valid();
  CHECK(parse_hardware(doc, "test").compute_slowdown_low == 1);  // no slowdown: no range
  CHECK(parse_hardware(doc, "test").compute_slowdown_high == 1);
  doc["compute_slowdown_when_busy"] = 1.1;
  CHECK(parse_hardware(doc, "test").compute_slowdown_low == 1.1);  // no range: the value
  CHECK(parse_hardware(doc, "test").compute_slowdown_high == 1.1);
  doc["compute_slowdown_low"] = 0.88;  // a repeat in which np 2 computed faster than np 1
  doc["compute_slowdown_high"] = 1.24;
  CHECK(parse_hardware(doc, "test").compute_slowdown_low == 0.88);
  CHECK(parse_hardware(doc, "test").compute_slowdown_high == 1.24);
  doc["compute_slowdown_high"] = 1.05;
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"),
                    Contains("cluster.json") && Contains("compute_slowdown_high") && Contains("at least"));
  doc["compute_slowdown_high"] = 1.24;
  doc["compute_slowdown_low"] = 1.15;
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"), Contains("compute_slowdown_low") && Contains("at most"));
  doc["compute_slowdown_low"] = 0;
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"), Contains("compute_slowdown_low"));
}

TEST_CASE("a band's runs spread a term over its range: half below the value, half above") {
  CHECK(spread_over_range(1.1, 0.9, 1.5, 0, 1) == 1.1);  // one run: the value
  // n = 4: below at 1/4 and 3/4 of the way from low to the value, above at 1/4 and 3/4
  // of the way from the value to high.
  CHECK(spread_over_range(1.1, 0.9, 1.5, 0, 4) == Approx(0.95));
  CHECK(spread_over_range(1.1, 0.9, 1.5, 1, 4) == Approx(1.05));
  CHECK(spread_over_range(1.1, 0.9, 1.5, 2, 4) == Approx(1.2));
  CHECK(spread_over_range(1.1, 0.9, 1.5, 3, 4) == Approx(1.4));
  // n = 3: one run below (halfway), two above.
  CHECK(spread_over_range(1.1, 0.9, 1.5, 0, 3) == Approx(1.0));
  CHECK(spread_over_range(1.1, 0.9, 1.5, 1, 3) == Approx(1.1 + 0.4 * 0.25));
  CHECK(spread_over_range(1.1, 0.9, 1.5, 2, 3) == Approx(1.1 + 0.4 * 0.75));
}

TEST_CASE("a hardware file names its collective library: nccl unless it says mpi") {
  nlohmann::json doc = valid();
  CHECK(parse_hardware(doc, "test").collectives == Collectives::nccl);
  doc["collectives"] = "mpi";
  CHECK(parse_hardware(doc, "test").collectives == Collectives::mpi);
  doc["collectives"] = "nccl";
  CHECK(parse_hardware(doc, "test").collectives == Collectives::nccl);
  doc["collectives"] = "gloo";
  CHECK_THROWS_WITH(parse_hardware(doc, "cluster.json"),
                    Contains("cluster.json") && Contains("collectives") && Contains("\"nccl\" or \"mpi\""));
}
