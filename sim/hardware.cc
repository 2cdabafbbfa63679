// sim/hardware.cc: reads and checks a hardware file. The file speaks in the units of
// datasheets (µs, GB/s, TFLOP/s); this converts them to seconds, s/byte and FLOP/s once.
#include "sim/hardware.h"

#include <array>
#include <fstream>
#include <utility>

namespace kolo::sim {
namespace {

constexpr std::array<std::pair<LinkKind, const char*>, 6> kLinkNames{{
    {LinkKind::shared_memory, "shared_memory"},
    {LinkKind::pcie, "pcie"},
    {LinkKind::nvlink, "nvlink"},
    {LinkKind::ethernet, "ethernet"},
    {LinkKind::infiniband, "infiniband"},
    {LinkKind::roce, "roce"},
}};

// Reads fields of one JSON object, naming origin and the dotted field path in every error.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string origin, std::string prefix)
      : object_(object), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!object_.is_object())
      throw HardwareError(origin_ + ": " + (prefix_.empty() ? "the document" : "field '" + prefix_.substr(0, prefix_.size() - 1) + "'") +
                          " must be a JSON object");
  }

  const nlohmann::json& field(const std::string& name) const {
    auto it = object_.find(name);
    if (it == object_.end()) fail(name, "is missing");
    return *it;
  }

  double number(const std::string& name, bool zero_allowed) const {
    const nlohmann::json& value = field(name);
    if (!value.is_number()) fail(name, "must be a number, got " + value.dump());
    const double x = value.get<double>();
    if (x < 0) fail(name, "must not be negative, got " + value.dump());
    if (x == 0 && !zero_allowed) fail(name, "must be positive, got 0");
    return x;
  }

  int count(const std::string& name) const {
    const nlohmann::json& value = field(name);
    if (!value.is_number_integer() || value.get<long long>() < 1)
      fail(name, "must be a whole number of at least 1, got " + value.dump());
    return value.get<int>();
  }

  std::string text(const std::string& name) const {
    const nlohmann::json& value = field(name);
    if (!value.is_string()) fail(name, "must be a string, got " + value.dump());
    return value.get<std::string>();
  }

  FieldReader object(const std::string& name) const { return FieldReader(field(name), origin_, prefix_ + name + "."); }

  [[noreturn]] void fail(const std::string& name, const std::string& what) const {
    throw HardwareError(origin_ + ": field '" + prefix_ + name + "' " + what);
  }

 private:
  const nlohmann::json& object_;
  std::string origin_;
  std::string prefix_;
};

Link read_link(const FieldReader& reader) {
  const std::string kind = reader.text("kind");
  Link link;
  bool known = false;
  for (const auto& [value, name] : kLinkNames)
    if (kind == name) link.kind = value, known = true;
  if (!known)
    reader.fail("kind", "must be one of shared_memory, pcie, nvlink, ethernet, infiniband, roce; got \"" + kind + "\"");
  link.alpha_s = reader.number("latency_us", true) * 1e-6;
  link.beta_s_per_byte = 1.0 / (reader.number("bandwidth_GBps", false) * 1e9);
  return link;
}

}  // namespace

std::string to_string(LinkKind kind) {
  for (const auto& [value, name] : kLinkNames)
    if (value == kind) return name;
  return "unknown";
}

Hardware parse_hardware(const nlohmann::json& document, const std::string& origin) {
  const FieldReader top(document, origin, "");
  Hardware hw;
  hw.name = top.text("name");
  hw.ranks_per_node = top.count("ranks_per_node");
  hw.nodes = top.count("nodes");
  hw.intra_node = read_link(top.object("intra_node"));
  hw.inter_node = read_link(top.object("inter_node"));
  hw.loader_cores_per_node = top.number("loader_cores_per_node", false);
  hw.device_flops = top.number("device_tflops", false) * 1e12;
  const FieldReader sources = top.object("sources");
  for (const auto& [field, source] : top.field("sources").items()) hw.sources[field] = sources.text(field);
  return hw;
}

Hardware load_hardware(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw HardwareError(file.string() + ": cannot open the hardware file");
  nlohmann::json document;
  try {
    in >> document;
  } catch (const nlohmann::json::parse_error& e) {
    throw HardwareError(file.string() + ": not valid JSON: " + e.what());
  }
  return parse_hardware(document, file.string());
}

}  // namespace kolo::sim
