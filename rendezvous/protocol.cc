#include "rendezvous/protocol.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "kolo/check.h"

namespace kolo::rendezvous {
namespace {

constexpr char kRequestMagic[4] = {'K', 'O', 'L', 'R'};
constexpr char kAnswerMagic[4] = {'K', 'O', 'L', 'A'};
constexpr uint8_t kVersion = 1;
constexpr size_t kRequestHeader = 8 + kSecretBytes + 8;
constexpr size_t kAnswerHeader = 8 + 4;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
uint32_t get_u32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

}  // namespace

Secret make_secret() {
  Secret secret{};
  size_t filled = 0;
  while (filled < secret.size()) {
    const ssize_t n = ::getrandom(secret.data() + filled, secret.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    KOLO_CHECK(n > 0, StatusCode::Internal, std::string("kolo: getrandom failed: ") + std::strerror(errno));
    filled += size_t(n);
  }
  return secret;
}

std::string secret_to_hex(const Secret& secret) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : secret) {
    hex.push_back(digits[b >> 4]);
    hex.push_back(digits[b & 15]);
  }
  return hex;
}

std::optional<Secret> secret_from_hex(std::string_view hex) {
  if (hex.size() != 2 * kSecretBytes) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Secret secret{};
  for (size_t i = 0; i < kSecretBytes; ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    secret[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return secret;
}

bool same_secret(const Secret& a, const Secret& b) {
  unsigned char differ = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) differ |= a[i] ^ b[i];
  return differ == 0;
}

const char* status_name(Status status) {
  switch (status) {
    case Status::Ok: return "ok";
    case Status::Missing: return "missing";
    case Status::Refused: return "refused (wrong secret)";
    case Status::Gone: return "gone";
    case Status::Bad: return "bad request";
  }
  return "unknown";
}

std::string to_text(const Place& p) {
  std::ostringstream text;
  text << p.round << ' ' << p.rank << ' ' << p.size;
  return text.str();
}

std::optional<Place> place_from_text(std::string_view text) {
  std::istringstream in{std::string(text)};
  Place p;
  if (!(in >> p.round >> p.rank >> p.size)) return std::nullopt;
  std::string rest;
  if (in >> rest) return std::nullopt;
  if (p.round < 1 || p.size < 1 || p.rank < 0 || p.rank >= p.size) return std::nullopt;
  return p;
}

std::string encode(const Request& request) {
  std::string out(kRequestMagic, 4);
  out.push_back(char(kVersion));
  out.push_back(char(request.kind));
  out.append(2, '\0');
  out.append(reinterpret_cast<const char*>(request.secret.data()), kSecretBytes);
  put_u32(out, uint32_t(request.key.size()));
  put_u32(out, uint32_t(request.value.size()));
  out += request.key;
  out += request.value;
  return out;
}

std::string encode(const Answer& answer) {
  std::string out(kAnswerMagic, 4);
  out.push_back(char(answer.status));
  out.append(3, '\0');
  put_u32(out, uint32_t(answer.value.size()));
  out += answer.value;
  return out;
}

ParsedRequest parse_request(std::string_view bytes) {
  ParsedRequest parsed;
  auto malformed = [&](std::string why) {
    parsed.state = Parse::Malformed;
    parsed.why = std::move(why);
    return parsed;
  };
  // The magic is checked as soon as its bytes arrive, so that a stranger's bytes are
  // refused without waiting for a header's worth of them.
  const size_t magic = std::min<size_t>(bytes.size(), 4);
  if (std::memcmp(bytes.data(), kRequestMagic, magic) != 0) return malformed("not a kolo rendezvous request");
  if (bytes.size() < kRequestHeader) return parsed;
  if (uint8_t(bytes[4]) != kVersion) return malformed("protocol version " + std::to_string(uint8_t(bytes[4])));
  const uint8_t kind = uint8_t(bytes[5]);
  if (kind < uint8_t(Kind::Set) || kind > uint8_t(Kind::Hosts)) return malformed("request kind " + std::to_string(kind));
  const uint32_t key_bytes = get_u32(bytes, 8 + kSecretBytes), value_bytes = get_u32(bytes, 12 + kSecretBytes);
  if (key_bytes > kMaxKeyBytes) return malformed("a key of " + std::to_string(key_bytes) + " bytes");
  if (value_bytes > kMaxValueBytes) return malformed("a value of " + std::to_string(value_bytes) + " bytes");
  const size_t length = kRequestHeader + key_bytes + value_bytes;
  if (bytes.size() < length) return parsed;
  parsed.state = Parse::Complete;
  parsed.length = length;
  parsed.request.kind = Kind(kind);
  std::memcpy(parsed.request.secret.data(), bytes.data() + 8, kSecretBytes);
  parsed.request.key.assign(bytes.substr(kRequestHeader, key_bytes));
  parsed.request.value.assign(bytes.substr(kRequestHeader + key_bytes, value_bytes));
  return parsed;
}

ParsedAnswer parse_answer(std::string_view bytes) {
  ParsedAnswer parsed;
  auto malformed = [&](std::string why) {
    parsed.state = Parse::Malformed;
    parsed.why = std::move(why);
    return parsed;
  };
  const size_t magic = std::min<size_t>(bytes.size(), 4);
  if (std::memcmp(bytes.data(), kAnswerMagic, magic) != 0) return malformed("not a kolo rendezvous answer");
  if (bytes.size() < kAnswerHeader) return parsed;
  const uint8_t status = uint8_t(bytes[4]);
  if (status > uint8_t(Status::Bad)) return malformed("answer status " + std::to_string(status));
  const uint32_t value_bytes = get_u32(bytes, 8);
  if (value_bytes > kMaxValueBytes) return malformed("a value of " + std::to_string(value_bytes) + " bytes");
  if (bytes.size() < kAnswerHeader + value_bytes) return parsed;
  parsed.state = Parse::Complete;
  parsed.length = kAnswerHeader + value_bytes;
  parsed.answer.status = Status(status);
  parsed.answer.value.assign(bytes.substr(kAnswerHeader, value_bytes));
  return parsed;
}

}  // namespace kolo::rendezvous
