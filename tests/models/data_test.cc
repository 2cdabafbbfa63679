// Data: IDX and CIFAR-10 readers (valid, malformed and truncated files), synthetic data,
// augmentation, DistributedSampler and DataLoader. Malformed files are generated in a
// temporary folder; tests/models/data/ holds two tiny gzip IDX files (3 images of 2×3,
// labels 2 0 9) written by Python's gzip module.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "kolo/models.h"
#include "support/status.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using namespace kolo::models;
using kolo::StatusCode;
using kolo_test::HasCode;
using Bytes = std::vector<uint8_t>;

namespace {

const std::string kFixtures = KOLO_TEST_DATA_DIR;

struct TempDir : kolo_test::TempDir {
  TempDir() : kolo_test::TempDir("kolo-data-test") {}
};

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void put32(Bytes& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(value >> shift));
}

Bytes idx_images(uint32_t count, uint32_t rows, uint32_t cols, const Bytes& pixels) {
  Bytes bytes;
  put32(bytes, 0x803);
  put32(bytes, count);
  put32(bytes, rows);
  put32(bytes, cols);
  bytes.insert(bytes.end(), pixels.begin(), pixels.end());
  return bytes;
}

Bytes idx_labels(const Bytes& labels) {
  Bytes bytes;
  put32(bytes, 0x801);
  put32(bytes, static_cast<uint32_t>(labels.size()));
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

// The message of the kolo::Error that `load` throws ("" if it does not throw), which must
// carry `code`: IoError for a file that cannot be opened or read, InvalidArgument for bad
// contents or arguments.
template <typename F>
std::string error_of(StatusCode code, F load) {
  try {
    load();
  } catch (const kolo::Error& e) {
    CHECK(kolo::status_code_name(e.code()) == std::string(kolo::status_code_name(code)));
    return e.what();
  }
  FAIL_CHECK("no kolo::Error thrown");
  return "";
}

// 20 images of 5×4 with pixels i % 256 and labels i % 10: big enough to fuzz.
struct ValidIdx {
  Bytes images, labels;
  ValidIdx() {
    Bytes pixels(20 * 5 * 4);
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
    Bytes label_bytes(20);
    for (std::size_t i = 0; i < label_bytes.size(); ++i) label_bytes[i] = static_cast<uint8_t>(i % 10);
    images = idx_images(20, 5, 4, pixels);
    labels = idx_labels(label_bytes);
  }
};

Bytes cifar_record(uint8_t label, uint8_t base) {
  Bytes record{label};
  for (int i = 0; i < 3072; ++i) record.push_back(static_cast<uint8_t>(base + i));
  return record;
}

}  // namespace

// ---- IDX ---------------------------------------------------------------------------------

TEST_CASE("IDX images load as one-channel floats in [0, 1] with their labels", "[data][idx]") {
  TempDir dir;
  write_file(dir / "images", idx_images(2, 1, 3, {0, 255, 51, 102, 153, 204}));
  write_file(dir / "labels", idx_labels({7, 3}));
  const Dataset d = load_idx(dir / "images", dir / "labels");
  CHECK(d.count == 2);
  CHECK(d.channels == 1);
  CHECK(d.height == 1);
  CHECK(d.width == 3);
  CHECK(d.classes == 10);
  CHECK(d.image_size() == 3);
  CHECK(d.images == std::vector<float>{0.0f, 1.0f, 0.2f, 0.4f, 0.6f, 0.8f});
  CHECK(d.labels == std::vector<int32_t>{7, 3});
}

TEST_CASE("gzip IDX files are recognised by their magic bytes, not their name", "[data][idx]") {
  TempDir dir;
  const Bytes images = read_file(kFixtures + "/tiny-images-idx3-ubyte.gz");
  const Bytes labels = read_file(kFixtures + "/tiny-labels-idx1-ubyte.gz");
  REQUIRE(images.size() > 2);
  REQUIRE(images[0] == 0x1f);  // really gzip
  write_file(dir / "images.idx", images);
  write_file(dir / "labels.idx", labels);
  for (const Dataset& d : {load_idx(kFixtures + "/tiny-images-idx3-ubyte.gz", kFixtures + "/tiny-labels-idx1-ubyte.gz"),
                           load_idx(dir / "images.idx", dir / "labels.idx")}) {
    CHECK(d.count == 3);
    CHECK(d.height == 2);
    CHECK(d.width == 3);
    CHECK(d.labels == std::vector<int32_t>{2, 0, 9});
    CHECK(d.images[1] == 1.0f);
    CHECK(d.images[6] == Approx(10 / 255.0));
  }
}

