#include "options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

#include "hosts.h"
#include "preflight.h"
#include "kolo/kolo.h"
#include "runtime/closest_name.h"
#include "runtime/unimplemented_horovod_settings.h"

namespace kolo::launcher {
namespace {

[[noreturn]] void bad_command_line(const std::string& message) {
  throw Error(StatusCode::InvalidArgument,
              "kolorun: " + message + " (see kolorun --help)");
}

// A number of seconds, milliseconds or MiB: finite and from `low` to `high` (CLI11's
// NonNegativeNumber lets nan through, and 1e300 would overflow what kolorun computes
// from it).
// A worker's own bound is twice this, plus 30 s, and must stay under the runtime's 2^30 s.
constexpr double kMaxElasticTimeoutSeconds = 5e8;

CLI::Validator number_from(double low, bool low_included, double high = 1e9, const char* high_text = "1e9") {
  const std::string range = std::string(low_included ? "[" : "(") + CLI::detail::to_string(low) + ", " + high_text + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        const bool above_low = low_included ? value >= low : value > low;
        if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value) || !above_low || value > high)
          return "must be a number in " + range + ", not '" + text + "'";
        return "";
      },
      "NUMBER in " + range);
}

std::string lower_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// -np's number: any whole number that fits an int (check_rank_count says which are allowed).
int parse_rank_count(const std::string& text) {
  int ranks = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, ranks);
  if (error == std::errc::result_out_of_range)
    bad_command_line("-np must be between 1 and the slots of the hosts, not " + text);
  if (error != std::errc() || stop != end || text.empty())
    bad_command_line("-np must be a whole number of ranks, 1 or more, not '" + text + "'");
  return ranks;
}

// horovodrun's flags with one dash and a long name, which CLI11 cannot declare (one dash
// means one letter: `-hostfile` would read as -h, help), and `--flag=` with an empty value,
// which CLI11 would give the next word. They are respelt among kolorun's own arguments
// only: the scan stops at the program, whose own arguments may well contain `-np`.
constexpr std::pair<std::string_view, std::string_view> kSingleDashFlags[] = {
    {"-np", "--np"}, {"-hostfile", "--hostfile"}, {"-cb", "--check-build"}};

constexpr std::string_view kTwoValueFlag = "--blacklist-cooldown-range";

std::vector<std::string> respell_for_cli11(std::vector<std::string> args, const CLI::App& app) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& token = args[i];
    if (token == "--" || token.empty() || token[0] != '-') break;
    for (const auto& [single, double_dash] : kSingleDashFlags)
      if (token.substr(0, token.find('=')) == single) token = std::string(double_dash) + token.substr(single.size());
    const std::string name = token.substr(0, token.find('='));
    const CLI::Option* option = app.get_option_no_throw(name);
    const bool takes_value = option != nullptr && option->get_items_expected_min() > 0;
    if (takes_value && token == name + "=") {
      // CLI11 would take the next word as the value of `--hosts=`: the value is empty.
      token = name;
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, "");
      ++i;
      continue;
    }
    const bool value_attached = token.find('=') != std::string::npos ||
                                (token.size() > 2 && token[1] != '-');  // -Hhost:2
    if (token == kTwoValueFlag && i + 2 < args.size()) {
      // horovodrun's `--blacklist-cooldown-range MIN MAX`: one value for CLI11, "MIN MAX".
      args[i + 1] += " " + args[i + 2];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    }
    if (takes_value && !value_attached) ++i;
  }
  return args;
}

// horovodrun's flags that kolorun does not take, and why or what to do instead: refused
// with this rather than as unknown flags. A flag named after a Horovod setting kolo does
// not implement (--num-nccl-streams sets HOROVOD_NUM_NCCL_STREAMS) needs no entry: that
// setting's reason serves (unknown_flag_message).
constexpr std::string_view kSshOptions =
    "kolorun starts the ranks with mpirun or srun: give ssh's options to Open MPI, e.g. "
    "OMPI_MCA_plm_rsh_args='-p 2222 -i ~/.ssh/key' in the environment";
