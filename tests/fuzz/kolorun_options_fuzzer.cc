// kolorun's command line (launcher/options.cc): the input is its arguments, separated by
// NUL bytes. Any arguments give options, nullopt (--help) or a kolo::Error; nothing else
// may escape.
#include "fuzz_support.h"
#include "kolo/kolo.h"
#include "options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  const std::string_view input = kolo_fuzz::as_text(data, size);
  for (std::size_t start = 0; start <= input.size();) {
    const std::size_t end = std::min(input.find('\0', start), input.size());
    args.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  try {
    kolo::launcher::parse_command_line(args);
  } catch (const kolo::Error&) {
  }
  return 0;
}