TEST_CASE("malformed IDX files are errors that name the file and the problem", "[data][idx]") {
  TempDir dir;
  const std::string images = dir / "images", labels = dir / "labels";
  write_file(images, idx_images(2, 1, 3, {1, 2, 3, 4, 5, 6}));
  write_file(labels, idx_labels({1, 2}));

  SECTION("missing file") {
    const std::string message = error_of(StatusCode::IoError, [&] { load_idx(dir / "absent", labels); });
    CHECK_THAT(message, Catch::Contains(dir / "absent") && Catch::Contains("cannot open: No such file or directory"));
  }
  SECTION("a folder instead of a file") {
    CHECK_THAT(error_of(StatusCode::IoError, [&] { load_idx(dir.path.string(), labels); }),
               Catch::Contains(dir.path.string() + ": cannot read"));
  }
  SECTION("a FIFO instead of a file: an error, not a wait for a writer") {
    const std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THAT(error_of(StatusCode::IoError, [&] { load_idx(fifo, labels); }),
               Catch::Contains(fifo + ": cannot read: not a regular file"));
  }
  SECTION("labels where images belong, and the reverse") {
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(labels, labels); }),
               Catch::Contains(labels + ": not an IDX image file (magic 0x00000801, expected 0x00000803)"));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, images); }),
               Catch::Contains(images + ": not an IDX label file (magic 0x00000803, expected 0x00000801)"));
  }
  SECTION("truncated header") {
    write_file(images, {0, 0, 8, 3, 0, 0});
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }),
               Catch::Contains("truncated: expected a 16-byte IDX header, found 6 bytes"));
  }
  SECTION("truncated pixels") {
    write_file(images, idx_images(2, 1, 3, {1, 2, 3, 4, 5}));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }),
               Catch::Contains(images + ": truncated: expected 6 bytes of pixels, found 5"));
  }
  SECTION("bytes after the pixels") {
    write_file(images, idx_images(2, 1, 3, {1, 2, 3, 4, 5, 6, 7}));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }),
               Catch::Contains("trailing data"));
  }
  SECTION("a header that claims more pixels than can exist") {
    write_file(images, idx_images(0xffffffff, 0xffffffff, 0xffffffff, {1, 2, 3}));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }),
               Catch::Contains("over 2^40 pixels"));
  }
  SECTION("no images") {
    write_file(images, idx_images(0, 28, 28, {}));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }), Catch::Contains("empty"));
  }
  SECTION("image and label counts differ") {
    write_file(labels, idx_labels({1, 2, 3}));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }),
               Catch::Contains(labels + ": holds 3 labels but " + images + " holds 2 images"));
  }
  SECTION("label out of range") {
    write_file(labels, idx_labels({1, 12}));
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }),
               Catch::Contains(labels + ": label 12 at index 1 is outside [0, 10)"));
    CHECK(load_idx(images, labels, 13).labels[1] == 12);
  }
  SECTION("corrupt gzip stream") {
    Bytes gz = read_file(kFixtures + "/tiny-images-idx3-ubyte.gz");
    for (std::size_t i = 10; i < gz.size() - 8; ++i) gz[i] ^= 0x5a;
    write_file(images, gz);
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_idx(images, labels); }),
               Catch::Contains(images + ": corrupt gzip data: "));
  }
}

// A flipped bit in the compressed data or the CRC/length trailer is damage to the gzip
// stream, whatever the damaged stream inflates to: the error names gzip, not the IDX
// payload's length (a flip that inflates to extra bytes is not "trailing data").
TEST_CASE("every flipped bit in a gzip stream or its trailer is reported as corrupt gzip", "[data][idx]") {
  TempDir dir;
  const Bytes gz = read_file(kFixtures + "/tiny-images-idx3-ubyte.gz");
  const std::string labels = kFixtures + "/tiny-labels-idx1-ubyte.gz";
  REQUIRE(gz.size() > 18);
  const Dataset original = load_idx(kFixtures + "/tiny-images-idx3-ubyte.gz", labels);
  // From the first deflate byte (after the 10-byte header, whose MTIME, XFL and OS fields
  // no reader checks) to the last trailer byte.
  int unused_bits = 0;
  for (std::size_t at = 10; at < gz.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes damaged = gz;
      damaged[at] ^= static_cast<uint8_t>(1u << bit);
      write_file(dir / "images.gz", damaged);
      INFO("byte " << at << " of " << gz.size() << ", bit " << bit);
      try {
        // Only the padding after the final deflate block may flip unnoticed: same data.
        const Dataset d = load_idx(dir / "images.gz", labels);
        CHECK(d.images == original.images);
        ++unused_bits;
      } catch (const kolo::Error& e) {
        CHECK(e.code() == StatusCode::InvalidArgument);
        CHECK_THAT(e.what(), Catch::Contains(dir / "images.gz") && Catch::Contains("corrupt gzip"));
      }
    }
  }
  CHECK(unused_bits < 8);  // at most the last deflate byte's padding
}

