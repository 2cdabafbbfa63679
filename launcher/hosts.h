// The hosts a job may use and their slots, from -H or --hostfile, in the forms
// horovodrun and mpirun accept.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kolo::launcher {

struct HostSlots {
  std::string host;
  std::optional<int> slots;  // unknown: a hostfile line without slots (mpirun decides)
};

// "host1:2,host2:4,host3": a host without ":slots" has one slot (as mpirun -H). Throws
// kolo::Error (InvalidArgument) for an empty list or entry, an empty host name or one with
// white space, slots that are not a whole number >= 1, and a host listed twice.
std::vector<HostSlots> parse_host_list(const std::string& text);

// A hostfile: one host per line as "host slots=N" (mpirun) or "host:N" (horovodrun),
// other "key=value" words (max_slots=...) ignored, '#' starts a comment; the same checks
// as parse_host_list.
// `origin` names the file in error messages.
std::vector<HostSlots> parse_hostfile_text(const std::string& text, const std::string& origin);
std::vector<HostSlots> read_hostfile(const std::string& path);

// The sum of the slots (at most INT_MAX), or nullopt when some host's slots are unknown.
std::optional<int> total_slots(const std::vector<HostSlots>& hosts);

// "host1:2,host2:4" for mpirun -H.
std::string format_host_list(const std::vector<HostSlots>& hosts);

}  // namespace kolo::launcher
