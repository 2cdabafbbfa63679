#include "hosts.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "kolo/check.h"

namespace kolo::launcher {
namespace {

[[noreturn]] void bad_hosts(const std::string& origin, const std::string& message) {
  throw Error(StatusCode::InvalidArgument, "kolorun: " + origin + ": " + message);
}

// Digits only, as -np's count is read: no sign, no white space, nothing after.
int parse_slots(const std::string& text, const std::string& origin, const std::string& entry) {
  int slots = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, slots);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || error != std::errc() || stop != end ||
      slots <= 0)
    bad_hosts(origin, "bad slot count '" + text + "' in '" + entry +
                          "': the slots must be a whole number, 1 or more");
  return slots;
}

// "host" or "host:N". A name with a second colon (an IPv6 address, host:2:3) is refused:
// mpirun's -H could not tell its slots apart either.
HostSlots parse_host_entry(const std::string& entry, const std::string& origin,
                           std::optional<int> slots_when_missing) {
  const size_t colon = entry.find(':');
  HostSlots result{entry.substr(0, colon), slots_when_missing};
  if (colon != std::string::npos) {
    if (entry.find(':', colon + 1) != std::string::npos)
      bad_hosts(origin, "'" + entry + "' has more than one ':': expected host or host:slots (an IPv6 address "
                        "needs a host name)");
    result.slots = parse_slots(entry.substr(colon + 1), origin, entry);
  }
  if (result.host.empty()) bad_hosts(origin, "empty host name in '" + entry + "'");
  if (result.host.find_first_of(" \t\r\n\v\f") != std::string::npos)
    bad_hosts(origin, "host name '" + result.host + "' contains white space");
  return result;
}

// A host listed twice is refused rather than guessed at: a slip (node0 for node1) and two
// slot counts meant to add up look the same.
void add_host(std::vector<HostSlots>& hosts, HostSlots host, const std::string& origin) {
  for (const HostSlots& seen : hosts) {
    if (seen.host != host.host) continue;
    const std::string slots = seen.slots && host.slots
                                  ? " (" + std::to_string(*seen.slots) + " + " +
                                        std::to_string(*host.slots) + " slots)"
                                  : "";
    bad_hosts(origin, "host '" + host.host + "' is listed twice" + slots +
                          ": list each host once, with all its slots");
  }
  hosts.push_back(std::move(host));
}

}  // namespace

std::vector<HostSlots> parse_host_list(const std::string& text) {
  if (text.empty())
    bad_hosts("-H", "no hosts given: expected host1:slots,host2:slots (a host without :slots "
                    "has one slot)");
  std::vector<HostSlots> hosts;
  int number = 0;
  for (size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
    comma = text.find(',', start);
    const std::string entry = text.substr(start, comma - start);
    ++number;
    if (entry.empty())
      bad_hosts("-H", "entry " + std::to_string(number) + " of '" + text +
                          "' is empty: expected host or host:slots");
    add_host(hosts, parse_host_entry(entry, "-H", 1), "-H");
  }
  return hosts;
}

std::vector<HostSlots> parse_hostfile_text(const std::string& text, const std::string& origin) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(text);
  int line_number = 0;
  std::optional<int> colon_line, slotless_line;  // the first of each
  for (std::string line; std::getline(lines, line);) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string first;
    if (!(words >> first)) continue;
    const std::string where = origin + " line " + std::to_string(line_number);
    HostSlots host = parse_host_entry(first, where, std::nullopt);
    const bool colon = host.slots.has_value();
    // Open MPI's hostfile words: slots=N, and max_slots=N (or max-slots), which kolorun
    // does not use. Anything else is a typo that mpirun would fail on later, less clearly.
    for (std::string word; words >> word;) {
      if (word.rfind("slots=", 0) == 0) {
        if (colon) bad_hosts(where, "'" + first + "' and '" + word + "' both give its slots: keep one");
        host.slots = parse_slots(word.substr(6), where, word);
      } else if (word.rfind("max_slots=", 0) == 0 || word.rfind("max-slots=", 0) == 0) {
        parse_slots(word.substr(10), where, word);
      } else {
        bad_hosts(where, "unknown word '" + word + "': expected 'host slots=N' or 'host:N'");
      }
    }
    if (colon && !colon_line) colon_line = line_number;
    if (!host.slots && !slotless_line) slotless_line = line_number;
    add_host(hosts, host, where);
  }
  if (hosts.empty()) bad_hosts(origin, "no hosts in the file");
  // Such a file cannot reach mpirun whole (its reader refuses host:N), nor as -H (where a
  // host without slots has one, not its cores, as in a hostfile).
  if (colon_line && slotless_line)
    bad_hosts(origin, "line " + std::to_string(*colon_line) + " gives its slots as host:N and line " +
                          std::to_string(*slotless_line) +
                          " gives none: give every host its slots, or write them as 'host slots=N'");
  return hosts;
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::error_code error;
  KOLO_CHECK(!std::filesystem::is_directory(path, error), StatusCode::IoError,
             "kolorun: --hostfile: '" + path + "' is a directory, not a file");
  std::ifstream in(path);
  KOLO_CHECK(in, StatusCode::IoError,
             "kolorun: --hostfile: cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parse_hostfile_text(text.str(), "hostfile '" + path + "'");
}

std::optional<int> total_slots(const std::vector<HostSlots>& hosts) {
  long long total = 0;
  for (const HostSlots& host : hosts) {
    if (!host.slots) return std::nullopt;
    total = std::min<long long>(total + *host.slots, std::numeric_limits<int>::max());
  }
  return static_cast<int>(total);
}

std::string format_host_list(const std::vector<HostSlots>& hosts) {
  std::string text;
  for (const HostSlots& host : hosts) {
    if (!text.empty()) text += ",";
    text += host.host;
    if (host.slots) text += ":" + std::to_string(*host.slots);
  }
  return text;
}

}  // namespace kolo::launcher