constexpr std::string_view kNoTimestamps = why_unimplemented("LOG_HIDE_TIME");
constexpr std::pair<std::string_view, std::string_view> kHorovodrunOnlyFlags[] = {
    {"-p", kSshOptions},
    {"--ssh-port", kSshOptions},
    {"-i", kSshOptions},
    {"--ssh-identity-file", kSshOptions},
    {"--jsrun", "kolorun starts the ranks with mpirun or srun (see --launcher)"},
    {"--config-file", "kolorun reads no configuration file: give the flags, or set KOLO_ variables"},
    {"--tcp", "give mpirun --mpi-args '--mca pml ob1 --mca btl ^openib' and set NCCL_IB_DISABLE=1"},
    {"--binding-args", "kolorun leaves the ranks unbound (-bind-to none): kolo's background thread needs "
                       "a core besides the program's"},
    {"--no-hierarchical-allreduce", "kolo's autotuner never turns the hierarchical allreduce on: leave "
                                    "--hierarchical-allreduce out"},
    {"--no-hierarchical-allgather", "kolo's autotuner never turns the hierarchical allgather on: leave "
                                    "--hierarchical-allgather out"},
    {"--log-with-timestamp", kNoTimestamps},
    {"--log-without-timestamp", kNoTimestamps},
    {"--log-hide-timestamp", kNoTimestamps},
    {"-prefix-timestamp", "kolorun does not timestamp the ranks' output"},
    {"--prefix-output-with-timestamp", "kolorun does not timestamp the ranks' output"},
    {"-v", "kolorun --check-build prints kolo's version"},
    {"--version", "kolorun --check-build prints kolo's version"},
};

// The Horovod setting a horovodrun flag is named after: --num-nccl-streams -> NUM_NCCL_STREAMS.
std::string setting_named_by(std::string_view flag) {
  std::string name;
  for (char c : flag.substr(std::min(flag.find_first_not_of('-'), flag.size())))
    name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// Why kolorun refuses `flag`: horovodrun's reason, or a near miss of kolorun's own flags.
std::string unknown_flag_message(const std::string& flag, const CLI::App& app) {
  const std::string name = flag.substr(0, flag.find('='));
  std::string_view why = why_unimplemented(setting_named_by(name));
  for (const auto& [horovodrun_flag, reason] : kHorovodrunOnlyFlags)
    if (name == horovodrun_flag) why = reason;
  if (!why.empty()) return name + " is not supported: " + std::string(why);
  std::vector<std::string> flags;
  for (const CLI::Option* option : app.get_options())
    for (const std::string& long_name : option->get_lnames()) flags.push_back("--" + long_name);
  const std::string near = closest_name(name, flags, 3);
  return "unknown flag '" + flag + "'" + (near.empty() ? "" : " (did you mean " + near + "?)");
}

}  // namespace

