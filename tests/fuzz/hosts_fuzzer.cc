// kolorun's host lists (launcher/hosts.cc): the first byte chooses -H's form (even) or a
// hostfile's text (odd), the rest is the text. Hosts or a kolo::Error, then what kolorun
// does with them: their total slots and mpirun's -H list.
#include "fuzz_support.h"
#include "hosts.h"
#include "kolo/kolo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(kolo_fuzz::as_text(data + 1, size - 1));
  std::vector<kolo::launcher::HostSlots> hosts;
  try {
    hosts = data[0] % 2 == 0 ? kolo::launcher::parse_host_list(text)
                             : kolo::launcher::parse_hostfile_text(text, "fuzzed hostfile");
  } catch (const kolo::Error&) {
    return 0;
  }
  kolo_fuzz::require(!hosts.empty(), "a host list that parses has a host");
  kolo::launcher::total_slots(hosts);
  kolo::launcher::format_host_list(hosts);
  return 0;
}
