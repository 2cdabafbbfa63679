// sim/defaults.cc: reads and checks sim/defaults.json.
#include "sim/defaults.h"

#include "sim/json_fields.h"

namespace kolo::sim {

Defaults Defaults::none() {
  Defaults d;
  for (LinkKind kind : kLinkKinds) d.achieved_fraction[kind] = 1.0;
  return d;
}

double Defaults::achieved(LinkKind kind) const {
  auto it = achieved_fraction.find(kind);
  return it == achieved_fraction.end() ? 1.0 : it->second;
}

void resolve(Hardware& hw, const Defaults& defaults) {
  for (Link* link : {&hw.intra_node, &hw.inter_node})
    if (link->achieved_fraction == 0) link->achieved_fraction = defaults.achieved(link->kind);
  if (!hw.variation.given()) hw.variation = defaults.variation;
}

Defaults parse_defaults(const nlohmann::json& document, const std::string& origin) {
  const FieldReader top(document, origin, "");
  Defaults d;
  d.variation = read_variation(top.object("variation"));
  const FieldReader achieved = top.object("achieved_fraction");
  for (LinkKind kind : kLinkKinds) {
    const double f = achieved.number(to_string(kind), false);
    if (f > 1) achieved.fail(to_string(kind), "must be at most 1 (a share of the line rate)");
    d.achieved_fraction[kind] = f;
  }
  d.sources = top.strings("sources");
  return d;
}

Defaults load_defaults(const std::filesystem::path& file) {
  return parse_defaults(read_json_file(file, "defaults file"), file.string());
}

}  // namespace kolo::sim
