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
  if (hw.jitter < 0) {
    hw.jitter = defaults.jitter;
    hw.jitter_low = defaults.jitter_low;
    hw.jitter_high = defaults.jitter_high;
  }
}

Defaults parse_defaults(const nlohmann::json& document, const std::string& origin) {
  const FieldReader top(document, origin, "");
  Defaults d;
  const FieldReader variation = top.object("variation");
  d.jitter = variation.number("jitter", true);
  d.jitter_low = variation.number("jitter_low", true);
  d.jitter_high = variation.number("jitter_high", true);
  if (!(d.jitter_low <= d.jitter && d.jitter <= d.jitter_high && d.jitter_high < 1))
    variation.fail("jitter", "must lie in [jitter_low, jitter_high], below 1");
  const FieldReader achieved = top.object("achieved_fraction");
  for (LinkKind kind : kLinkKinds) {
    const double f = achieved.number(to_string(kind), false);
    if (f > 1) achieved.fail(to_string(kind), "must be at most 1 (a share of the line rate)");
    d.achieved_fraction[kind] = f;
  }
  const FieldReader sources = top.object("sources");
  for (const auto& [field, source] : top.field("sources").items()) d.sources[field] = sources.text(field);
  return d;
}

Defaults load_defaults(const std::filesystem::path& file) {
  return parse_defaults(read_json_file(file, "defaults file"), file.string());
}

}  // namespace kolo::sim
