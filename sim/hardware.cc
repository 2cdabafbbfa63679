// sim/hardware.cc: reads and checks a hardware file. The file speaks in the units of
// datasheets (µs, GB/s, TFLOP/s); this converts them to seconds, s/byte and FLOP/s once.
#include "sim/hardware.h"

#include "sim/json_fields.h"

#include <array>
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
  link.achieved_fraction = 0;  // the kind's default, unless the file says (resolve())
  if (reader.has("achieved_fraction")) {
    link.achieved_fraction = reader.number("achieved_fraction", false);
    if (link.achieved_fraction > 1) reader.fail("achieved_fraction", "must be at most 1 (a share of the line rate)");
  }
  return link;
}

}  // namespace

std::string to_string(LinkKind kind) {
  for (const auto& [value, name] : kLinkNames)
    if (value == kind) return name;
  return "unknown";
}

std::string to_string(Collectives collectives) { return collectives == Collectives::mpi ? "mpi" : "nccl"; }

VariationRange read_variation(const FieldReader& variation) {
  const VariationRange v{variation.number("jitter", true), variation.number("jitter_low", true),
                         variation.number("jitter_high", true)};
  if (!(v.low <= v.jitter && v.jitter <= v.high && v.high < 1))
    variation.fail("jitter", "must lie in [jitter_low, jitter_high], below 1");
  return v;
}

double spread_over_range(double value, double low, double high, int i, int n) {
  if (n <= 1) return value;
  const int half = n / 2;
  return i < half ? low + (value - low) * (i + 0.5) / half : value + (high - value) * (i - half + 0.5) / (n - half);
}

Hardware parse_hardware(const nlohmann::json& document, const std::string& origin) {
  const FieldReader top(document, origin, "");
  Hardware hw;
  hw.name = top.text("name");
  hw.ranks_per_node = top.count("ranks_per_node");
  hw.nodes = top.count("nodes");
  if (int64_t{hw.ranks_per_node} * hw.nodes > (1 << 20))  // Hardware::ranks() is an int
    top.fail("nodes", "the cluster has " + std::to_string(int64_t{hw.ranks_per_node} * hw.nodes) +
                          " ranks, more than kolo-sim simulates (1048576)");
  hw.intra_node = read_link(top.object("intra_node"));
  hw.inter_node = read_link(top.object("inter_node"));
  hw.devices_per_node = top.has("devices_per_node") ? top.count("devices_per_node") : hw.ranks_per_node;
  hw.loader_cores_per_node = top.number("loader_cores_per_node", false);
  if (top.has("variation")) hw.variation = read_variation(top.object("variation"));
  if (top.has("compute_slowdown_when_busy")) {
    hw.compute_slowdown_when_busy = top.number("compute_slowdown_when_busy", false);
    if (hw.compute_slowdown_when_busy < 1) top.fail("compute_slowdown_when_busy", "must be at least 1");
  }
  const double slowdown = hw.compute_slowdown_when_busy;
  hw.compute_slowdown_low = top.has("compute_slowdown_low") ? top.number("compute_slowdown_low", false) : slowdown;
  hw.compute_slowdown_high = top.has("compute_slowdown_high") ? top.number("compute_slowdown_high", false) : slowdown;
  if (!(hw.compute_slowdown_low <= slowdown))
    top.fail("compute_slowdown_low", "must be at most compute_slowdown_when_busy");
  if (!(slowdown <= hw.compute_slowdown_high))
    top.fail("compute_slowdown_high", "must be at least compute_slowdown_when_busy");
  if (top.has("comm_overlaps_compute")) hw.comm_overlaps_compute = top.boolean("comm_overlaps_compute");
  if (top.has("comm_start_delay_ms")) hw.comm_start_delay_s = top.number("comm_start_delay_ms", true) * 1e-3;
  if (top.has("collectives")) {
    const std::string name = top.text("collectives");
    if (name != to_string(Collectives::nccl) && name != to_string(Collectives::mpi))
      top.fail("collectives", "must be \"nccl\" or \"mpi\", got \"" + name + "\"");
    hw.collectives = name == to_string(Collectives::mpi) ? Collectives::mpi : Collectives::nccl;
  }
  hw.device_flops = top.number("device_tflops", false) * 1e12;
  hw.sources = top.strings("sources");
  return hw;
}

Hardware load_hardware(const std::filesystem::path& file) {
  return parse_hardware(read_json_file(file, "hardware file"), file.string());
}

}  // namespace kolo::sim