TEST_CASE("a gzip stream cut before its trailer is reported as corrupt gzip", "[data][idx]") {
  TempDir dir;
  const Bytes gz = read_file(kFixtures + "/tiny-images-idx3-ubyte.gz");
  // Every cut inside the 8-byte trailer: the IDX payload inflates whole, the CRC is missing.
  for (std::size_t cut = gz.size() - 8; cut < gz.size(); ++cut) {
    write_file(dir / "cut.gz", Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(cut)));
    INFO("cut at " << cut << " of " << gz.size());
    CHECK_THAT(error_of(StatusCode::InvalidArgument,
                        [&] { load_idx(dir / "cut.gz", kFixtures + "/tiny-labels-idx1-ubyte.gz"); }),
               Catch::Contains("corrupt gzip data: unexpected end of file"));
  }
}

TEST_CASE("every truncation or byte flip of an IDX file is an error or a valid dataset, never a crash",
          "[data][idx][fuzz]") {
  TempDir dir;
  const ValidIdx valid;
  const std::string images = dir / "images", labels = dir / "labels";
  write_file(images, valid.images);
  write_file(labels, valid.labels);
  REQUIRE(load_idx(images, labels).count == 20);

  // Every proper prefix of either file, plain and gzip.
  const Bytes gz_images = read_file(kFixtures + "/tiny-images-idx3-ubyte.gz");
  for (std::size_t n = 0; n < valid.images.size(); ++n) {
    write_file(dir / "cut", Bytes(valid.images.begin(), valid.images.begin() + static_cast<std::ptrdiff_t>(n)));
    CHECK_THROWS_MATCHES(load_idx(dir / "cut", labels), kolo::Error, HasCode(StatusCode::InvalidArgument));
  }
  for (std::size_t n = 0; n < valid.labels.size(); ++n) {
    write_file(dir / "cut", Bytes(valid.labels.begin(), valid.labels.begin() + static_cast<std::ptrdiff_t>(n)));
    CHECK_THROWS_MATCHES(load_idx(images, dir / "cut"), kolo::Error, HasCode(StatusCode::InvalidArgument));
  }
  // A gzip prefix may still inflate to a whole IDX file if only the trailer is cut; any
  // other cut must be an error.
  for (std::size_t n = 0; n < gz_images.size(); ++n) {
    write_file(dir / "cut.gz", Bytes(gz_images.begin(), gz_images.begin() + static_cast<std::ptrdiff_t>(n)));
    try {
      const Dataset d = load_idx(dir / "cut.gz", kFixtures + "/tiny-labels-idx1-ubyte.gz");
      CHECK(d.count == 3);
    } catch (const kolo::Error& e) {
      CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    }
  }
  // Random byte flips: an error, or a dataset whose sizes agree with each other.
  std::mt19937_64 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    Bytes image_bytes = valid.images, label_bytes = valid.labels;
    Bytes& victim = trial % 2 == 0 ? image_bytes : label_bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      // Mostly the header, where a flip changes what the reader believes.
      const std::size_t at = rng() % 4 != 0 ? rng() % 16 : rng() % victim.size();
      victim[at % victim.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    write_file(images, image_bytes);
    write_file(labels, label_bytes);
    try {
      const Dataset d = load_idx(images, labels);
      CHECK(d.images.size() == static_cast<std::size_t>(d.count * d.image_size()));
      CHECK(d.labels.size() == static_cast<std::size_t>(d.count));
    } catch (const kolo::Error& e) {
      CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    }
  }
}

