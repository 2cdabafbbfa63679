// The bytes kolorun's rendezvous server and the workers read from the network
// (rendezvous/protocol.cc), and the host discovery script's output (launcher/elastic_driver.cc).
// First byte: 0 a request, 1 an answer, 2 a place's text, 3 a discovery script's output.
#include "elastic_driver.h"
#include "fuzz_support.h"
#include "kolo/kolo.h"
#include "rendezvous/protocol.h"

using namespace kolo::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string bytes(kolo_fuzz::as_text(data + 1, size - 1));
  switch (data[0] % 4) {
    case 0: {
      const ParsedRequest parsed = parse_request(bytes);
      if (parsed.state != Parse::Complete) return 0;
      kolo_fuzz::require(parsed.length <= bytes.size(), "a request is no longer than its bytes");
      kolo_fuzz::require(encode(parsed.request) == bytes.substr(0, parsed.length) ||
                             bytes.compare(6, 2, std::string(2, '\0')) != 0,
                         "a request with zero padding encodes back to its bytes");
      return 0;
    }
    case 1: {
      const ParsedAnswer parsed = parse_answer(bytes);
      if (parsed.state == Parse::Complete)
        kolo_fuzz::require(parsed.answer.value.size() <= kMaxValueBytes, "an answer's value within the limit");
      return 0;
    }
    case 2: {
      if (std::optional<Place> place = place_from_text(bytes))
        kolo_fuzz::require(place_from_text(to_text(*place)) == place && place->rank < place->size,
                           "a place reads back, its rank within its size");
      return 0;
    }
    default:
      try {
        for (const kolo::launcher::HostSlots& h : kolo::launcher::parse_discovered_hosts(bytes, 1))
          kolo_fuzz::require(!h.host.empty() && h.slots.value_or(0) >= 1, "a discovered host has a name and slots");
      } catch (const kolo::Error&) {
      }
      return 0;
  }
}
