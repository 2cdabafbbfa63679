#include <catch2/catch.hpp>

#include <algorithm>

#include "command.h"
#include "kolo/kolo.h"
#include "preflight.h"

using namespace kolo::launcher;
using Catch::Matchers::Contains;

namespace Catch {
template <>
struct StringMaker<EnvVar> {
  static std::string convert(const EnvVar& var) { return var.name + "=" + var.value; }
};
}  // namespace Catch

namespace {

using Words = std::vector<std::string>;

LaunchOptions options_for(int np, Words program = {"train", "--epochs", "1"}) {
  LaunchOptions o;
  o.num_ranks = np;
  o.command = std::move(program);
  return o;
}

LaunchContext machine(Environment env = {"PATH=/usr/bin", "HOME=/root"}) {
  LaunchContext context;
  context.environment = std::move(env);
  context.local_cores = 2;
  context.kolorun_path = "/opt/kolo/bin/kolorun";
  return context;
}

// Whether `piece` occurs in `words` as consecutive words.
bool has_piece(const Words& words, const Words& piece) {
  return std::search(words.begin(), words.end(), piece.begin(), piece.end()) != words.end();
}

bool has_word(const Words& words, const std::string& word) { return has_piece(words, {word}); }

const Words kRanks = {"/opt/kolo/bin/kolorun", "--rank-exec", "train", "--epochs", "1"};

Words concat(Words a, const Words& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("mpirun as horovodrun runs it: tagged output, slots filled in order, no binding",
          "[command]") {
  const LaunchCommand c = build_mpirun_command(options_for(2), {}, machine());
  CHECK(c.argv == concat({"mpirun", "--tag-output", "-np", "2", "-bind-to", "none", "-map-by", "slot", "--mca",
                          "mpi_yield_when_idle", "1", "--mca", "oob_tcp_keepalive_time", "5", "--mca",
                          "oob_tcp_keepalive_intvl", "2", "--mca", "oob_tcp_keepalive_probes", "3"},
                         kRanks));
  CHECK(c.set.empty());
  CHECK(c.unset.empty());
  CHECK(format_command(c) ==
        "mpirun --tag-output -np 2 -bind-to none -map-by slot --mca mpi_yield_when_idle 1 "
        "--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 3 "
        "/opt/kolo/bin/kolorun --rank-exec train --epochs 1");
}

TEST_CASE("mpirun's daemons probe their links every few seconds, unless the user chose otherwise", "[command]") {
  LaunchOptions o = options_for(2);
  // Each of the three is left out when the user gave it, in the environment or --mpi-args.
  const LaunchCommand from_env =
      build_mpirun_command(o, {}, machine({"OMPI_MCA_oob_tcp_keepalive_time=60"}));
  CHECK_FALSE(has_word(from_env.argv, "oob_tcp_keepalive_time"));
  CHECK(has_piece(from_env.argv, {"--mca", "oob_tcp_keepalive_intvl", "2"}));
  CHECK(has_piece(from_env.argv, {"--mca", "oob_tcp_keepalive_probes", "3"}));
  o.mpi_args = {"--mca", "oob_tcp_keepalive_probes", "9"};
  const LaunchCommand from_args = build_mpirun_command(o, {}, machine());
  CHECK(has_piece(from_args.argv, {"--mca", "oob_tcp_keepalive_time", "5"}));
  CHECK_FALSE(has_piece(from_args.argv, {"--mca", "oob_tcp_keepalive_probes", "3"}));
  CHECK(has_piece(from_args.argv, {"--mca", "oob_tcp_keepalive_probes", "9"}));
  // srun starts the ranks without Open MPI's daemons: nothing to probe.
  o = options_for(2);
  o.launcher = LauncherChoice::Srun;
  const LaunchCommand srun = build_command(o, {}, machine({"SLURM_JOB_ID=42"}));
  for (const EnvVar& var : srun.set) CHECK(var.name.find("keepalive") == std::string::npos);
  CHECK_FALSE(has_word(srun.argv, "oob_tcp_keepalive_time"));
}

TEST_CASE("srun ends the step when a task fails, unless the user chose otherwise", "[command][slurm]") {
  LaunchOptions o = options_for(2);
  o.launcher = LauncherChoice::Srun;
  CHECK(has_word(build_command(o, {}, machine({"SLURM_JOB_ID=42"})).argv, "--kill-on-bad-exit=1"));
  CHECK_FALSE(has_word(build_command(o, {}, machine({"SLURM_JOB_ID=42", "SLURM_KILL_BAD_EXIT=0"})).argv,
                       "--kill-on-bad-exit=1"));
  for (const std::string choice : {"--kill-on-bad-exit=0", "-K0"}) {
    o.mpi_args = {choice};
    const Words argv = build_command(o, {}, machine({"SLURM_JOB_ID=42"})).argv;
    CHECK_FALSE(has_word(argv, "--kill-on-bad-exit=1"));
    CHECK(has_word(argv, choice));
  }
}

TEST_CASE("MPI yields the core while a rank waits, unless the user chose otherwise", "[command]") {
  LaunchOptions o = options_for(2);
  const Words yield = {"--mca", "mpi_yield_when_idle", "1"};
  CHECK(has_piece(build_mpirun_command(o, {}, machine()).argv, yield));
  // Set twice on mpirun's command line is an error in Open MPI: the user's setting wins.
  CHECK_FALSE(has_piece(build_mpirun_command(o, {}, machine({"OMPI_MCA_mpi_yield_when_idle=0"})).argv, yield));
  o.mpi_args = {"--mca", "mpi_yield_when_idle", "0"};
  const LaunchCommand c = build_mpirun_command(o, {}, machine());
  CHECK_FALSE(has_piece(c.argv, yield));
  CHECK(has_piece(c.argv, {"--mca", "mpi_yield_when_idle", "0"}));
  // srun passes it in the environment, which its tasks inherit.
  o = options_for(2);
  o.launcher = LauncherChoice::Srun;
  const std::vector<EnvVar> set = build_command(o, {}, machine({"SLURM_JOB_ID=42"})).set;
  CHECK(std::find(set.begin(), set.end(), EnvVar{"OMPI_MCA_mpi_yield_when_idle", "1"}) != set.end());
}

TEST_CASE("as root mpirun gets --allow-run-as-root and the OMPI_ALLOW_RUN_AS_ROOT variables",
          "[command]") {
  LaunchContext context = machine();
  context.running_as_root = true;
  const LaunchCommand c = build_mpirun_command(options_for(2), {}, context);
  CHECK(has_piece(c.argv, {"mpirun", "--allow-run-as-root", "--tag-output"}));
  CHECK(c.set == std::vector<EnvVar>{{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                     {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
  CHECK_THAT(format_command(c), Contains("env OMPI_ALLOW_RUN_AS_ROOT=1 "
                                         "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun "));
}

TEST_CASE("mpirun and srun get --oversubscribe (--overcommit) only when it is asked for", "[command]") {
  CHECK_FALSE(has_word(build_mpirun_command(options_for(3), {}, machine()).argv, "--oversubscribe"));
  LaunchOptions o = options_for(4);
  o.oversubscribe = true;
  const LaunchCommand c = build_mpirun_command(o, {{"node0", 2}}, machine());
  CHECK(has_piece(c.argv, {"-np", "4", "-H", "node0:2", "-bind-to", "none", "-map-by", "slot", "--oversubscribe"}));
  const std::vector<HostSlots> hosts = {{"node0", 2}, {"node1", 2}};
  CHECK_FALSE(has_word(build_mpirun_command(options_for(4), hosts, machine()).argv, "--oversubscribe"));
  CHECK(has_piece(build_srun_command(o, {}, machine({"SLURM_JOB_ID=42"})).argv, {"--kill-on-bad-exit=1", "--overcommit"}));
  CHECK_FALSE(has_word(build_srun_command(options_for(4), {}, machine({"SLURM_JOB_ID=42"})).argv, "--overcommit"));
}

TEST_CASE("an MCA parameter counts as the user's only as the word after --mca or in OMPI_MCA_name=", "[command]") {
  LaunchOptions o = options_for(2);
  const Environment none;
  o.mpi_args = {"--mca", "mpi_yield_when_idle", "0"};
  CHECK(user_sets_mca_parameter(o, none, "mpi_yield_when_idle"));
  o.mpi_args = {"-x", "OMPI_MCA_oob_tcp_keepalive_time=9"};
  CHECK(user_sets_mca_parameter(o, none, "oob_tcp_keepalive_time"));
  o.mpi_args = {"-x", "MY_oob_tcp_keepalive_time_NOTE=1"};  // another variable that contains the name
  CHECK_FALSE(user_sets_mca_parameter(o, none, "oob_tcp_keepalive_time"));
  o.mpi_args = {"--mca", "oob_tcp_keepalive_time_x", "1"};
  CHECK_FALSE(user_sets_mca_parameter(o, none, "oob_tcp_keepalive_time"));
}

TEST_CASE("a hostfile's hosts go to mpirun as -H, or the file as it is where a host has no slot count", "[command]") {
  LaunchOptions o = options_for(4);
  o.hostfile = "/etc/kolo/hosts";  // host:N lines (horovodrun's), which mpirun's reader refuses
  LaunchCommand c = build_mpirun_command(o, {{"node0", 4}, {"node1", 2}}, machine());
  CHECK(has_piece(c.argv, {"-np", "4", "-H", "node0:4,node1:2", "-bind-to"}));
  CHECK_FALSE(has_word(c.argv, "--hostfile"));
  // "node1" alone on its line: mpirun counts its cores, which -H node1 would make one slot.
  c = build_mpirun_command(o, {{"node0", 4}, {"node1", std::nullopt}}, machine());
  CHECK(has_piece(c.argv, {"-np", "4", "--hostfile", "/etc/kolo/hosts", "-bind-to"}));
  CHECK_FALSE(has_word(c.argv, "-H"));
}

TEST_CASE("the network interface restricts MPI's TCP and, for names, NCCL's sockets", "[command]") {
  LaunchOptions o = options_for(2);
  o.network_interface = "eth1";
  LaunchCommand c = build_mpirun_command(o, {}, machine());
  CHECK(has_piece(c.argv, {"--mca", "btl_tcp_if_include", "eth1", "--mca", "oob_tcp_if_include", "eth1"}));
  CHECK(has_piece(c.argv, {"-x", "NCCL_SOCKET_IFNAME=eth1"}));
  o.network_interface = "10.77.0.0/24";
  c = build_mpirun_command(o, {}, machine());
  CHECK(has_piece(c.argv, {"--mca", "btl_tcp_if_include", "10.77.0.0/24"}));
  CHECK_THAT(format_command(c), !Contains("NCCL_SOCKET_IFNAME"));
}

TEST_CASE("flags become KOLO_ variables in the runtime's units", "[command]") {
  LaunchOptions o = options_for(2);
  o.fusion_threshold_mb = 32;
  o.cycle_time_ms = 0.5;
  o.cache_capacity = 7;
  o.timeline_filename = "/tmp/kolo timeline.json";
  o.timeline_mark_cycles = true;
  o.hierarchical_allreduce = true;
  o.hierarchical_allgather = true;
  o.log_level = "debug";
  o.autotune = true;
  o.autotune_log_file = "/tmp/tune.csv";
  o.no_stall_check = true;
  o.stall_check_warning_seconds = 20;
  o.stall_check_shutdown_seconds = 120;
  CHECK(variables_from_flags(o) == std::vector<EnvVar>{
                                       {"KOLO_FUSION_THRESHOLD", "33554432"},  // 32 * 2^20
                                       {"KOLO_CYCLE_TIME", "0.5"},
                                       {"KOLO_CACHE_CAPACITY", "7"},
                                       {"KOLO_TIMELINE", "/tmp/kolo timeline.json"},
                                       {"KOLO_TIMELINE_MARK_CYCLES", "1"},
                                       {"KOLO_HIERARCHICAL_ALLREDUCE", "1"},
                                       {"KOLO_HIERARCHICAL_ALLGATHER", "1"},
                                       {"KOLO_LOG_LEVEL", "debug"},
                                       {"KOLO_AUTOTUNE", "1"},
                                       {"KOLO_AUTOTUNE_LOG", "/tmp/tune.csv"},
                                       {"KOLO_STALL_CHECK_DISABLE", "1"},
                                       {"KOLO_STALL_CHECK_TIME_SECONDS", "20"},
                                       {"KOLO_STALL_SHUTDOWN_TIME_SECONDS", "120"}});
  const LaunchCommand c = build_mpirun_command(o, {}, machine());
  CHECK(has_piece(c.argv, {"-x", "KOLO_FUSION_THRESHOLD=33554432", "-x", "KOLO_CYCLE_TIME=0.5"}));
  CHECK_THAT(format_command(c), Contains("-x 'KOLO_TIMELINE=/tmp/kolo timeline.json'"));
}

TEST_CASE("fractions of a MiB and a disabled cache", "[command]") {
  LaunchOptions o = options_for(2);
  o.fusion_threshold_mb = 0.5;
  o.disable_cache = true;
  CHECK(variables_from_flags(o) == std::vector<EnvVar>{{"KOLO_FUSION_THRESHOLD", "524288"},
                                                       {"KOLO_CACHE_CAPACITY", "0"}});
}

TEST_CASE("every KOLO_, HOROVOD_ and NCCL_ variable present is forwarded with -x, sorted",
          "[command]") {
  const LaunchContext context = machine({"PATH=/usr/bin", "NCCL_DEBUG=INFO", "KOLO_CYCLE_TIME=2",
                                         "HOROVOD_FUSION_THRESHOLD=1024", "KOLOX=1", "MY_KOLO_A=1",
                                         "HOROVOD_=1"});
  const LaunchCommand c = build_mpirun_command(options_for(2), {}, context);
  CHECK(has_piece(c.argv, {"oob_tcp_keepalive_probes", "3", "-x", "HOROVOD_FUSION_THRESHOLD", "-x", "KOLO_CYCLE_TIME", "-x",
                           "NCCL_DEBUG", "/opt/kolo/bin/kolorun"}));
  CHECK(std::count(c.argv.begin(), c.argv.end(), "-x") == 3);
}

TEST_CASE("a flag wins over the same variable in the environment", "[command]") {
  LaunchOptions o = options_for(2);
  o.cache_capacity = 7;
  const LaunchCommand c =
      build_mpirun_command(o, {}, machine({"KOLO_CACHE_CAPACITY=5", "KOLO_CYCLE_TIME=2"}));
  CHECK(has_piece(c.argv, {"-x", "KOLO_CYCLE_TIME", "-x", "KOLO_CACHE_CAPACITY=7"}));
  CHECK_FALSE(has_word(c.argv, "KOLO_CACHE_CAPACITY"));
}

TEST_CASE("KOLO_MPIRUN replaces mpirun and --mpi-args go just before the ranks' command",
          "[command]") {
  LaunchOptions o = options_for(2);
  o.mpi_args = {"--mca", "btl", "tcp,self"};
  LaunchContext context = machine();
  context.mpirun = "/tmp/netns-hosts/mpirun";
  const LaunchCommand c = build_mpirun_command(o, {}, context);
  CHECK(c.argv.front() == "/tmp/netns-hosts/mpirun");
  CHECK(has_piece(c.argv, concat({"--mca", "btl", "tcp,self"}, kRanks)));
}

TEST_CASE("inside a SLURM allocation srun starts the ranks through PMIx", "[command][slurm]") {
  const LaunchContext context = machine({"SLURM_JOB_ID=42", "PATH=/usr/bin"});
  LaunchOptions o = options_for(4);
  CHECK(choose_launcher(o, context.environment) == Launcher::Srun);
  o.fusion_threshold_mb = 1;
  o.network_interface = "eth0";
  const LaunchCommand c = build_command(o, {}, context);
  CHECK(c.launcher == Launcher::Srun);
  CHECK(c.argv == concat({"srun", "--mpi=pmix", "-n", "4", "--label", "--export=ALL", "--kill-on-bad-exit=1"}, kRanks));
  CHECK(c.set == std::vector<EnvVar>{{"KOLO_FUSION_THRESHOLD", "1048576"},
                                     {"NCCL_SOCKET_IFNAME", "eth0"},
                                     {"OMPI_MCA_mpi_yield_when_idle", "1"},
                                     {"OMPI_MCA_btl_tcp_if_include", "eth0"},
                                     {"OMPI_MCA_oob_tcp_if_include", "eth0"}});
}

TEST_CASE("srun takes no host list", "[command][slurm]") {
  LaunchOptions o = options_for(2);
  o.launcher = LauncherChoice::Srun;
  CHECK_THROWS_WITH(check_hosts_for_launcher(o, {{"node0", 2}}, machine({"SLURM_JOB_ID=42"})),
                    Contains("--launcher mpirun"));
  CHECK_THROWS(build_command(o, {{"node0", 2}}, machine({"SLURM_JOB_ID=42"})));
  CHECK_NOTHROW(check_hosts_for_launcher(o, {}, machine({"SLURM_JOB_ID=42"})));
}

TEST_CASE("a Gloo job's hosts are checked before anything starts", "[command][gloo]") {
  LaunchOptions o = options_for(3);
  o.gloo = true;
  CHECK_THROWS_WITH(check_hosts_for_launcher(o, {{"localhost", 2}}, machine()), Contains("-np 3 but the hosts have 2"));
  CHECK_NOTHROW(check_hosts_for_launcher(o, {{"localhost", 3}}, machine()));
  // Inside an allocation each worker is an srun step on a named node.
  CHECK_THROWS_WITH(check_hosts_for_launcher(o, {}, machine({"SLURM_JOB_ID=42"})), Contains("name the nodes with -H"));
  // The interface its workers reach kolorun on must be this host's.
  o.network_interface = "no-such-interface0";
  CHECK_THROWS_WITH(check_hosts_for_launcher(o, {{"localhost", 3}}, machine()),
                    Contains("--network-interface no-such-interface0: no such interface or subnet on this host"));
  o.network_interface = "127.0.0.0/8";
  CHECK_NOTHROW(check_hosts_for_launcher(o, {{"localhost", 3}}, machine()));
}

TEST_CASE("mpirun chosen inside an allocation drops the node's vader directory",
          "[command][slurm]") {
  LaunchOptions o = options_for(2);
  o.launcher = LauncherChoice::Mpirun;
  const Environment env = {"SLURM_JOB_ID=42", "OMPI_MCA_btl_vader_backing_directory=/tmp/node0"};
  const LaunchCommand c = build_command(o, {}, machine(env));
  CHECK(c.launcher == Launcher::Mpirun);
  CHECK(c.unset == std::vector<std::string>{"OMPI_MCA_btl_vader_backing_directory"});
  CHECK_THAT(format_command(c), Contains("env -u OMPI_MCA_btl_vader_backing_directory mpirun "));
  // Outside SLURM the variable is the user's business.
  o.launcher = LauncherChoice::Auto;
  CHECK(build_command(o, {}, machine({"OMPI_MCA_btl_vader_backing_directory=/x"})).unset.empty());
}

TEST_CASE("printed commands are quoted for a POSIX shell", "[command]") {
  CHECK(shell_quote("plain-word_1.0/x:y,z=2") == "plain-word_1.0/x:y,z=2");
  CHECK(shell_quote("two words") == "'two words'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("$HOME;rm") == "'$HOME;rm'");
  LaunchCommand c;
  c.argv = {"mpirun", "prog", "a b", "*"};
  c.set = {{"A", "x y"}};
  CHECK(format_command(c) == "env 'A=x y' mpirun prog 'a b' '*'");
}