TEST_CASE("load_mnist_folder finds the split's files, plain or gzip", "[data][idx]") {
  TempDir dir;
  const ValidIdx valid;
  write_file(dir / "train-images-idx3-ubyte", valid.images);
  write_file(dir / "train-labels-idx1-ubyte", valid.labels);
  fs::copy_file(kFixtures + "/tiny-images-idx3-ubyte.gz", dir / "t10k-images-idx3-ubyte.gz");
  fs::copy_file(kFixtures + "/tiny-labels-idx1-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz");
  CHECK(load_mnist_folder(dir.path.string(), "train").count == 20);
  CHECK(load_mnist_folder(dir.path.string(), "t10k").count == 3);
  CHECK(load_mnist_folder(dir.path.string(), "test").count == 3);
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_mnist_folder(dir.path.string(), "validation"); }),
             Catch::Contains("split"));
  CHECK_THAT(error_of(StatusCode::IoError, [&] { load_mnist_folder(dir / "nowhere", "train"); }),
             Catch::Contains("no train-images-idx3-ubyte or train-images-idx3-ubyte.gz"));
}

TEST_CASE("the real Fashion-MNIST from Debian's dataset-fashion-mnist loads", "[data][idx][real]") {
  const std::string folder = default_fashion_mnist_folder();
  CHECK(folder == "/usr/share/datasets/fashion-mnist");
  if (!fs::exists(folder)) {
    WARN("skipped: " << folder << " is missing (apt install dataset-fashion-mnist)");
    return;
  }
  for (const auto& [split, count] : {std::pair<std::string, int64_t>{"train", 60000}, {"test", 10000}}) {
    const Dataset d = load_mnist_folder(folder, split);
    CHECK(d.count == count);
    CHECK(d.channels == 1);
    CHECK(d.height == 28);
    CHECK(d.width == 28);
    CHECK(d.images.size() == static_cast<std::size_t>(count * 28 * 28));
    // Fashion-MNIST is balanced: count / 10 images of each class.
    std::vector<int64_t> per_class(10, 0);
    for (int32_t label : d.labels) ++per_class.at(static_cast<std::size_t>(label));
    CHECK(per_class == std::vector<int64_t>(10, count / 10));
    const auto [lo, hi] = std::minmax_element(d.images.begin(), d.images.end());
    CHECK(*lo == 0.0f);
    CHECK(*hi == 1.0f);
  }
}

// ---- CIFAR-10 ------------------------------------------------------------------------------

TEST_CASE("CIFAR-10 binary files concatenate into one dataset of CHW images", "[data][cifar]") {
  TempDir dir;
  Bytes first = cifar_record(3, 0), second = cifar_record(9, 100);
  const Bytes third = cifar_record(0, 7);
  second.insert(second.end(), third.begin(), third.end());
  write_file(dir / "data_batch_1.bin", first);
  write_file(dir / "data_batch_2.bin", second);
  const Dataset d = load_cifar10({dir / "data_batch_1.bin", dir / "data_batch_2.bin"});
  CHECK(d.count == 3);
  CHECK(d.channels == 3);
  CHECK(d.height == 32);
  CHECK(d.width == 32);
  CHECK(d.classes == 10);
  CHECK(d.labels == std::vector<int32_t>{3, 9, 0});
  REQUIRE(d.images.size() == 3u * 3072);
  // Record bytes are R plane, G plane, B plane: channel 1, row 2, column 5 is byte 1024 + 69.
  CHECK(d.images[1024 + 2 * 32 + 5] == Approx(static_cast<uint8_t>(1024 + 69) / 255.0));
  CHECK(d.images[3072 + 7] == Approx(107 / 255.0));
  CHECK(d.images[2 * 3072] == Approx(7 / 255.0));
}

TEST_CASE("malformed CIFAR-10 files are errors that name the file", "[data][cifar]") {
  TempDir dir;
  const std::string path = dir / "data_batch_1.bin";
  SECTION("missing") {
    CHECK_THAT(error_of(StatusCode::IoError, [&] { load_cifar10({path}); }), Catch::Contains(path + ": cannot open"));
  }
  SECTION("no files") {
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_cifar10({}); }), Catch::Contains("no files"));
  }
  SECTION("empty") {
    write_file(path, {});
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_cifar10({path}); }),
               Catch::Contains(path + ": empty file"));
  }
  SECTION("not a whole number of records") {
    Bytes bytes = cifar_record(1, 0);
    bytes.pop_back();
    write_file(path, bytes);
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_cifar10({path}); }),
               Catch::Contains(path + ": size 3072 bytes is not a multiple of 3073"));
  }
  SECTION("label out of range") {
    Bytes bytes = cifar_record(1, 0);
    const Bytes bad = cifar_record(10, 0);
    bytes.insert(bytes.end(), bad.begin(), bad.end());
    write_file(path, bytes);
    CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { load_cifar10({path}); }),
               Catch::Contains(path + ": label 10 at index 1 is outside [0, 10)"));
  }
}

// ---- synthetic data --------------------------------------------------------------------------

