// check_rank_count: -np against the slots the ranks go on (preflight.h).
#include <catch2/catch.hpp>

#include "hosts.h"
#include "kolo/kolo.h"
#include "preflight.h"
#include "support/status.h"

using namespace kolo::launcher;
using Catch::Matchers::Equals;
using kolo::StatusCode;
using kolo_test::HasCode;

namespace {

LaunchOptions ranks(int np, bool oversubscribe = false) {
  LaunchOptions o;
  o.num_ranks = np;
  o.oversubscribe = oversubscribe;
  o.command = {"train"};
  return o;
}

LaunchContext machine_with_cores(int cores, Environment env = {"PATH=/usr/bin"}) {
  LaunchContext context;
  context.environment = std::move(env);
  context.local_cores = cores;
  return context;
}

// The message check_rank_count refuses with, or "" when it accepts.
std::string refusal(const LaunchOptions& o, const std::vector<HostSlots>& hosts, const LaunchContext& context) {
  try {
    check_rank_count(o, hosts, context);
  } catch (const kolo::Error& e) {
    CHECK(e.code() == StatusCode::InvalidArgument);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("without hosts -np goes from 1 to this machine's cores", "[rank-count]") {
  const LaunchContext four_cores = machine_with_cores(4);
  CHECK(refusal(ranks(1), {}, four_cores).empty());
  CHECK(refusal(ranks(4), {}, four_cores).empty());
  const std::string range = "kolorun: -np must be between 1 and 4 (the slots of this machine: its 4 cores, as "
                            "mpirun counts them; --oversubscribe allows more), not ";
  CHECK(refusal(ranks(5), {}, four_cores) == range + "5");
  CHECK(refusal(ranks(0), {}, four_cores) == range + "0");
  CHECK(refusal(ranks(-1), {}, four_cores) == range + "-1");
  CHECK(refusal(ranks(2147483647), {}, four_cores) == range + "2147483647");
}

TEST_CASE("with a host discovery script -np is not held to this machine's cores", "[rank-count]") {
  LaunchOptions elastic = ranks(4);
  elastic.host_discovery_script = "./discover.sh";  // it may name other hosts, of any size
  CHECK(refusal(elastic, {}, machine_with_cores(2)).empty());
  elastic.num_ranks = 0;
  CHECK_THAT(refusal(elastic, {}, machine_with_cores(2)), Catch::Contains("-np must be between 1 and"));
}

TEST_CASE("with -H or a hostfile -np goes from 1 to their slots", "[rank-count]") {
  const LaunchContext one_core = machine_with_cores(1);  // the hosts' slots count, not this machine's
  const std::vector<HostSlots> hosts = parse_host_list("node0:4,node1:4");
  CHECK(refusal(ranks(8), hosts, one_core).empty());
  CHECK_THAT(refusal(ranks(0), hosts, one_core),
             Equals("kolorun: -np must be between 1 and 8 (the slots of -H node0:4,node1:4; --oversubscribe "
                    "allows more), not 0"));
  CHECK_THAT(refusal(ranks(9), hosts, one_core), Catch::Contains("between 1 and 8 ") && Catch::EndsWith("not 9"));

  LaunchOptions from_file = ranks(9);
  from_file.hostfile = "/etc/kolo/hosts";
  CHECK_THAT(refusal(from_file, parse_hostfile_text("node0 slots=4\nnode1:4\n", "f"), one_core),
             Equals("kolorun: -np must be between 1 and 8 (the slots of --hostfile /etc/kolo/hosts: "
                    "node0:4,node1:4; --oversubscribe allows more), not 9"));
}

TEST_CASE("oversubscribing allows up to 64 ranks a slot", "[rank-count]") {
  const LaunchContext two_cores = machine_with_cores(2);
  CHECK(refusal(ranks(3, true), {}, two_cores).empty());
  CHECK(refusal(ranks(2 * kMaxRanksPerSlot, true), {}, two_cores).empty());
  CHECK_THAT(refusal(ranks(2147483647, true), {}, two_cores),
             Equals("kolorun: -np must be between 1 and 128 (64 ranks a slot with --oversubscribe, on the 2 slots "
                    "of this machine: its 2 cores, as mpirun counts them), not 2147483647"));
  CHECK_THAT(refusal(ranks(0, true), parse_host_list("node0:2"), two_cores),
             Catch::StartsWith("kolorun: -np must be between 1 and 128 (") && Catch::EndsWith("not 0"));
  // mpirun obeys Open MPI's variable as it obeys the flag: so does the check.
  const LaunchContext told_by_environment = machine_with_cores(2, {"OMPI_MCA_rmaps_base_oversubscribe=1"});
  CHECK(refusal(ranks(3), {}, told_by_environment).empty());
  CHECK(refusal(ranks(3), {}, machine_with_cores(2, {"OMPI_MCA_rmaps_base_oversubscribe=0"})) != "");
  // Slots near the largest int do not overflow the bound.
  CHECK(refusal(ranks(2147483647, true), parse_host_list("a:2000000000"), two_cores).empty());
}

TEST_CASE("slots kolorun cannot know are the launcher's to check, up to kMaxRanks", "[rank-count]") {
  const LaunchContext two_cores = machine_with_cores(2);
  // A hostfile line without slots=: mpirun counts that host's cores.
  LaunchOptions from_file = ranks(1000);
  from_file.hostfile = "hosts";
  const std::vector<HostSlots> unknown = parse_hostfile_text("node0\n", "hosts");
  CHECK(refusal(from_file, unknown, two_cores).empty());
  from_file.num_ranks = 0;
  const std::string range = "kolorun: -np must be between 1 and 1048576 (the launcher checks it against slots "
                            "kolorun cannot know), not ";
  CHECK(refusal(from_file, unknown, two_cores) == range + "0");
  from_file.num_ranks = 2147483647;
  CHECK(refusal(from_file, unknown, two_cores) == range + "2147483647");
  // srun places the ranks on the allocation's nodes.
  LaunchOptions in_slurm = ranks(1000);
  in_slurm.launcher = LauncherChoice::Srun;
  CHECK(refusal(in_slurm, {}, two_cores).empty());
  in_slurm.num_ranks = -2;
  CHECK(refusal(in_slurm, {}, two_cores) == range + "-2");
  in_slurm.num_ranks = kolo::launcher::kMaxRanks + 1;
  CHECK(refusal(in_slurm, {}, two_cores) == range + "1048577");
}
