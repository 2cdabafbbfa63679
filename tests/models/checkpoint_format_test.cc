// The checkpoint file format (docs/checkpoint-format.md) from the outside: the layout as
// documented, and every way a file can be damaged — missing, empty, truncated anywhere,
// a flipped byte anywhere, wrong magic, a future version, and files whose checksums are
// right but whose contents lie (counts and lengths far beyond the file). Each must give a
// kolo::Error naming the file; none may crash or allocate more than the file holds.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <cstring>
#include <random>

#include "checkpoint_test_util.h"
#include "kolo/models.h"

using namespace kolo::models;
using namespace ckpt_test;
using kolo::StatusCode;

namespace {

// CRC-32 (IEEE 802.3, as zlib's crc32), bit by bit: written from the definition, not zlib.
uint32_t crc32_of(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string le(uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

uint64_t read_le(const std::string& bytes, std::size_t offset, int n) {
  uint64_t value = 0;
  for (int i = 0; i < n; ++i) value |= uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  return value;
}

std::string str(const std::string& s) { return le(s.size(), 8) + s; }
std::string section(const std::string& tag, const std::string& payload) { return tag + le(payload.size(), 8) + payload; }

// A whole file around `body` (the sections), with correct length and checksums.
std::string envelope(const std::string& body, uint32_t version = 1) {
  std::string header = std::string("KOLOCKPT") + le(version, 4) + le(24 + body.size() + 4, 8);
  header += le(crc32_of(header), 4);
  const std::string file = header + body;
  return file + le(crc32_of(file), 4);
}

const std::string kPath = "checkpoint";

}  // namespace

TEST_CASE("the file is laid out as docs/checkpoint-format.md says", "[checkpoint][format]") {
  TempDir dir;
  Checkpoint c;
  c.shapes["w"] = {2};
  c.tensors["w"] = {1.5f, -2.0f};
  c.optimizer_name = "sgd";
  c.optimizer.scalars["lr"] = 0.25;
  c.epoch = 3;
  c.rng["r"] = "7";
  c.metadata["k"] = "v";
  save_checkpoint(c, dir / "doc.ckpt");

  float w[2] = {1.5f, -2.0f};
  std::string w_bytes(reinterpret_cast<const char*>(w), sizeof w);  // the test host is little-endian
  double lr = 0.25;
  std::string lr_bytes(reinterpret_cast<const char*>(&lr), sizeof lr);
  const std::string body = section("TENS", le(1, 8) + str("w") + le(1, 4) + le(2, 8) + le(2, 8) + w_bytes) +
                           section("OPTM", str("sgd") + le(0, 8) + le(1, 8) + str("lr") + lr_bytes) +
                           section("EPOC", le(3, 8)) +
                           section("RNGS", le(1, 8) + str("r") + str("7")) +
                           section("META", le(1, 8) + str("k") + str("v"));
  CHECK(read_bytes(dir / "doc.ckpt") == envelope(body));
}

TEST_CASE("a missing file is reported with the path and the reason", "[checkpoint][format]") {
  TempDir dir;
  const std::string message = error_of(StatusCode::IoError, [&] { load_checkpoint(dir / "nope.ckpt"); });
  CHECK_THAT(message, Catch::Contains(dir / "nope.ckpt") && Catch::Contains("No such file or directory"));
  CHECK_THAT(error_of(StatusCode::IoError, [&] { load_checkpoint(dir.path.string()); }),
             Catch::Contains("not a regular file"));
  const std::string fifo = dir / "fifo.ckpt";  // its open once waited for a writer
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(error_of(StatusCode::IoError, [&] { load_checkpoint(fifo); }), Catch::Contains("not a regular file"));
}

TEST_CASE("a file cut short anywhere is reported as truncated", "[checkpoint][format]") {
  TempDir dir;
  save_checkpoint(small_checkpoint(), dir / "full.ckpt");
  const std::string full = read_bytes(dir / "full.ckpt");
  for (std::size_t length = 0; length < full.size(); ++length) {
    write_bytes(dir / kPath, full.substr(0, length));
    INFO("cut at " << length << " of " << full.size());
    const std::string message = error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); });
    CHECK_THAT(message, Catch::Contains(dir / kPath) && Catch::Contains("truncated"));
  }
}

