// The checkpoint file format's constants and byte-level helpers (private to
// models/checkpoint; the format itself is described in docs/checkpoint-format.md).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include <zlib.h>

namespace kolo::models::checkpoint_format {

inline constexpr char kMagic[8] = {'K', 'O', 'L', 'O', 'C', 'K', 'P', 'T'};
// The newest version this build writes and reads. Bump it for any change an older reader
// must not silently misread; adding a new section does not need a bump (readers skip
// sections they do not know).
inline constexpr uint32_t kFormatVersion = 1;
// magic, version (u32), file length (u64), CRC-32 of those 20 bytes (u32).
inline constexpr uint64_t kHeaderBytes = 24;
inline constexpr uint64_t kTrailerBytes = 4;  // CRC-32 of everything before it

// Section tags: four ASCII characters, stored in this order.
constexpr uint32_t tag(const char (&name)[5]) {
  return static_cast<uint32_t>(static_cast<uint8_t>(name[0])) |
         static_cast<uint32_t>(static_cast<uint8_t>(name[1])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(name[2])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(name[3])) << 24;
}
inline constexpr uint32_t kTensorsTag = tag("TENS");
inline constexpr uint32_t kOptimizerTag = tag("OPTM");
inline constexpr uint32_t kEpochTag = tag("EPOC");
inline constexpr uint32_t kRngTag = tag("RNGS");
inline constexpr uint32_t kMetadataTag = tag("META");

// zlib's crc32 takes 32-bit lengths: feed it in pieces.
inline uint32_t crc32_update(uint32_t crc, const void* data, std::size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const uInt piece = static_cast<uInt>(n < (1u << 30) ? n : (1u << 30));
    crc = static_cast<uint32_t>(::crc32(crc, p, piece));
    p += piece;
    n -= piece;
  }
  return crc;
}

// Little-endian integers, whatever the host's byte order.
inline void store_le(uint8_t* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
inline uint64_t load_le(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

inline constexpr bool kHostIsLittleEndian = std::endian::native == std::endian::little;

}  // namespace kolo::models::checkpoint_format
