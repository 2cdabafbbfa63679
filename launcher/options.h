// kolorun's command line: what the user asked for, before anything is checked against
// the machine. Flags map to horovodrun's (docs/launcher.md has the table).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kolo::launcher {

enum class LauncherChoice { Auto, Mpirun, Srun };

struct LaunchOptions {
  int num_ranks = 0;                 // -np, as given: check_rank_count (preflight.h) bounds it
  std::string hosts;                 // -H host1:slots,host2:slots (checked: parse_host_list)
  std::string hostfile;              // --hostfile F
  bool oversubscribe = false;        // more ranks than slots (mpirun --oversubscribe)
  LauncherChoice launcher = LauncherChoice::Auto;
  bool verbose = false;
  bool dry_run = false;
  bool check_build = false;
  bool gloo = false;                 // --gloo: kolorun starts the workers over Gloo (gloo_launch.h)

  // Elastic jobs (elastic_driver.h), with horovodrun's meanings. --min-np, --max-np or
  // --host-discovery-script makes the job elastic (and Gloo); -np is then the number to
  // start with (default --min-np).
  std::optional<int> min_np, max_np;
  std::optional<int> slots_per_host;      // --slots-per-host (--slots): a discovered host's slots
  std::string host_discovery_script;      // prints "host[:slots]" lines; run every second
  double elastic_timeout_seconds = 600;   // a re-forming job's wait for its workers and hosts
  std::optional<int> reset_limit;         // re-formings allowed; unset: no limit
  std::optional<std::pair<double, double>> blacklist_cooldown;  // seconds; unset: a failed host stays out
  bool elastic() const { return min_np || max_np || !host_discovery_script.empty(); }

  // Runtime settings, forwarded to every rank as KOLO_ variables (environment.cc).
  // Unset: the ranks' own environment (or kolo's default) decides.
  std::optional<double> fusion_threshold_mb;
  std::optional<double> cycle_time_ms;
  std::optional<long long> cache_capacity;
  bool disable_cache = false;
  std::string timeline_filename;
  bool timeline_mark_cycles = false;
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  std::string log_level;             // lower case
  bool autotune = false;
  std::string autotune_log_file;
  bool no_stall_check = false;
  std::optional<double> stall_check_warning_seconds;
  std::optional<double> stall_check_shutdown_seconds;

  // How the job is started and watched.
  std::string network_interface;     // --network-interface eth0 or 10.0.0.0/24
  double start_timeout_seconds = 30; // 0: no bound
  double kill_grace_seconds = 10;    // SIGTERM to the launcher, then SIGKILL after this
  double kill_after_failure_seconds = 10;  // a rank still running this long after a failure is killed
  std::string output_filename;       // directory for per-rank logs
  std::vector<std::string> mpi_args; // --mpi-args, split on spaces, given to mpirun/srun

  std::vector<std::string> command;  // the program and its arguments
};

// Parses kolorun's arguments (argv without argv[0]). Returns nullopt when the user
// only asked for --help (already printed to stdout). Throws kolo::Error
// (InvalidArgument) naming the bad flag or value. -np must be a whole number here; whether
// the hosts have room for that many ranks is check_rank_count's to say (preflight.h).
// -H is checked with parse_host_list.
std::optional<LaunchOptions> parse_command_line(const std::vector<std::string>& args);

// The words of `text`, split on whitespace (--mpi-args, a remote agent's command).
std::vector<std::string> split_on_spaces(const std::string& text);

}  // namespace kolo::launcher
