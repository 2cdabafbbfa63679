#include "options.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "kolo/kolo.h"

namespace kolo::launcher {
namespace {

[[noreturn]] void bad_command_line(const std::string& message) {
  throw Error(StatusCode::InvalidArgument,
              "kolorun: " + message + " (see kolorun --help)");
}

std::string lower_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::vector<std::string> split_on_spaces(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// horovodrun spells the rank count `-np`, which CLI11 cannot declare (one dash means one
// letter). Rewrite it to `--np` among kolorun's own arguments only: the scan stops at the
// program, whose own arguments may well contain `-np`.
std::vector<std::string> spell_np_for_cli11(std::vector<std::string> args, const CLI::App& app) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& token = args[i];
    if (token == "--" || token.empty() || token[0] != '-') break;
    if (token == "-np") token = "--np";
    if (token.rfind("-np=", 0) == 0) token = "-" + token;
    const std::string name = token.substr(0, token.find('='));
    const CLI::Option* option = app.get_option_no_throw(name);
    const bool value_attached = token.find('=') != std::string::npos ||
                                (token.size() > 2 && token[1] != '-');  // -Hhost:2
    if (option != nullptr && option->get_items_expected_min() > 0 && !value_attached) ++i;
  }
  return args;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean --fusion-threshold-mb?)" for a flag a few typos away from a real one.
std::string suggestion_for(const std::string& flag, const CLI::App& app) {
  const std::string name = flag.substr(0, flag.find('='));
  std::string best;
  size_t best_distance = 4;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& long_name : option->get_lnames()) {
      const size_t distance = edit_distance(name, "--" + long_name);
      if (distance < best_distance) best = "--" + long_name, best_distance = distance;
    }
  }
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

}  // namespace

std::optional<LaunchOptions> parse_command_line(const std::vector<std::string>& args) {
  LaunchOptions o;
  CLI::App app{"kolorun: start a kolo training job on N ranks, like horovodrun.", "kolorun"};
  app.footer(
      "Usage: kolorun -np N [-H host1:slots,host2:slots | --hostfile F] [flags] program [args...]\n"
      "(-np and --np are the same flag.) Inside a SLURM allocation the ranks are started\n"
      "with srun, elsewhere with mpirun (or $KOLO_MPIRUN). See docs/launcher.md.");
  app.prefix_command();  // everything from the program on belongs to the program

  app.add_option("--np", o.num_ranks, "number of ranks (horovodrun: -np)")
      ->check(CLI::PositiveNumber);
  auto* hosts = app.add_option("-H,--hosts", o.hosts,
                               "hosts and their slots: host1:2,host2:2 (a host without "
                               ":slots has one slot)");
  app.add_option("--hostfile", o.hostfile,
                 "file with one host per line: 'host slots=N' or 'host:N'")
      ->excludes(hosts);
  std::string launcher = "auto";
  app.add_option("--launcher", launcher,
                 "auto: srun inside a SLURM allocation (SLURM_JOB_ID set), else mpirun")
      ->check(CLI::IsMember({"auto", "mpirun", "srun"}));
  app.add_flag("--verbose", o.verbose, "print the command, the forwarded variables and rank starts");
  app.add_flag("--dry-run", o.dry_run, "print the launch command (shell-quoted) and exit");
  app.add_flag("--check-build", o.check_build,
               "print what this build of kolo has (MPI, NCCL, CUDA, cuDNN) and exit");

  app.add_option("--fusion-threshold-mb", o.fusion_threshold_mb,
                 "fusion buffer size in MiB (sets KOLO_FUSION_THRESHOLD in bytes; 0: no fusion)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cycle-time-ms", o.cycle_time_ms, "KOLO_CYCLE_TIME, milliseconds")
      ->check(CLI::NonNegativeNumber);
  auto* cache = app.add_option("--cache-capacity", o.cache_capacity,
                               "KOLO_CACHE_CAPACITY, response-cache slots (0: no cache)")
                    ->check(CLI::Range(0LL, 1LL << 20));
  app.add_flag("--disable-cache", o.disable_cache, "KOLO_CACHE_CAPACITY=0")->excludes(cache);
  app.add_option("--timeline-filename", o.timeline_filename,
                 "KOLO_TIMELINE: rank 0 writes a Chrome-trace timeline there");
  app.add_flag("--hierarchical-allreduce", o.hierarchical_allreduce,
               "KOLO_HIERARCHICAL_ALLREDUCE=1");
  app.add_flag("--hierarchical-allgather", o.hierarchical_allgather,
               "KOLO_HIERARCHICAL_ALLGATHER=1");
  app.add_option("--log-level", o.log_level,
                 "KOLO_LOG_LEVEL: trace, debug, info, warning, error or fatal");
  app.add_flag("--autotune", o.autotune, "KOLO_AUTOTUNE=1");
  app.add_option("--autotune-log-file", o.autotune_log_file, "KOLO_AUTOTUNE_LOG");
  app.add_flag("--no-stall-check", o.no_stall_check, "KOLO_STALL_CHECK_DISABLE=1");
  app.add_option("--stall-check-warning-time-seconds", o.stall_check_warning_seconds,
                 "KOLO_STALL_CHECK_TIME_SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--stall-check-shutdown-time-seconds", o.stall_check_shutdown_seconds,
                 "KOLO_STALL_SHUTDOWN_TIME_SECONDS")
      ->check(CLI::NonNegativeNumber);

  app.add_option("--network-interface", o.network_interface,
                 "interfaces or subnets MPI uses (btl/oob_tcp_if_include), e.g. eth0 or "
                 "10.0.0.0/24; interface names also set NCCL_SOCKET_IFNAME");
  app.add_option("--start-timeout", o.start_timeout_seconds,
                 "seconds for every rank's process to start (0: no bound)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--kill-grace", o.kill_grace_seconds,
                 "seconds between SIGTERM and SIGKILL when the job is stopped")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--output-filename", o.output_filename,
                 "directory for per-rank logs: DIR/rank.N/stdout and DIR/rank.N/stderr");
  std::string mpi_args;
  app.add_option("--mpi-args", mpi_args, "extra arguments for mpirun (or srun), space-separated");

  std::vector<std::string> reversed = spell_np_for_cli11(args, app);
  std::reverse(reversed.begin(), reversed.end());  // CLI11 consumes a vector from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    bad_command_line(e.what());
  }

  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-')
    bad_command_line("unknown flag '" + rest.front() + "'" + suggestion_for(rest.front(), app));
  o.command = rest;

  o.launcher = launcher == "mpirun" ? LauncherChoice::Mpirun
               : launcher == "srun" ? LauncherChoice::Srun
                                    : LauncherChoice::Auto;
  o.mpi_args = split_on_spaces(mpi_args);
  if (!o.log_level.empty()) {
    o.log_level = lower_case(o.log_level);
    static const std::vector<std::string> levels = {"trace", "debug", "info", "warning",
                                                    "warn",  "error", "fatal"};
    if (std::find(levels.begin(), levels.end(), o.log_level) == levels.end())
      bad_command_line("--log-level '" + o.log_level +
                       "': expected one of trace, debug, info, warning, error, fatal");
  }
  if (o.check_build) return o;
  if (o.num_ranks == 0) bad_command_line("-np N is required (the number of ranks)");
  if (o.command.empty()) bad_command_line("no program given: kolorun -np N [flags] program [args...]");
  return o;
}

}  // namespace kolo::launcher
