#include "failure_signs.h"

#include <charconv>
#include <regex>

#include "exit_report.h"

namespace kolo::launcher {
namespace {

constexpr size_t kLongestSign = 4096;

// "[kolo R] FATAL: why; ranks 2, 3 did not answer a roll call within 2 s; ending the job
// (exit code 70)", or "...; every rank answered a roll call; ...".
const std::regex& kolo_fatal() {
  static const std::regex pattern(
      R"(^\[kolo (\d+)\] FATAL: (.*?))"
      R"((; (?:(ranks? [\d, ]+) did not answer a roll call[^;]*|every rank answered a roll call))?)"
      R"((?:; ending the job \(exit code (\d+)\))?$)");
  return pattern;
}

}  // namespace

FailureSign failure_sign(std::string_view text) {
  // Every line of the job comes here: the regexes run only on lines that may match, and
  // never on a long one (libstdc++'s regex recurses per character).
  if (text.size() > kLongestSign) return FailureSign::None;
  constexpr std::string_view kHints[] = {"[kolo ", "MPI_ABORT", "ORTE has lost", "srun: ", "Process name:",
                                         "exited on signal"};
  bool hinted = false;
  for (std::string_view hint : kHints) hinted = hinted || text.find(hint) != std::string_view::npos;
  if (!hinted) return FailureSign::None;
  static const std::regex aborting(
      R"(MPI_ABORT was invoked on rank \d+|ORTE has lost communication with a remote daemon|^srun: Job step aborted)");
  const std::string line(text);
  if (parse_kolo_fatal(line)) return FailureSign::KoloFatal;
  if (rank_failure_in_line(line, nullptr)) return FailureSign::RankFailed;
  return std::regex_search(line, aborting) ? FailureSign::Aborting : FailureSign::None;
}

std::optional<KoloFatal> parse_kolo_fatal(std::string_view text) {
  if (text.size() > kLongestSign || text.substr(0, 6) != "[kolo ") return std::nullopt;
  const std::string line(text);
  std::smatch m;
  if (!std::regex_match(line, m, kolo_fatal())) return std::nullopt;
  const std::optional<int> rank = int_of_digits(m[1]);
  if (!rank) return std::nullopt;
  KoloFatal fatal{*rank, m[2], {}, std::nullopt};
  fatal.roll_called = m[3].matched;
  if (m[5].matched) fatal.exit_code = int_of_digits(m[5]);
  const std::string silent = m[4];
  static const std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(silent.begin(), silent.end(), number); it != std::sregex_iterator(); ++it)
    if (const std::optional<int> r = int_of_digits(it->str())) fatal.silent.push_back(*r);
  return fatal;
}

std::optional<int> int_of_digits(const std::string& digits) {
  int value = 0;
  const char* end = digits.data() + digits.size();
  const auto [last, error] = std::from_chars(digits.data(), end, value);
  if (error != std::errc() || last != end) return std::nullopt;
  return value;
}

}  // namespace kolo::launcher
