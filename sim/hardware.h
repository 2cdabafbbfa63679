// sim/hardware.h: a cluster as the simulator sees it, read from a small JSON file
// (sim/hardware/*.json): the link classes inside a node and between nodes (α, β), how many
// ranks share a node, how many nodes, each node's CPU cores for data loading and each
// device's compute throughput. Units inside the program are SI: seconds, bytes, FLOP/s.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/json_fields.h"

namespace kolo::sim {

using HardwareError = DataFileError;  // a bad hardware file

enum class LinkKind { shared_memory, pcie, nvlink, ethernet, infiniband, roce };
inline constexpr LinkKind kLinkKinds[] = {LinkKind::shared_memory, LinkKind::pcie,       LinkKind::nvlink,
                                          LinkKind::ethernet,      LinkKind::infiniband, LinkKind::roce};

std::string to_string(LinkKind kind);

// One link class in the α–β model: a message of n bytes costs alpha + n·beta, where beta is
// 1 / (line rate × the share of it a collective achieves).
struct Link {
  LinkKind kind = LinkKind::shared_memory;
  double alpha_s = 0;          // latency per message (s)
  double beta_s_per_byte = 0;  // 1 / line rate (s/byte)
  // The share of the line rate a collective achieves, in (0, 1]; 1 for a link whose
  // bandwidth was measured. A hardware file may give it ("achieved_fraction"); if not,
  // parse_hardware leaves 0 and resolve() (sim/defaults.h) puts in the kind's default.
  double achieved_fraction = 1.0;
  // A link shaped below its own speed (tc's tbf on this machine's namespace hosts): the
  // speed its endpoints reach unshaped, 1 / unshaped_beta_s_per_byte (0: not shaped), and
  // the shaper's token bucket: after an idle time, up to burst_bytes go at that speed
  // before the rest goes at beta.
  double unshaped_beta_s_per_byte = 0;
  double burst_bytes = 0;
};

// The collective library the cluster's gradients go through, which decides the
// allreduce's algorithm. nccl (GPU clusters; the default): the cheaper of a ring and
// recursive doubling at each size. mpi (CPU clusters): kolo's MPI backend, its own ring
// for a piece of at least 64 KiB a rank and Open MPI 4.1's MPI_Allreduce below that.
enum class Collectives { nccl, mpi };

std::string to_string(Collectives collectives);

// Variation between ranks: the relative standard deviation of a rank's step compute, and
// the range that value is known to (low <= jitter <= high < 1). jitter < 0: not given.
struct VariationRange {
  double jitter = -1, low = -1, high = -1;
  bool given() const { return jitter >= 0; }
};

// Reads {"jitter", "jitter_low", "jitter_high"}, checking that the value lies in its range.
VariationRange read_variation(const FieldReader& variation);

struct Hardware {
  std::string name;
  int ranks_per_node = 1;
  int nodes = 1;
  Link intra_node;  // ranks that share a node
  Link inter_node;  // ranks on different nodes
  // Devices a node's ranks compute on; more ranks than devices share them (this machine:
  // 2 cores for up to 4 ranks). Optional in the file; default: one per rank.
  int devices_per_node = 1;
  double loader_cores_per_node = 1;
  // Whether a collective progresses while its ranks compute. False where the ranks compute
  // on every CPU core and the CPU moves the bytes (this machine): the collective's CPU work
  // waits for the compute (measured: kolo-sim-probe --under-compute slows an allreduce 75
  // to 200 times on shared memory or an unshaped veth link, 5 times at 1 Gbit/s), so
  // communication does not overlap it. True again where a slow link moves them (1.3-1.8
  // times at 100 Mbit/s): sim/calibrate.py's threshold, 2.
  bool comm_overlaps_compute = true;
  // Where it does overlap but every device is a CPU core that computes: how late a rank's
  // background thread gets a core to start a collective submitted mid-compute (the file's
  // "comm_start_delay_ms"). It starts at the earlier of that and the rank's backward end,
  // when the compute thread waits and frees the core. Measured by kolo-sim-probe
  // --start-delay (sim/validate_this_machine.py, at each link rate between its namespace
  // hosts); 0 on GPU clusters, whose CPU is free.
  double comm_start_delay_s = 0;
  // How many times longer a rank's compute takes when every device of its node computes,
  // against one rank alone: shared caches and memory bandwidth, a hypervisor (this
  // machine's 2 vCPUs). Measured where the devices are CPU cores (sim/calibrate.py: np 2
  // against np 1 from every rank's timeline); 1 elsewhere.
  double compute_slowdown_when_busy = 1;
  // The range that slowdown is known to (the file's "compute_slowdown_low" and
  // "compute_slowdown_high": on this machine, the lowest and highest of the repeats it is
  // the median of); a band of runs spreads over it as over the variation's. Not given: the
  // value itself. The low end may be below 1, where a repeat's np 1 met the machine's
  // slower minute: the band then covers that noise of the measurement too.
  double compute_slowdown_low = 1, compute_slowdown_high = 1;
  Collectives collectives = Collectives::nccl;  // the file's "collectives": "nccl" or "mpi"
  // The cluster's own variation between ranks (its file's "variation"), measured on it;
  // not given: sim/defaults.json's.
  VariationRange variation;
  double device_flops = 0;                    // per rank (FLOP/s)
  std::map<std::string, std::string> sources;  // field -> where its number comes from

  int ranks() const { return ranks_per_node * nodes; }
};

// Run i of a band of n runs, for a term known to lie in [low, high] around `value`: half
// the runs evenly spaced below the value, half above (an odd n puts one more above), so
// a range that is wider on one side moves the band's median that way; value for a band
// of one run.
double spread_over_range(double value, double low, double high, int i, int n);

// origin names the data in error messages (the file's path, or a test's label).
Hardware parse_hardware(const nlohmann::json& document, const std::string& origin);
Hardware load_hardware(const std::filesystem::path& file);

}  // namespace kolo::sim