TEST_CASE("synthetic data has the asked shape and is reproducible from its seed", "[data][synthetic]") {
  const Dataset a = synthetic_dataset(7, 3, 4, 5, 6, 42);
  CHECK(a.count == 7);
  CHECK(a.image_size() == 60);
  CHECK(a.images.size() == 7u * 60);
  CHECK(a.labels.size() == 7u);
  CHECK(a.classes == 6);
  for (float p : a.images) CHECK((p >= 0.0f && p < 1.0f));
  for (int32_t l : a.labels) CHECK((l >= 0 && l < 6));
  const Dataset same = synthetic_dataset(7, 3, 4, 5, 6, 42);
  CHECK(same.images == a.images);
  CHECK(same.labels == a.labels);
  CHECK(synthetic_dataset(7, 3, 4, 5, 6, 43).images != a.images);
  CHECK_THROWS_AS(synthetic_dataset(7, 0, 4, 5, 6, 42), kolo::Error);
}

// ---- augmentation ------------------------------------------------------------------------------

TEST_CASE("normalize subtracts the channel's mean and divides by its deviation", "[data][transforms]") {
  std::vector<float> image{1, 2, 3, 4, 10, 20};  // 2 channels of 3
  normalize(image.data(), 2, 3, {1, 10}, {2, 5});
  CHECK(image == std::vector<float>{0, 0.5f, 1, -1.2f, 0, 2});
  std::vector<float> one{0.5f, 1.5f};
  normalize(one.data(), 2, 1, {0.5f}, {0.5f});  // one value for every channel
  CHECK(one == std::vector<float>{0, 2});
  CHECK_THROWS_AS(normalize(image.data(), 2, 3, {1, 2, 3}, {1, 1, 1}), kolo::Error);
  CHECK_THROWS_AS(normalize(image.data(), 2, 3, {0, 0}, {1, 0}), kolo::Error);
}

TEST_CASE("horizontal_flip mirrors every row of every channel", "[data][transforms]") {
  std::vector<float> image{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // 2 channels × 2 rows × 3
  horizontal_flip(image.data(), 2, 2, 3);
  CHECK(image == std::vector<float>{3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10});
}

TEST_CASE("padded_crop shifts the image inside zero padding", "[data][transforms]") {
  const std::vector<float> image{1, 2, 3, 4, 5, 6, 7, 8, 9};  // 1 × 3 × 3
  std::vector<float> out(9, -1.0f);
  padded_crop(image.data(), 1, 3, 3, 2, 2, 2, out.data());  // centre: unchanged
  CHECK(out == image);
  padded_crop(image.data(), 1, 3, 3, 2, 0, 1, out.data());  // 2 rows of padding above, 1 column left
  CHECK(out == std::vector<float>{0, 0, 0, 0, 0, 0, 0, 1, 2});
  padded_crop(image.data(), 1, 3, 3, 2, 3, 4, out.data());  // down 1, right 2
  CHECK(out == std::vector<float>{6, 0, 0, 9, 0, 0, 0, 0, 0});
  padded_crop(image.data(), 1, 3, 3, 0, 0, 0, out.data());  // no padding: a copy
  CHECK(out == image);
  CHECK_THROWS_AS(padded_crop(image.data(), 1, 3, 3, 2, 5, 0, out.data()), kolo::Error);
}

TEST_CASE("resize_bilinear matches PyTorch's align_corners=False", "[data][transforms]") {
  SECTION("2x2 -> 4x4: edges repeat, inner pixels at quarter steps") {
    const std::vector<float> image{0, 1, 2, 3};
    std::vector<float> out(16);
    resize_bilinear(image.data(), 1, 2, 2, 4, 4, out.data());
    const std::vector<float> expected{0,   0.25f, 0.75f, 1,     0.5f, 0.75f, 1.25f, 1.5f,
                                      1.5f, 1.75f, 2.25f, 2.5f, 2,    2.25f, 2.75f, 3};
    for (std::size_t i = 0; i < 16; ++i) CHECK(out[i] == Approx(expected[i]).margin(1e-6));
  }
  SECTION("same size: identity") {
    const Dataset d = synthetic_dataset(1, 3, 5, 7, 2, 9);
    std::vector<float> out(d.images.size());
    resize_bilinear(d.images.data(), 3, 5, 7, 5, 7, out.data());
    CHECK(out == d.images);
  }
  SECTION("4x4 -> 2x2: each output averages a 2x2 block") {
    std::vector<float> image(16);
    for (int i = 0; i < 16; ++i) image[static_cast<std::size_t>(i)] = static_cast<float>(i);
    std::vector<float> out(4);
    resize_bilinear(image.data(), 1, 4, 4, 2, 2, out.data());
    CHECK(out == std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f});
  }
  SECTION("3x2 -> 2x5, two channels (values from torch 1.13)") {
    const std::vector<float> image{0.1f, 0.9f, 0.4f, 0.3f, 0.7f, 0.2f, 1, 2, 3, 4, 5, 6};
    std::vector<float> out(20);
    resize_bilinear(image.data(), 2, 3, 2, 2, 5, out.data());
    const std::vector<float> expected{0.175f, 0.2325f, 0.4625f, 0.6925f, 0.75f, 0.625f, 0.585f, 0.425f, 0.265f, 0.225f,
                                      1.5f,   1.6f,    2.0f,    2.4f,    2.5f,  4.5f,   4.6f,   5.0f,   5.4f,   5.5f};
    for (std::size_t i = 0; i < 20; ++i) CHECK(out[i] == Approx(expected[i]).margin(1e-6));
  }
  CHECK_THROWS_AS(resize_bilinear(nullptr, 1, 2, 2, 0, 4, nullptr), kolo::Error);
}