TEST_CASE("a large checkpoint cut short is reported as truncated", "[checkpoint][format]") {
  TempDir dir;
  auto net = mnist_convnet();
  initialize(*net, 1);
  SGD sgd(net->parameters(), {.momentum = 0.9});
  net->zero_grad();
  sgd.step();
  save_checkpoint(make_checkpoint(*net, &sgd, 1), dir / "full.ckpt");
  const std::string full = read_bytes(dir / "full.ckpt");
  for (std::size_t length : {std::size_t{30}, full.size() / 3, full.size() / 2, full.size() - 5, full.size() - 1}) {
    write_bytes(dir / kPath, full.substr(0, length));
    INFO("cut at " << length);
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }),
               Catch::Contains("truncated"));
  }
  write_bytes(dir / kPath, full + "extra");
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }), Catch::Contains("corrupt"));
}

TEST_CASE("a changed byte anywhere is caught", "[checkpoint][format]") {
  TempDir dir;
  save_checkpoint(small_checkpoint(), dir / "full.ckpt");
  const std::string full = read_bytes(dir / "full.ckpt");
  for (std::size_t offset = 0; offset < full.size(); ++offset) {
    std::string damaged = full;
    damaged[offset] = static_cast<char>(damaged[offset] ^ 0x80);
    write_bytes(dir / kPath, damaged);
    INFO("byte " << offset << " of " << full.size());
    // The version comes before the header's checksum (a newer format may lay the header out
    // differently), so a flipped version byte reads as a newer kolo's file.
    const bool version_byte = offset >= 8 && offset < 12;
    const std::string message = error_of(version_byte ? StatusCode::Unsupported : StatusCode::InvalidArgument,
                                         [&] { load_checkpoint(dir / kPath); });
    CHECK_THAT(message, Catch::Contains(dir / kPath));
    if (offset < 8) CHECK_THAT(message, Catch::Contains("not a kolo checkpoint"));
    else if (offset < 12) CHECK_THAT(message, Catch::Contains("written by a newer kolo"));
    else if (offset >= 24) CHECK_THAT(message, Catch::Contains("corrupt: checksum mismatch"));
    else CHECK_THAT(message, Catch::Contains("corrupt"));  // header: its own checksum
  }
}

TEST_CASE("a file that is not a checkpoint says so", "[checkpoint][format]") {
  TempDir dir;
  write_bytes(dir / kPath, "PK\x03\x04 this is a zip file, not a checkpoint");
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }),
             Catch::Contains(dir / kPath) && Catch::Contains("not a kolo checkpoint"));
  write_bytes(dir / kPath, "KOLO");  // too short to tell, but a checkpoint's beginning
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }),
             Catch::Contains("truncated"));

  std::mt19937_64 rng(11);
  std::string noise(1 << 20, '\0');
  for (char& ch : noise) ch = static_cast<char>(rng());
  write_bytes(dir / kPath, noise);
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }),
             Catch::Contains("not a kolo checkpoint"));
  write_bytes(dir / kPath, "KOLOCKPT" + le(1, 4) + noise);
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }), Catch::Contains("corrupt"));
}

TEST_CASE("a checkpoint from a newer format version is refused with both versions", "[checkpoint][format]") {
  TempDir dir;
  write_bytes(dir / kPath, envelope("", 2));
  CHECK_THAT(error_of(StatusCode::Unsupported, [&] { load_checkpoint(dir / kPath); }),
             Catch::Contains(dir / kPath) &&
                 Catch::Contains("written by a newer kolo: format version 2, this build reads up to 1"));
  write_bytes(dir / kPath, envelope("", 0));
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }), Catch::Contains("corrupt"));
}

TEST_CASE("sections this version does not know are skipped, an empty file has defaults", "[checkpoint][format]") {
  TempDir dir;
  write_bytes(dir / kPath, envelope(section("XTRA", "anything") + section("EPOC", le(9, 8))));
  CHECK(load_checkpoint(dir / kPath).epoch == 9);
  write_bytes(dir / kPath, envelope(""));
  const Checkpoint empty = load_checkpoint(dir / kPath);
  CHECK(empty.tensors.empty());
  CHECK(empty.epoch == 0);
}

