// parse_response_list (runtime/message.cc): how every rank reads rank 0's answer. Any
// bytes give a ResponseList or a kolo::Error, and a list that parses serializes back to
// the very same bytes; every response to run has an element count per tensor.
#include "fuzz_support.h"
#include "runtime/message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string bytes(kolo_fuzz::as_text(data, size));
  kolo::ResponseList list;
  try {
    list = kolo::parse_response_list(bytes);
  } catch (const kolo::Error&) {
    return 0;
  }
  kolo_fuzz::require(kolo::serialize(list) == bytes, "a parsed response list serializes to the bytes it came from");
  for (const kolo::Response& r : list.responses) {
    kolo_fuzz::require(!r.names.empty(), "a response names a tensor");
    if (r.kind == kolo::Response::Kind::Run)
      kolo_fuzz::require(r.element_counts.size() == r.names.size(), "a response to run counts each tensor's elements");
  }
  return 0;
}