// ---- DistributedSampler ------------------------------------------------------------------------

TEST_CASE("DistributedSampler shards a per-epoch permutation evenly over the ranks", "[data][sampler]") {
  const int64_t n = 10;
  const int size = 4;
  std::vector<DistributedSampler> ranks;
  for (int r = 0; r < size; ++r) ranks.emplace_back(n, r, size, /*shuffle=*/true, /*seed=*/42);

  std::vector<std::vector<int64_t>> epoch0;
  for (const DistributedSampler& s : ranks) {
    CHECK(s.samples_per_rank() == 3);  // ceil(10 / 4)
    epoch0.push_back(s.indices(0));
    CHECK(epoch0.back().size() == 3u);
  }
  // Interleaving the ranks gives back the padded order: a permutation of [0, 10) followed
  // by its first two entries again.
  std::vector<int64_t> padded;
  for (std::size_t k = 0; k < 3; ++k)
    for (int r = 0; r < size; ++r) padded.push_back(epoch0[static_cast<std::size_t>(r)][k]);
  const std::set<int64_t> first_ten(padded.begin(), padded.begin() + 10);
  CHECK(first_ten.size() == 10u);
  CHECK(*first_ten.begin() == 0);
  CHECK(*first_ten.rbegin() == 9);
  CHECK(padded[10] == padded[0]);
  CHECK(padded[11] == padded[1]);
  // Pinned, so that a change of generator or shuffle shows up (every rank and every
  // platform must agree on it).
  CHECK(padded == std::vector<int64_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6, 1, 7});

  CHECK(ranks[1].indices(0) == epoch0[1]);  // same (seed, epoch), same order
  CHECK(ranks[1].indices(1) != epoch0[1]);  // reshuffled every epoch
  CHECK(DistributedSampler(n, 1, size, true, 43).indices(0) != epoch0[1]);
}

TEST_CASE("DistributedSampler without shuffle deals indices round-robin", "[data][sampler]") {
  CHECK(DistributedSampler(7, 0, 3, false, 0).indices(5) == std::vector<int64_t>{0, 3, 6});
  CHECK(DistributedSampler(7, 1, 3, false, 0).indices(5) == std::vector<int64_t>{1, 4, 0});
  CHECK(DistributedSampler(7, 2, 3, false, 0).indices(5) == std::vector<int64_t>{2, 5, 1});
  CHECK(DistributedSampler(2, 3, 5, false, 0).indices(0) == std::vector<int64_t>{1});  // fewer samples than ranks
  CHECK(DistributedSampler(0, 0, 2, true, 0).indices(0).empty());
  CHECK_THROWS_AS(DistributedSampler(7, 3, 3, false, 0), kolo::Error);
  CHECK_THROWS_AS(DistributedSampler(7, 0, 0, false, 0), kolo::Error);
}

TEST_CASE("every rank's sampler covers the dataset once over a large world", "[data][sampler]") {
  const int64_t n = 1000;
  for (int size : {1, 3, 8}) {
    std::vector<int64_t> seen(n, 0);
    int64_t per_rank = -1;
    for (int r = 0; r < size; ++r) {
      const std::vector<int64_t> mine = DistributedSampler(n, r, size, true, 7).indices(3);
      if (per_rank < 0) per_rank = static_cast<int64_t>(mine.size());
      CHECK(static_cast<int64_t>(mine.size()) == per_rank);
      for (int64_t i : mine) ++seen.at(static_cast<std::size_t>(i));
    }
    const int64_t padding = per_rank * size - n;
    CHECK(std::count(seen.begin(), seen.end(), 0) == 0);
    CHECK(std::accumulate(seen.begin(), seen.end(), int64_t{0}) == n + padding);
  }
}