std::vector<std::string> split_on_spaces(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::optional<LaunchOptions> parse_command_line(const std::vector<std::string>& args) {
  LaunchOptions o;
  CLI::App app{"kolorun: start a kolo training job on N ranks, like horovodrun.", "kolorun"};
  app.footer(
      "Usage: kolorun -np N [-H host1:slots,host2:slots | --hostfile F] [flags] program [args...]\n"
      "(-np and --np are the same flag.) Inside a SLURM allocation the ranks are started\n"
      "with srun, elsewhere with mpirun (or $KOLO_MPIRUN). See docs/launcher.md.");
  app.prefix_command();  // everything from the program on belongs to the program

  std::string num_ranks;  // parsed below, for a message in kolorun's words
  auto* np = app.add_option("--np", num_ranks,
                            "number of ranks, 1 up to the hosts' slots (horovodrun: -np); elastic: the job "
                            "starts once this many slots are usable");
  auto* hosts = app.add_option("-H,--hosts", o.hosts,
                               "hosts and their slots: host1:2,host2:2 (a host without "
                               ":slots has one slot)");
  auto* hostfile = app.add_option("--hostfile", o.hostfile,
                                  "file with one host per line: 'host slots=N' or 'host:N'")
                       ->excludes(hosts);
  app.add_flag("--oversubscribe", o.oversubscribe,
               "allow more ranks than the hosts' slots (mpirun --oversubscribe, srun --overcommit); "
               "without hosts the slots are this machine's cores");
  std::string launcher = "auto";
  app.add_option("--launcher", launcher,
                 "auto: srun inside a SLURM allocation (SLURM_JOB_ID set), else mpirun")
      ->check(CLI::IsMember({"auto", "mpirun", "srun"}));
  app.add_flag("--verbose", o.verbose, "print the command, the forwarded variables and rank starts");
  app.add_flag("--dry-run", o.dry_run, "print the launch command (shell-quoted) and exit");
  app.add_flag("--check-build", o.check_build,
               "print what this build of kolo has (MPI, NCCL, CUDA, cuDNN) and exit (horovodrun: -cb)");
  auto* mpi = app.add_flag("--mpi")->description("run over MPI, started by mpirun or srun (the default)");
  app.add_flag("--gloo", o.gloo,
               "run over Gloo's TCP transport without mpirun: kolorun starts the workers and serves their "
               "rendezvous (docs/elastic.md); CPU tensors only")
      ->excludes(mpi);

  app.add_option("--fusion-threshold-mb", o.fusion_threshold_mb,
                 "fusion buffer size in MiB (sets KOLO_FUSION_THRESHOLD in bytes; 0: no fusion)")
      ->check(number_from(0, true));
  app.add_option("--cycle-time-ms", o.cycle_time_ms, "KOLO_CYCLE_TIME, milliseconds")
      ->check(number_from(0, true));
  auto* cache = app.add_option("--cache-capacity", o.cache_capacity,
                               "KOLO_CACHE_CAPACITY, response-cache slots (0: no cache)")
                    ->check(CLI::Range(0LL, 1LL << 20));
  app.add_flag("--disable-cache", o.disable_cache, "KOLO_CACHE_CAPACITY=0")->excludes(cache);
  auto* timeline_file = app.add_option("--timeline-filename", o.timeline_filename,
                                       "KOLO_TIMELINE: rank 0 writes a Chrome-trace timeline there");
  app.add_flag("--timeline-mark-cycles", o.timeline_mark_cycles,
               "KOLO_TIMELINE_MARK_CYCLES=1: the timeline marks each negotiation cycle");
  app.add_flag("--hierarchical-allreduce", o.hierarchical_allreduce,
               "KOLO_HIERARCHICAL_ALLREDUCE=1");
  app.add_flag("--hierarchical-allgather", o.hierarchical_allgather,
               "KOLO_HIERARCHICAL_ALLGATHER=1");
  auto* log_level = app.add_option("--log-level", o.log_level,
                                   "KOLO_LOG_LEVEL: trace, debug, info, warning, error or fatal");
  app.add_flag("--autotune", o.autotune, "KOLO_AUTOTUNE=1");
  auto* autotune_log = app.add_option("--autotune-log-file", o.autotune_log_file, "KOLO_AUTOTUNE_LOG");
  auto* no_stall_check = app.add_flag("--no-stall-check", o.no_stall_check, "KOLO_STALL_CHECK_DISABLE=1");
  // The stall times would do nothing with the check off: refused together.
  app.add_option("--stall-check-warning-time-seconds", o.stall_check_warning_seconds,
                 "KOLO_STALL_CHECK_TIME_SECONDS")
      ->check(number_from(0, true))
      ->excludes(no_stall_check);
  app.add_option("--stall-check-shutdown-time-seconds", o.stall_check_shutdown_seconds,
                 "KOLO_STALL_SHUTDOWN_TIME_SECONDS")
      ->check(number_from(0, true))
      ->excludes(no_stall_check);

  auto* interface = app.add_option("--network-interface,--network-interfaces", o.network_interface,
                                   "interfaces or subnets MPI uses (btl/oob_tcp_if_include), e.g. eth0, eth0,eth1 "
                                   "or 10.0.0.0/24; interface names also set NCCL_SOCKET_IFNAME");
  auto* start_timeout = app.add_option("--start-timeout", o.start_timeout_seconds,
                 "seconds for every rank's process to start (0: no bound)")
      ->capture_default_str()
      ->check(number_from(0, true));
  app.add_option("--kill-grace", o.kill_grace_seconds,
                 "seconds between SIGTERM and SIGKILL when the job is stopped")
      ->capture_default_str()
      ->check(number_from(0, true));
  app.add_option("--kill-after-failure", o.kill_after_failure_seconds,
                 "seconds after a rank has failed before kolorun kills the ranks still running")
      ->capture_default_str()
      ->check(number_from(0, true));
  // Elastic jobs (docs/elastic.md).
  app.add_option("--min-np,--min-num-proc", o.min_np,
                 "elastic: the fewest workers the job runs with (default: -np)")
      ->check(CLI::Range(1, kMaxRanks));
  app.add_option("--max-np,--max-num-proc", o.max_np,
                 "elastic: the most workers the job grows to (default: every usable slot)")
      ->check(CLI::Range(1, kMaxRanks));
  app.add_option("--slots-per-host,--slots", o.slots_per_host,
                 "elastic: the slots of a discovered host that does not say (default 1)")
      ->check(CLI::Range(1, kMaxRanks));
  auto* discovery = app.add_option(
      "--host-discovery-script", o.host_discovery_script,
      "elastic: a program printing the available hosts, one 'host[:slots]' per line; run every second");
  auto* elastic_timeout = app.add_option("--elastic-timeout", o.elastic_timeout_seconds,
                 "elastic: seconds a re-forming job waits for its workers and for --min-np slots (default 600)")
      ->check(number_from(0, false, kMaxElasticTimeoutSeconds, "5e8"));
  app.add_option("--reset-limit", o.reset_limit, "elastic: the job fails after this many re-formings")
      ->check(CLI::Range(0, 1 << 30));
  std::string cooldown_range;
  app.add_option("--blacklist-cooldown-range", cooldown_range,
                 "elastic: MIN MAX: a failed host stays out MIN * 2^n (its n-th failure) plus a random "
                 "fraction of MIN seconds, within [MIN, MAX], as horovodrun; default: for good");
  auto* output_dir = app.add_option("--output-filename", o.output_filename,
                                    "directory for per-rank logs: DIR/rank.N/stdout and DIR/rank.N/stderr");
  std::string mpi_args;
  app.add_option("--mpi-args", mpi_args, "extra arguments for mpirun (or srun), space-separated");

  std::vector<std::string> reversed = respell_for_cli11(args, app);
  std::reverse(reversed.begin(), reversed.end());  // CLI11 consumes a vector from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    bad_command_line(e.what());
  }

  // A file, folder, level or interface given empty would silently mean "not given".
  for (const CLI::Option* option : {timeline_file, log_level, autotune_log, interface, discovery, output_dir})
    if (option->count() > 0 && option->as<std::string>().empty())
      bad_command_line(option->get_name() + " needs a value, not ''");
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-')
    bad_command_line(unknown_flag_message(rest.front(), app));
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
  // An empty -H or --hostfile would silently mean "this machine".
  if (hosts->count() > 0) parse_host_list(o.hosts);
  if (hostfile->count() > 0 && o.hostfile.empty())
    bad_command_line("--hostfile must name a file of hosts, not ''");
  if (o.check_build) return o;
  if (!cooldown_range.empty()) {
    std::istringstream in(cooldown_range);
    double low = -1, high = -1;
    std::string rest;
    if (!(in >> low >> high) || (in >> rest) || !(low >= 0 && high >= low && high <= 1e9))
      bad_command_line("--blacklist-cooldown-range MIN MAX needs two numbers of seconds, 0 <= MIN <= MAX <= 1e9, "
                       "not '" + cooldown_range + "'");
    o.blacklist_cooldown = std::pair{low, high};
  }
  if (o.elastic()) {
    if (o.min_np && o.max_np && *o.min_np > *o.max_np)
      bad_command_line("--min-np " + std::to_string(*o.min_np) + " is more than --max-np " + std::to_string(*o.max_np));
    if (np->count() == 0 && !o.min_np)
      bad_command_line("an elastic job needs -np or --min-np: the workers it starts with");
    if (mpi->count() > 0)
      bad_command_line("--mpi: an elastic job (--min-np, --max-np, --host-discovery-script) runs over Gloo, since "
                       "an MPI job cannot re-form");
    o.gloo = true;  // an elastic job runs on Gloo: MPI cannot re-form
  }
  if (o.dry_run && o.gloo)
    bad_command_line("--dry-run prints the mpirun or srun command, and a Gloo or elastic job has none: kolorun "
                     "starts its workers itself");
  if (np->count() == 0 && o.elastic() && o.min_np) num_ranks = std::to_string(*o.min_np);
  if (np->count() == 0 && num_ranks.empty()) bad_command_line("-np N is required (the number of ranks)");
  o.num_ranks = parse_rank_count(num_ranks);
  if (np->count() > 0 && o.min_np && o.num_ranks < *o.min_np)
    bad_command_line("-np " + std::to_string(o.num_ranks) + " is fewer than --min-np " + std::to_string(*o.min_np));
  if (np->count() > 0 && o.max_np && o.num_ranks > *o.max_np)
    bad_command_line("-np " + std::to_string(o.num_ranks) + " is more than --max-np " + std::to_string(*o.max_np));
  // kolorun sets these on mpirun itself; given again, mpirun would start ranks, or place
  // them, where kolorun's checks and its rank bookkeeping do not expect them.
  // Every spelling counts: mpirun's -c, -n, --n and -np, srun's --ntasks and -n8.
  static const std::vector<std::string> own = {"-np", "-n", "--np", "--n", "-c", "--ntasks", "-H", "--host",
                                               "-host", "--hostfile", "-hostfile", "--machinefile",
                                               "-machinefile", "--tag-output", "-tag-output", "-bind-to",
                                               "--bind-to", "-map-by", "--map-by"};
  const auto rank_count_glued = [](const std::string& arg) {  // "-n8", "-np8", "-c8"
    for (const char* flag : {"-np", "-n", "-c"})
      if (arg.size() > std::strlen(flag) && arg.rfind(flag, 0) == 0 &&
          std::isdigit(static_cast<unsigned char>(arg[std::strlen(flag)])))
        return true;
    return false;
  };
  for (const std::string& arg : o.mpi_args)
    if (std::find(own.begin(), own.end(), arg.substr(0, arg.find('='))) != own.end() || rank_count_glued(arg))
      bad_command_line("--mpi-args '" + arg + "': kolorun gives mpirun (or srun) that itself; use kolorun's -np, "
                       "-H or --hostfile (it leaves the ranks unbound and maps them by slot); for srun's -c, write "
                       "--cpus-per-task");
  // Flags this kind of job does not use: said, not silently dropped.
  const auto ignored = [](const std::string& flags, const std::string& why) {
    std::cerr << "kolorun: " << flags << " ignored: " << why << "\n";
  };
  if (o.gloo && start_timeout->count() > 0)
    ignored("--start-timeout", "kolorun starts a Gloo job's workers itself, and they meet at its rendezvous within "
                               "KOLO_CONTROL_TIMEOUT_SECONDS");
  if (!o.elastic()) {
    if (o.slots_per_host)
      ignored("--slots-per-host", "it is for elastic jobs (--min-np, --max-np, --host-discovery-script)");
    if (o.reset_limit) ignored("--reset-limit", "it is for elastic jobs");
    if (o.blacklist_cooldown) ignored("--blacklist-cooldown-range", "it is for elastic jobs");
    if (elastic_timeout->count() > 0) ignored("--elastic-timeout", "it is for elastic jobs");
  }
  if (o.command.empty()) bad_command_line("no program given: kolorun -np N [flags] program [args...]");
  return o;
}

}  // namespace kolo::launcher
