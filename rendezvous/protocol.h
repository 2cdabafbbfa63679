// The rendezvous protocol: how a worker of a Gloo job (runtime/gloo_transport.h) talks to
// kolorun's rendezvous server (server.h). One request per TCP connection, one answer:
//
//   request:  "KOLR" version kind 0 0 | secret (32 bytes) | key length | value length | key | value
//   answer:   "KOLA" status 0 0 0     | value length | value
//
// (lengths are 32-bit little-endian). Every request carries the job's secret, made by
// kolorun for this job and given to its workers only (KOLO_GLOO_SECRET): the server
// answers a request with another secret Refused, and closes a connection whose bytes are
// not a request, without touching the job's state. The secret keeps strangers (another
// job's workers, a port scanner) out; it is a password sent in clear, not encryption, as
// horovodrun's is a key sent in its workers' environment.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kolo::rendezvous {

inline constexpr size_t kSecretBytes = 32;
using Secret = std::array<unsigned char, kSecretBytes>;

// A fresh secret from the system's random source (getrandom).
Secret make_secret();
// 64 hex digits, as the workers' environment carries it.
std::string secret_to_hex(const Secret& secret);
// nullopt unless `hex` is exactly 64 hex digits.
std::optional<Secret> secret_from_hex(std::string_view hex);
// Equal, in time that does not depend on where they differ.
bool same_secret(const Secret& a, const Secret& b);

enum class Kind : uint8_t {
  Set = 1,   // store value under key
  Get = 2,   // the value under key: Ok with it, or Missing
  Slot = 3,   // key "host", value "slot after_round": this worker's place (server.h's Membership)
  Hosts = 4,  // key "host", value "slot round": "1" when the job's hosts changed since that round began
};

enum class Status : uint8_t {
  Ok = 0,
  Missing = 1,  // Get: no such key (yet); Slot: no assignment for this worker yet
  Refused = 2,  // wrong secret
  Gone = 3,     // Slot: this worker is no longer part of the job (value: why)
  Bad = 4,      // a request the server cannot serve (value: why)
};
const char* status_name(Status status);

// What a request may carry: a Gloo address is tens of bytes, a key a few words.
inline constexpr uint32_t kMaxKeyBytes = 1024;
inline constexpr uint32_t kMaxValueBytes = 1 << 20;

// A worker's place in one round of the job (the answer to Slot). Travels as three numbers
// in text. (Where the others sit, the workers tell each other: runtime/gloo_transport.cc.)
struct Place {
  int64_t round = 0;  // rounds count up from 1; each re-forming of the job is a new one
  int rank = 0, size = 0;
  bool operator==(const Place&) const = default;
};
std::string to_text(const Place& place);
std::optional<Place> place_from_text(std::string_view text);

struct Request {
  Kind kind = Kind::Get;
  Secret secret{};
  std::string key, value;
};

struct Answer {
  Status status = Status::Ok;
  std::string value;
};

std::string encode(const Request& request);
std::string encode(const Answer& answer);

// Parsing from the front of a byte stream: Incomplete until the whole message is there,
// Malformed (with why) when the bytes cannot be one, else the message and its length.
enum class Parse { Complete, Incomplete, Malformed };
struct ParsedRequest {
  Parse state = Parse::Incomplete;
  Request request;
  size_t length = 0;
  std::string why;  // Malformed
};
ParsedRequest parse_request(std::string_view bytes);
struct ParsedAnswer {
  Parse state = Parse::Incomplete;
  Answer answer;
  size_t length = 0;
  std::string why;
};
ParsedAnswer parse_answer(std::string_view bytes);

}  // namespace kolo::rendezvous