// ---- DataLoader --------------------------------------------------------------------------------

namespace {

// The whole epoch as the loader delivers it, batch by batch.
struct Epoch {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<float> images;
  std::vector<int32_t> labels;
};

Epoch run_epoch(DataLoader& loader, int64_t epoch) {
  loader.start_epoch(epoch);
  Epoch result;
  Batch batch;
  while (loader.next(batch)) {
    result.shapes.push_back(batch.shape);
    result.images.insert(result.images.end(), batch.images.begin(), batch.images.end());
    result.labels.insert(result.labels.end(), batch.labels.begin(), batch.labels.end());
  }
  CHECK_FALSE(loader.next(batch));  // and stays at the end
  return result;
}

}  // namespace

TEST_CASE("DataLoader delivers the sampler's order in batches, with any number of workers", "[data][loader]") {
  const Dataset data = synthetic_dataset(50, 2, 3, 4, 10, 5);
  const DistributedSampler sampler(50, 1, 2, true, 11);  // 25 samples on this rank
  for (int workers : {1, 3}) {
    for (bool drop_last : {false, true}) {
      LoaderOptions options;
      options.batch_size = 4;
      options.drop_last = drop_last;
      options.workers = workers;
      options.prefetch = 2;
      DataLoader loader(data, sampler, options);
      const int64_t batches = drop_last ? 6 : 7;  // 25 = 6 × 4 + 1
      CHECK(loader.batches_per_epoch() == batches);
      for (int64_t epoch : {0, 1}) {
        const Epoch got = run_epoch(loader, epoch);
        REQUIRE(static_cast<int64_t>(got.shapes.size()) == batches);
        CHECK(got.shapes.front() == std::vector<int64_t>{4, 2, 3, 4});
        CHECK(got.shapes.back() == std::vector<int64_t>{drop_last ? 4 : 1, 2, 3, 4});
        std::vector<int64_t> order = sampler.indices(epoch);
        order.resize(static_cast<std::size_t>(drop_last ? 24 : 25));
        std::vector<float> images;
        std::vector<int32_t> labels;
        for (int64_t i : order) {
          images.insert(images.end(), data.images.begin() + i * 24, data.images.begin() + (i + 1) * 24);
          labels.push_back(data.labels[static_cast<std::size_t>(i)]);
        }
        CHECK(got.images == images);
        CHECK(got.labels == labels);
      }
    }
  }
}

TEST_CASE("DataLoader augmentation depends on (seed, epoch, sample), not on the workers", "[data][loader]") {
  const Dataset data = synthetic_dataset(40, 3, 6, 6, 10, 1);
  const DistributedSampler sampler(40, 0, 1, true, 3);
  LoaderOptions options;
  options.batch_size = 5;
  options.random_flip = true;
  options.random_crop_padding = 2;
  options.resize_to = 8;
  options.mean = {0.5f, 0.4f, 0.3f};
  options.stddev = {0.2f, 0.25f, 0.3f};
  options.seed = 99;

  std::vector<Epoch> runs;
  for (int workers : {1, 4}) {
    options.workers = workers;
    options.prefetch = workers == 1 ? 1 : 3;
    DataLoader loader(data, sampler, options);
    runs.push_back(run_epoch(loader, 2));
    CHECK(runs.back().shapes.front() == std::vector<int64_t>{5, 3, 8, 8});
    CHECK(run_epoch(loader, 3).images != runs.back().images);  // new epoch, new crops and flips
  }
  CHECK(runs[0].images == runs[1].images);
  CHECK(runs[0].labels == runs[1].labels);

  // Without augmentation the same pipeline gives something else: the random steps did act.
  options.random_flip = false;
  options.random_crop_padding = -1;
  DataLoader plain(data, sampler, options);
  CHECK(run_epoch(plain, 2).images != runs[0].images);
}

