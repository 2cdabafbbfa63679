#include <catch2/catch.hpp>

#include "kolo/kolo.h"
#include "options.h"

using namespace kolo::launcher;
using Catch::Matchers::Contains;

namespace {

LaunchOptions parse(std::vector<std::string> args) {
  std::optional<LaunchOptions> options = parse_command_line(args);
  REQUIRE(options.has_value());
  return *options;
}

// The message of the error a bad command line gives.
std::string error_of(const std::vector<std::string>& args) {
  try {
    parse_command_line(args);
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    return std::string(e.what());
  }
  FAIL("no error for a bad command line");
  return std::string();
}

}  // namespace

TEST_CASE("the flags -np and --np are the same", "[options]") {
  CHECK(parse({"-np", "4", "prog"}).num_ranks == 4);
  CHECK(parse({"--np", "3", "prog"}).num_ranks == 3);
  CHECK(parse({"--np=5", "prog"}).num_ranks == 5);
}

TEST_CASE("everything from the program on belongs to the program", "[options]") {
  const LaunchOptions o = parse({"--verbose", "-np", "2", "-H", "a:2", "prog", "-np", "5", "--verbose", "x y"});
  CHECK(o.num_ranks == 2);
  CHECK(o.hosts == "a:2");
  CHECK(o.verbose);
  CHECK(o.command == std::vector<std::string>{"prog", "-np", "5", "--verbose", "x y"});
  CHECK(parse({"-np", "2", "--", "-prog", "--dry-run"}).command ==
        std::vector<std::string>{"-prog", "--dry-run"});
  CHECK_FALSE(parse({"-np", "2", "--", "-prog", "--dry-run"}).dry_run);
}

TEST_CASE("runtime flags are read with their units", "[options]") {
  const LaunchOptions o = parse({"-np", "1", "--fusion-threshold-mb", "32", "--cycle-time-ms", "0.5",
                                 "--cache-capacity", "7", "--timeline-filename", "/tmp/t.json",
                                 "--timeline-mark-cycles", "--hierarchical-allreduce", "--log-level", "DEBUG",
                                 "--start-timeout", "5", "--network-interface", "eth0",
                                 "--output-filename", "logs", "--mpi-args", "--mca btl tcp,self",
                                 "prog"});
  CHECK(*o.fusion_threshold_mb == 32);
  CHECK(*o.cycle_time_ms == 0.5);
  CHECK(*o.cache_capacity == 7);
  CHECK(o.timeline_filename == "/tmp/t.json");
  CHECK(o.timeline_mark_cycles);
  CHECK(o.hierarchical_allreduce);
  CHECK(o.log_level == "debug");
  CHECK(o.start_timeout_seconds == 5);
  CHECK(o.network_interface == "eth0");
  CHECK(o.output_filename == "logs");
  CHECK(o.mpi_args == std::vector<std::string>{"--mca", "btl", "tcp,self"});
}

TEST_CASE("defaults: 30 s start timeout, 10 s kill grace, launcher chosen automatically", "[options]") {
  const LaunchOptions o = parse({"-np", "1", "prog"});
  CHECK(o.start_timeout_seconds == 30);
  CHECK(o.kill_grace_seconds == 10);
  CHECK(o.launcher == LauncherChoice::Auto);
  CHECK_FALSE(o.fusion_threshold_mb.has_value());
  CHECK(parse({"-np", "1", "--launcher", "srun", "prog"}).launcher == LauncherChoice::Srun);
  CHECK(parse({"-np", "1", "--launcher", "mpirun", "prog"}).launcher == LauncherChoice::Mpirun);
}

TEST_CASE("check-build needs neither -np nor a program", "[options]") {
  CHECK(parse({"--check-build"}).check_build);
}

