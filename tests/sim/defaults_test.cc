// sim/defaults.json: every value present, in range and with its source; a bad file's error
// names the field; resolve() fills in only what a hardware file left out.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sim/defaults.h"

using namespace kolo::sim;
using Catch::Matchers::Contains;

TEST_CASE("the shipped defaults give every link kind a share of its line rate and every value a source") {
  const Defaults d = load_defaults(std::filesystem::path(KOLO_SIM_DATA_DIR) / "defaults.json");
  CHECK(d.variation.low <= d.variation.jitter);
  CHECK(d.variation.jitter <= d.variation.high);
  CHECK(d.variation.jitter > 0);
  CHECK(d.sources.count("variation.jitter") == 1);
  for (LinkKind kind : kLinkKinds) {
    INFO(to_string(kind));
    CHECK(d.achieved(kind) > 0);
    CHECK(d.achieved(kind) <= 1);
    CHECK(d.sources.count("achieved_fraction." + to_string(kind)) == 1);
  }
}

TEST_CASE("a bad defaults file names the field") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "variation": {"jitter": 0.03, "jitter_low": 0.02, "jitter_high": 0.06},
    "achieved_fraction": {"shared_memory": 1, "pcie": 0.8, "nvlink": 0.8, "ethernet": 0.9, "infiniband": 0.9, "roce": 0.9},
    "sources": {}})");
  CHECK(parse_defaults(doc, "d.json").achieved(LinkKind::pcie) == 0.8);
  doc["achieved_fraction"]["roce"] = 1.2;
  CHECK_THROWS_WITH(parse_defaults(doc, "d.json"), Contains("d.json") && Contains("achieved_fraction.roce"));
  doc["achieved_fraction"]["roce"] = 0.9;
  doc["achieved_fraction"].erase("nvlink");
  CHECK_THROWS_WITH(parse_defaults(doc, "d.json"), Contains("achieved_fraction.nvlink") && Contains("missing"));
  doc["achieved_fraction"]["nvlink"] = 0.8;
  doc["variation"]["jitter"] = 0.01;
  CHECK_THROWS_WITH(parse_defaults(doc, "d.json"), Contains("variation.jitter"));
}

TEST_CASE("resolve fills in the kind's share and the variation only where the cluster's file gave none") {
  Defaults d = Defaults::none();
  d.achieved_fraction[LinkKind::infiniband] = 0.9;
  d.variation = {0.03, 0.02, 0.05};
  Hardware hw;
  hw.intra_node = {LinkKind::nvlink, 0, 1e-9, 0.7};
  hw.inter_node = {LinkKind::infiniband, 0, 1e-9, 0};
  resolve(hw, d);
  CHECK(hw.intra_node.achieved_fraction == 0.7);
  CHECK(hw.inter_node.achieved_fraction == 0.9);
  CHECK(hw.variation.jitter == 0.03);
  hw.variation = {0.1, 0.1, 0.1};
  resolve(hw, d);
  CHECK(hw.variation.jitter == 0.1);
}
