// sim/defaults.h: what kolo-sim assumes of every cluster unless told otherwise, read from
// sim/defaults.json, each value with the measurement or the publication it comes from
// (docs/simulator.md, "The defaults"):
//   - variation between ranks: each rank's step compute is drawn around its mean with this
//     relative standard deviation, so a step waits for the slowest of p draws; with the range
//     the value is known to, which kolo-sim's band spans;
//   - the share of a link's line rate an allreduce achieves, by kind of link.
// The shares are measured or cited; the jitter was set on one published table, which its
// source names, and every other table is held out (sim/validation/published.md).
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/hardware.h"

namespace kolo::sim {

struct Defaults {
  VariationRange variation{0, 0, 0};
  std::map<LinkKind, double> achieved_fraction;  // every kind, in (0, 1]; 1: the line rate
  std::map<std::string, std::string> sources;    // field -> where its value comes from

  // No variation and every link at its line rate: the model without these terms.
  static Defaults none();
  double achieved(LinkKind kind) const;
};

// Fills in what the cluster's file left to the defaults: each link's share of its line
// rate (its kind's), and the variation between ranks.
void resolve(Hardware& hw, const Defaults& defaults);

Defaults parse_defaults(const nlohmann::json& document, const std::string& origin);
Defaults load_defaults(const std::filesystem::path& file);

}  // namespace kolo::sim