TEST_CASE("horovodrun's one-dash long flags -hostfile and -cb are its double-dash ones", "[options]") {
  // Without the respelling, -hostfile reads as -h (help) and parse_command_line returns nothing.
  CHECK(parse({"-hostfile", "hosts", "-np", "2", "prog"}).hostfile == "hosts");
  CHECK(parse({"-hostfile=hosts", "-np", "2", "prog"}).hostfile == "hosts");
  CHECK(parse({"-cb"}).check_build);
  // Only kolorun's own arguments: the program's -hostfile stays the program's.
  const LaunchOptions o = parse({"-np", "2", "prog", "-hostfile", "x", "-cb"});
  CHECK(o.hostfile.empty());
  CHECK(o.command == std::vector<std::string>{"prog", "-hostfile", "x", "-cb"});
}

TEST_CASE("horovodrun's flags that kolorun lacks are refused with the reason, not as unknown", "[options]") {
  CHECK(error_of({"--jsrun", "-np", "2", "prog"}) ==
        "kolorun: --jsrun is not supported: kolorun starts the ranks with mpirun or srun (see --launcher) (see kolorun --help)");
  CHECK(parse({"--gloo", "-np", "2", "prog"}).gloo);
  CHECK_THAT(error_of({"--gloo", "--mpi", "-np", "2", "prog"}), Contains("excludes"));
  // Flags named after a Horovod setting kolo does not implement give that setting's reason.
  CHECK(error_of({"-np", "2", "--num-nccl-streams", "2", "prog"}) ==
        "kolorun: --num-nccl-streams is not supported: kolo uses one NCCL stream per device (see kolorun --help)");
  CHECK_THAT(error_of({"-np", "2", "--thread-affinity=1", "prog"}),
             Contains("--thread-affinity is not supported: kolo does not pin its background thread"));
  CHECK_THAT(error_of({"-np", "2", "--autotune-warmup-samples", "3", "prog"}), Contains("plain grid search"));
  CHECK_THAT(error_of({"-np", "2", "--mpi-threads-disable", "prog"}), Contains("MPI_THREAD_MULTIPLE"));
  CHECK_THAT(error_of({"-p", "2222", "-np", "2", "prog"}), Contains("-p is not supported"));
  CHECK_THAT(error_of({"-p", "2222", "-np", "2", "prog"}), Contains("OMPI_MCA_plm_rsh_args"));
  CHECK_THAT(error_of({"-np", "2", "--ssh-identity-file", "key", "prog"}), Contains("OMPI_MCA_plm_rsh_args"));
  CHECK_THAT(error_of({"-np", "2", "--config-file", "c.yaml", "prog"}), Contains("no configuration file"));
  CHECK_THAT(error_of({"-np", "2", "--tcp", "prog"}), Contains("NCCL_IB_DISABLE=1"));
  CHECK_THAT(error_of({"--version"}), Contains("--check-build prints kolo's version"));
  // Anything else is still unknown.
  CHECK(error_of({"-np", "2", "--frobnicate", "prog"}) == "kolorun: unknown flag '--frobnicate' (see kolorun --help)");
}

TEST_CASE("horovodrun's flags that mean what kolorun does anyway are accepted", "[options]") {
  CHECK(parse({"--mpi", "-np", "2", "prog"}).command == std::vector<std::string>{"prog"});
  CHECK(parse({"-np", "2", "--network-interfaces", "eth0,eth1", "prog"}).network_interface == "eth0,eth1");
}

TEST_CASE("the stall times are refused with --no-stall-check, which would make them do nothing", "[options]") {
  CHECK_THAT(error_of({"-np", "2", "--no-stall-check", "--stall-check-warning-time-seconds", "5", "prog"}),
             Contains("--no-stall-check excludes --stall-check-warning-time-seconds"));
  CHECK_THAT(error_of({"-np", "2", "--stall-check-shutdown-time-seconds", "50", "--no-stall-check", "prog"}),
             Contains("--stall-check-shutdown-time-seconds"));
  const LaunchOptions o = parse({"-np", "2", "--stall-check-warning-time-seconds", "5",
                                 "--stall-check-shutdown-time-seconds", "50", "prog"});
  CHECK(*o.stall_check_warning_seconds == 5);
  CHECK(*o.stall_check_shutdown_seconds == 50);
  CHECK(parse({"-np", "2", "--no-stall-check", "prog"}).no_stall_check);
}