TEST_CASE("lengths and counts beyond the file are refused before anything is allocated", "[checkpoint][format]") {
  TempDir dir;
  const uint64_t huge = uint64_t{1} << 62;
  const std::vector<std::pair<std::string, std::string>> lies = {
      {"tensor count", section("TENS", le(huge, 8))},
      {"tensor name length", section("TENS", le(1, 8) + le(huge, 8) + "w")},
      {"tensor rank", section("TENS", le(1, 8) + str("w") + le(0xFFFFFFFF, 4))},
      {"tensor dimension", section("TENS", le(1, 8) + str("w") + le(2, 4) + le(huge, 8) + le(huge, 8) + le(0, 8))},
      {"tensor value count", section("TENS", le(1, 8) + str("w") + le(1, 4) + le(huge, 8) + le(huge, 8))},
      {"shape against values", section("TENS", le(1, 8) + str("w") + le(1, 4) + le(3, 8) + le(1, 8) + le(0, 4))},
      {"optimizer tensor count", section("OPTM", str("sgd") + le(huge, 8))},
      {"optimizer values", section("OPTM", str("sgd") + le(1, 8) + str("m") + le(huge, 8))},
      {"string count", section("META", le(huge, 8))},
      {"string length", section("RNGS", le(1, 8) + str("r") + le(huge, 8))},
      {"section length", section("EPOC", le(1, 8)).substr(0, 4) + le(huge, 8) + le(1, 8)},
      {"section with unread bytes", section("EPOC", le(1, 8) + "xx")},
      {"section too short", section("EPOC", "abc")},
      {"duplicate section", section("EPOC", le(1, 8)) + section("EPOC", le(2, 8))},
      {"negative epoch", section("EPOC", le(static_cast<uint64_t>(int64_t{-3}), 8))},
      {"duplicate tensor", section("TENS", le(2, 8) + str("w") + le(0, 4) + le(1, 8) + le(0, 4) + str("w") +
                                               le(0, 4) + le(1, 8) + le(0, 4))},
  };
  for (const auto& [what, body] : lies) {
    INFO(what);
    write_bytes(dir / kPath, envelope(body));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_checkpoint(dir / kPath); }),
               Catch::Contains(dir / kPath) && Catch::Contains("corrupt"));
  }
}

TEST_CASE("randomly damaged contents with valid checksums never crash the reader", "[checkpoint][format]") {
  TempDir dir;
  save_checkpoint(small_checkpoint(), dir / "full.ckpt");
  const std::string full = read_bytes(dir / "full.ckpt");
  const std::string body = full.substr(24, full.size() - 28);
  REQUIRE(envelope(body) == full);

  std::mt19937_64 rng(2024);
  int loaded = 0, refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string damaged = body;
    const int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      const std::size_t at = rng() % damaged.size();
      switch (rng() % 3) {
        case 0: damaged[at] = static_cast<char>(rng()); break;
        case 1: damaged[at] = static_cast<char>(0xFF); break;  // large counts and lengths
        default: damaged.resize(at); break;
      }
      if (damaged.empty()) break;
    }
    write_bytes(dir / kPath, envelope(damaged));
    try {
      load_checkpoint(dir / kPath);
      ++loaded;
    } catch (const kolo::Error& e) {
      ++refused;
      CHECK(e.code() == StatusCode::InvalidArgument);
      CHECK_THAT(e.what(), Catch::Contains("corrupt"));
    }
  }
  CHECK(refused > 0);
  CHECK(loaded + refused == 2000);
}

TEST_CASE("the header records the version and the file's length", "[checkpoint][format]") {
  TempDir dir;
  save_checkpoint(small_checkpoint(), dir / "full.ckpt");
  const std::string full = read_bytes(dir / "full.ckpt");
  CHECK(full.substr(0, 8) == "KOLOCKPT");
  CHECK(read_le(full, 8, 4) == 1);
  CHECK(read_le(full, 12, 8) == full.size());
  CHECK(read_le(full, 20, 4) == crc32_of(full.substr(0, 20)));
  CHECK(read_le(full, full.size() - 4, 4) == crc32_of(full.substr(0, full.size() - 4)));
}
