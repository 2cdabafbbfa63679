// The data readers' FileReader (models/data/file_reader.h) on any file: plain bytes pass
// through unchanged, gzip inflates or is a kolo::Error, and reading a prefix then
// skipping the rest sees the same data as reading it all.
#include "fuzz_support.h"
#include "kolo/kolo.h"
#include "models/data/file_reader.h"

using kolo::models::data::FileReader;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static kolo_fuzz::MemoryFile file("data");
  const std::string_view input = kolo_fuzz::as_text(data, size);
  const std::string& path = file.hold(input);
  std::vector<uint8_t> all;
  try {
    all = FileReader(path).read_all();
  } catch (const kolo::Error&) {
    return 0;
  }
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!gzip) kolo_fuzz::require(all == std::vector<uint8_t>(data, data + size), "plain bytes pass through unchanged");
  // The same data in two steps: what a reader that wants a header, then a payload, sees.
  FileReader reader(path);
  const std::vector<uint8_t> prefix = reader.read(all.size() / 2);
  const uint64_t rest = reader.skip_rest();
  kolo_fuzz::require(std::equal(prefix.begin(), prefix.end(), all.begin()) && prefix.size() + rest == all.size(),
                     "a prefix and the rest add up to the whole");
  return 0;
}