TEST_CASE("a bad command line is an error that names the problem", "[options]") {
  CHECK_THAT(error_of({"--bogus", "-np", "2", "prog"}), Contains("unknown flag '--bogus'"));
  CHECK_THAT(error_of({"-np", "2", "--bogus", "prog"}), Contains("unknown flag '--bogus'"));
  CHECK_THAT(error_of({"-np", "2", "--fusion-treshold-mb", "4", "prog"}),
             Contains("unknown flag '--fusion-treshold-mb' (did you mean --fusion-threshold-mb?)"));
  CHECK_THAT(error_of({"prog"}), Contains("-np N is required"));
  CHECK_THAT(error_of({"-np", "2"}), Contains("no program given"));
  CHECK(error_of({"-np", "two", "prog"}) ==
        "kolorun: -np must be a whole number of ranks, 1 or more, not 'two' (see kolorun --help)");
  CHECK(error_of({"-np", "2.5", "prog"}) ==
        "kolorun: -np must be a whole number of ranks, 1 or more, not '2.5' (see kolorun --help)");
  CHECK(error_of({"-np", "99999999999", "prog"}) ==
        "kolorun: -np must be between 1 and the slots of the hosts, not 99999999999 (see kolorun --help)");
  CHECK_THAT(error_of({"-np", "2", "--fusion-threshold-mb", "-1", "prog"}), Contains("--fusion-threshold-mb"));
  CHECK_THAT(error_of({"-np", "2", "--cache-capacity", "2000000", "prog"}), Contains("--cache-capacity"));
  CHECK_THAT(error_of({"-np", "2", "--log-level", "loud", "prog"}), Contains("--log-level 'loud'"));
  CHECK_THAT(error_of({"-np", "2", "--launcher", "ssh", "prog"}), Contains("--launcher"));
  CHECK_THAT(error_of({"-np", "2", "-H", "a:1", "--hostfile", "f", "prog"}), Contains("--hostfile"));
  CHECK_THAT(error_of({"-np", "2", "--disable-cache", "--cache-capacity", "3", "prog"}),
             Contains("--cache-capacity"));
  CHECK_THAT(error_of({"-np", "2", "--start-timeout", "prog"}), Contains("--start-timeout"));
  // Numbers are finite and at most 1e9: nan would pass a sign check, and 1e13 MiB overflows
  // the byte count kolorun computes from it.
  CHECK(error_of({"-np", "2", "--fusion-threshold-mb", "1e13", "prog"}) ==
        "kolorun: --fusion-threshold-mb: must be a number in [0, 1e9], not '1e13' (see kolorun --help)");
  for (const char* flag : {"--cycle-time-ms", "--start-timeout", "--kill-grace", "--stall-check-warning-time-seconds"})
    for (const char* value : {"nan", "inf", "-1", "abc", "1e300"}) {
      INFO(flag << " " << value);
      CHECK_THAT(error_of({"-np", "2", flag, value, "prog"}), Contains(std::string(flag) + ": must be a number in [0"));
    }
  CHECK_THAT(error_of({"--min-np", "1", "--elastic-timeout", "0", "prog"}), Contains("must be a number in (0, 5e8]"));
  // What kolorun gives mpirun itself cannot come again through --mpi-args.
  CHECK_THAT(error_of({"-np", "1", "--mpi-args", "--oversubscribe -np 3", "prog"}),
             Contains("--mpi-args '-np': kolorun gives mpirun (or srun) that itself"));
  for (const char* other_spelling : {"-c 2", "--n 2", "--ntasks=8", "-n8", "-np8", "-c2"})
    CHECK_THAT(error_of({"-np", "1", "--mpi-args", other_spelling, "prog"}), Contains("kolorun gives mpirun"));
  CHECK(parse({"-np", "1", "--mpi-args", "-nolocal --cpus-per-task=2", "prog"}).mpi_args.size() == 2);
  CHECK_THAT(error_of({"-np", "1", "--mpi-args", "--hostfile=h", "prog"}), Contains("--mpi-args '--hostfile=h'"));
  CHECK(parse({"-np", "1", "--mpi-args", "--mca btl self,vader", "prog"}).mpi_args.size() == 3);
  // An empty file, folder, level or interface would silently mean "not given".
  for (const char* flag : {"--output-filename", "--timeline-filename", "--log-level", "--network-interface",
                           "--autotune-log-file", "--host-discovery-script"})
    CHECK(error_of({"-np", "1", flag, "", "prog"}) ==
          "kolorun: " + std::string(flag) + " needs a value, not '' (see kolorun --help)");
  // A Gloo or elastic job has no launch command to print.
  CHECK_THAT(error_of({"-np", "1", "--gloo", "--dry-run", "prog"}), Contains("--dry-run prints the mpirun or srun"));
  CHECK_THAT(error_of({"--min-np", "1", "--dry-run", "prog"}), Contains("--dry-run prints the mpirun or srun"));
}

