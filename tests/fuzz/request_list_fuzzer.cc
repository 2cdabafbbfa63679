// parse_request_list (runtime/message.cc): how rank 0 reads each rank's negotiation
// message. Any bytes give a RequestList or a kolo::Error, and a list that parses
// serializes back to the very same bytes (nothing is dropped, defaulted or misread).
#include "fuzz_support.h"
#include "runtime/message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string bytes(kolo_fuzz::as_text(data, size));
  kolo::RequestList list;
  try {
    list = kolo::parse_request_list(bytes);
  } catch (const kolo::Error&) {
    return 0;
  }
  kolo_fuzz::require(kolo::serialize(list) == bytes, "a parsed request list serializes to the bytes it came from");
  return 0;
}
