// read_fixture and Fixture::floats on damaged fixtures: every size a record claims is
// checked (for overflow, and against the tensor file's own size) before it is trusted.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "fixture.h"
#include "kolo/kolo.h"
#include "support/status.h"

namespace fs = std::filesystem;
using kolo::StatusCode;
using kolo_test::HasCode;

namespace {

// A fixture folder holding index.txt with `index` and the given tensor files; removed at
// the end of the test.
struct FixtureDir {
  fs::path path;
  explicit FixtureDir(const std::string& index) {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("kolo-fixture-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
    write("index.txt", index);
  }
  ~FixtureDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
  }
};

}  // namespace

TEST_CASE("a fixture's tensor records load with their shapes and values", "[parity][fixture]") {
  FixtureDir dir("meta model tiny\ntensor w f32 2 1 2 w.bin 8 0 0\ntensor x u8 1 3 x.bin 3 0 0\n");
  const float w[2] = {1.5f, -2.0f};
  dir.write("w.bin", std::string(reinterpret_cast<const char*>(w), sizeof w));
  dir.write("x.bin", std::string("\x00\xff\x33", 3));
  const kolo::parity::Fixture f = kolo::parity::read_fixture(dir.path.string());
  CHECK(f.meta_value("model") == "tiny");
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors[0].shape == std::vector<int64_t>{1, 2});
  CHECK(f.floats(f.tensors[0]) == std::vector<float>{1.5f, -2.0f});
  CHECK(f.floats(f.tensors[1]) == std::vector<float>{0.0f, 1.0f, 0.2f});
}

TEST_CASE("a fixture record whose shape overflows its element count is rejected", "[parity][fixture]") {
  // 2^62 float32 values are 2^64 bytes: the product must not wrap round to the claimed 0.
  FixtureDir dir("tensor w f32 1 4611686018427387904 w.bin 0 0 0\n");
  dir.write("w.bin", "");
  CHECK_THROWS_MATCHES(kolo::parity::read_fixture(dir.path.string()), kolo::Error,
                       HasCode(StatusCode::InvalidArgument, "index.txt:1: the shape's byte count overflows"));
}

TEST_CASE("a tensor file shorter than its record claims is rejected before a buffer of that size is allocated",
          "[parity][fixture]") {
  // A terabyte claimed, three bytes there.
  FixtureDir dir("tensor x u8 1 1099511627776 x.bin 1099511627776 0 0\n");
  dir.write("x.bin", "abc");
  const kolo::parity::Fixture f = kolo::parity::read_fixture(dir.path.string());
  REQUIRE(f.tensors.size() == 1);
  CHECK_THROWS_MATCHES(f.floats(f.tensors[0]), kolo::Error,
                       HasCode(StatusCode::InvalidArgument, "x.bin: expected exactly 1099511627776 bytes, found 3"));
}

TEST_CASE("a tensor file longer than its record claims is rejected", "[parity][fixture]") {
  FixtureDir dir("tensor x i32 1 1 x.bin 4 0 0\n");
  dir.write("x.bin", "abcdefgh");
  const kolo::parity::Fixture f = kolo::parity::read_fixture(dir.path.string());
  CHECK_THROWS_MATCHES(f.ints(f.tensors[0]), kolo::Error,
                       HasCode(StatusCode::InvalidArgument, "x.bin: expected exactly 4 bytes, found 8"));
}