TEST_CASE("the parser reads -np as given: its range against the slots is check_rank_count's", "[options]") {
  CHECK(parse({"-np", "0", "prog"}).num_ranks == 0);
  CHECK(parse({"-np", "-3", "prog"}).num_ranks == -3);
  CHECK(parse({"-np", "2147483647", "prog"}).num_ranks == 2147483647);
  CHECK_FALSE(parse({"-np", "2", "prog"}).oversubscribe);
  CHECK(parse({"-np", "2", "--oversubscribe", "prog"}).oversubscribe);
}

TEST_CASE("an empty -H or --hostfile is refused, not read as this machine", "[options][hosts]") {
  CHECK(error_of({"-np", "2", "-H", "", "prog"}) ==
        "kolorun: -H: no hosts given: expected host1:slots,host2:slots (a host without :slots has one slot)");
  CHECK(error_of({"-np", "2", "--hosts=", "prog"}) == error_of({"-np", "2", "-H", "", "prog"}));
  CHECK(error_of({"-np", "2", "--hostfile", "", "prog"}) ==
        "kolorun: --hostfile must name a file of hosts, not '' (see kolorun --help)");
  // -H is checked with the command line, before anything looks at the machine.
  CHECK_THAT(error_of({"-np", "2", "-H", "node0:2,node0:2", "prog"}), Contains("listed twice"));
}

TEST_CASE("elastic flags make an elastic Gloo job, with horovodrun's meanings", "[options][elastic]") {
  const LaunchOptions o = parse({"--min-np", "2", "--max-np", "4", "--host-discovery-script", "./hosts.sh",
                                 "--slots-per-host", "2", "--elastic-timeout", "60", "--reset-limit", "3",
                                 "--blacklist-cooldown-range", "10", "100", "prog"});
  CHECK((o.elastic() && o.gloo && o.min_np == 2 && o.max_np == 4 && o.slots_per_host == 2));
  CHECK((o.host_discovery_script == "./hosts.sh" && o.elastic_timeout_seconds == 60 && o.reset_limit == 3));
  CHECK(o.blacklist_cooldown == std::pair{10.0, 100.0});
  CHECK(o.num_ranks == 2);  // -np defaults to --min-np
  CHECK(o.command == std::vector<std::string>{"prog"});
  CHECK(parse({"-np", "3", "--max-np", "4", "prog"}).num_ranks == 3);
  CHECK_FALSE(parse({"-np", "3", "prog"}).elastic());
  CHECK_THAT(error_of({"--min-np", "3", "--max-np", "2", "prog"}), Contains("--min-np 3 is more than --max-np 2"));
  CHECK_THAT(error_of({"--min-np", "2", "--blacklist-cooldown-range", "5", "1", "prog"}),
             Contains("0 <= MIN <= MAX"));
  CHECK_THAT(error_of({"--min-np", "0", "prog"}), Contains("--min-np"));
  CHECK(error_of({"-np", "3", "--max-np", "2", "prog"}) == "kolorun: -np 3 is more than --max-np 2 (see kolorun --help)");
  CHECK(error_of({"-np", "1", "--min-np", "2", "prog"}) == "kolorun: -np 1 is fewer than --min-np 2 (see kolorun --help)");
}