TEST_CASE("DataLoader rethrows a worker's exception from next()", "[data][loader]") {
  const Dataset data = synthetic_dataset(30, 1, 2, 2, 10, 2);
  const DistributedSampler sampler(30, 0, 1, false, 0);
  std::atomic<bool> broken{true};
  LoaderOptions options;
  options.batch_size = 4;
  options.workers = 3;
  options.transform = [&](float*, int64_t, int64_t, int64_t, int64_t index) {
    if (broken && index == 9) throw std::runtime_error("bad sample 9");
  };
  DataLoader loader(data, sampler, options);
  loader.start_epoch(0);
  Batch batch;
  CHECK(loader.next(batch));  // samples 0-3
  CHECK(loader.next(batch));  // 4-7
  CHECK_THROWS_WITH(loader.next(batch), "bad sample 9");
  CHECK_THROWS_WITH(loader.next(batch), "bad sample 9");  // stays failed until a new epoch
  broken = false;
  CHECK(static_cast<int64_t>(run_epoch(loader, 1).labels.size()) == 28);
}

TEST_CASE("DataLoader stops promptly when dropped mid-epoch", "[data][loader]") {
  const Dataset data = synthetic_dataset(2000, 1, 4, 4, 10, 2);
  const DistributedSampler sampler(2000, 0, 1, true, 0);
  LoaderOptions options;
  options.batch_size = 10;
  options.workers = 3;
  options.prefetch = 2;
  options.transform = [](float*, int64_t, int64_t, int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  const auto start = std::chrono::steady_clock::now();
  {
    DataLoader loader(data, sampler, options);  // never started
  }
  {
    DataLoader loader(data, sampler, options);
    loader.start_epoch(0);  // workers fill the window and wait
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  {
    DataLoader loader(data, sampler, options);
    Batch batch;
    CHECK(loader.next(batch));  // no start_epoch: epoch 0
    CHECK(batch.labels.size() == 10u);
    loader.start_epoch(1);  // restart with batches of epoch 0 still in flight
    CHECK(loader.next(batch));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 2.0);  // a whole epoch would take 2000 × 1 ms / 3 workers
}

TEST_CASE("DataLoader gives up on a transform that never returns, and its destructor does not wait for it",
          "[data][loader]") {
  // Shared with the stuck worker, which outlives the loader and the dataset.
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto returned = std::make_shared<std::atomic<bool>>(false);
  auto data = std::make_unique<Dataset>(synthetic_dataset(20, 1, 2, 2, 10, 2));
  const DistributedSampler sampler(20, 0, 1, false, 0);
  LoaderOptions options;
  options.batch_size = 4;
  options.workers = 2;
  options.timeout_seconds = 0.3;
  options.transform = [release, returned](float*, int64_t, int64_t, int64_t, int64_t index) {
    if (index != 5) return;  // batch 1
    while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    *returned = true;
  };
  using Clock = std::chrono::steady_clock;
  auto loader = std::make_unique<DataLoader>(*data, sampler, options);
  Batch batch;
  CHECK(loader->next(batch));  // samples 0-3
  auto start = Clock::now();
  CHECK_THROWS_MATCHES(loader->next(batch), kolo::Error, HasCode(StatusCode::Stalled, "timeout_seconds"));
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  CHECK(waited >= 0.29);
  CHECK(waited < 5.0);

  start = Clock::now();
  loader.reset();  // the worker in the transform is left behind
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 3.0);
  data.reset();  // what it must not touch once it returns (ASan would see it)
  *release = true;
  for (int i = 0; i < 5000 && !*returned; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(*returned);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it leave build_batch and exit
}

TEST_CASE("DataLoader refuses options it cannot honour", "[data][loader]") {
  const Dataset data = synthetic_dataset(10, 3, 2, 2, 10, 2);
  const DistributedSampler sampler(10, 0, 1, false, 0);
  LoaderOptions options;
  options.batch_size = 0;
  CHECK_THROWS_AS(DataLoader(data, sampler, options), kolo::Error);
  options.batch_size = 2;
  CHECK_THROWS_AS(DataLoader(data, DistributedSampler(11, 0, 1, false, 0), options), kolo::Error);
  options.mean = {0.5f, 0.5f};
  options.stddev = {1, 1};
  CHECK_THROWS_AS(DataLoader(data, sampler, options), kolo::Error);
  options.mean = {0.5f};
  options.stddev = {};
  CHECK_THROWS_AS(DataLoader(data, sampler, options), kolo::Error);
  options.stddev = {1};
  for (const double timeout : {0.0, -1.0, std::nan(""), 1e300}) {
    options.timeout_seconds = timeout;
    CHECK_THROWS_MATCHES(DataLoader(data, sampler, options), kolo::Error,
                         HasCode(StatusCode::InvalidArgument, "timeout_seconds"));
  }
}
