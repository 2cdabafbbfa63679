// IDX files (MNIST, Fashion-MNIST): a big-endian header — magic 0x000008NN (unsigned
// bytes, NN dimensions) and one 32-bit size per dimension — then the raw bytes. Images are
// idx3 (count, rows, cols), labels idx1 (count). Everything the header claims is checked
// against what the file holds before it is trusted.
#include <cstdio>
#include <filesystem>

#include "file_reader.h"
#include "kolo/models.h"

namespace kolo::models {
namespace {

using data::corrupt;

constexpr uint32_t kImageMagic = 0x00000803;
constexpr uint32_t kLabelMagic = 0x00000801;

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The header's sizes, after the magic has been checked.
std::vector<uint32_t> read_header(data::FileReader& file, uint32_t magic, const char* kind, int dims) {
  const uint64_t header_bytes = 4 + 4 * static_cast<uint64_t>(dims);
  const std::vector<uint8_t> header = file.read(header_bytes);
  if (header.size() >= 4 && big_endian32(header.data()) != magic) {
    corrupt(file.path(), std::string("not an IDX ") + kind + " file (magic " + hex32(big_endian32(header.data())) +
                          ", expected " + hex32(magic) + ")");
  }
  if (header.size() < header_bytes) {
    corrupt(file.path(), "truncated: expected a " + std::to_string(header_bytes) + "-byte IDX header, found " +
                          std::to_string(header.size()) + " bytes");
  }
  std::vector<uint32_t> sizes;
  for (int d = 0; d < dims; ++d) sizes.push_back(big_endian32(header.data() + 4 + 4 * d));
  return sizes;
}

// Exactly `expected` payload bytes: fewer is a truncated file, more is not this format.
// The rest is read before it is called trailing data: in a damaged gzip stream, bytes
// past the payload are the damage's doing, which the stream's trailer then reports.
std::vector<uint8_t> read_payload(data::FileReader& file, uint64_t expected, const char* what) {
  std::vector<uint8_t> bytes = file.read(expected);
  if (bytes.size() < expected) {
    corrupt(file.path(), "truncated: expected " + std::to_string(expected) + " bytes of " + what + ", found " +
                          std::to_string(bytes.size()));
  }
  if (const uint64_t extra = file.skip_rest(); extra > 0) {
    corrupt(file.path(), "trailing data: " + std::to_string(extra) + " bytes after the " + std::to_string(expected) +
                          " bytes of " + what + " that the header announces");
  }
  return bytes;
}

}  // namespace

Dataset load_idx(const std::string& images_path, const std::string& labels_path, int64_t classes) {
  if (classes < 1 || classes > 256) {
    throw Error(StatusCode::InvalidArgument,
                "kolo: load_idx: classes must be in [1, 256] (labels are bytes), got " + std::to_string(classes));
  }
  Dataset dataset;
  dataset.classes = classes;
  {
    data::FileReader file(images_path);
    const std::vector<uint32_t> sizes = read_header(file, kImageMagic, "image", 3);
    if (sizes[0] == 0 || sizes[1] == 0 || sizes[2] == 0) {
      corrupt(images_path, "empty image set (" + std::to_string(sizes[0]) + " images of " + std::to_string(sizes[1]) +
                            "x" + std::to_string(sizes[2]) + ")");
    }
    dataset.count = sizes[0];
    dataset.channels = 1;
    dataset.height = sizes[1];
    dataset.width = sizes[2];
    // rows × cols fits in 64 bits; checking the count against a limit first keeps the
    // product from overflowing on a hostile header.
    const uint64_t image_bytes = uint64_t{sizes[1]} * sizes[2];
    constexpr uint64_t kMaxPixels = uint64_t{1} << 40;
    if (sizes[0] > kMaxPixels / image_bytes) {
      corrupt(images_path, "header claims " + std::to_string(sizes[0]) + " images of " + std::to_string(sizes[1]) + "x" +
                            std::to_string(sizes[2]) + ", over 2^40 pixels");
    }
    const std::vector<uint8_t> bytes = read_payload(file, sizes[0] * image_bytes, "pixels");
    dataset.images.resize(bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) dataset.images[i] = static_cast<float>(bytes[i]) / 255.0f;
  }
  {
    data::FileReader file(labels_path);
    const uint32_t count = read_header(file, kLabelMagic, "label", 1)[0];
    if (count != dataset.count) {
      corrupt(labels_path, "holds " + std::to_string(count) + " labels but " + images_path + " holds " +
                            std::to_string(dataset.count) + " images");
    }
    const std::vector<uint8_t> bytes = read_payload(file, count, "labels");
    dataset.labels.resize(bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] >= classes) {
        corrupt(labels_path, "label " + std::to_string(bytes[i]) + " at index " + std::to_string(i) +
                              " is outside [0, " + std::to_string(classes) + ")");
      }
      dataset.labels[i] = bytes[i];
    }
  }
  return dataset;
}

Dataset load_mnist_folder(const std::string& folder, const std::string& split) {
  std::string prefix;
  if (split == "train") prefix = "train";
  else if (split == "t10k" || split == "test") prefix = "t10k";
  else {
    throw Error(StatusCode::InvalidArgument,
                "kolo: load_mnist_folder: split must be \"train\", \"t10k\" or \"test\", got \"" + split + "\"");
  }
  // The plain file if it is there (already decompressed), else the .gz as distributed.
  auto find = [&](const std::string& base) {
    const std::filesystem::path plain = std::filesystem::path(folder) / base;
    std::error_code ignored;
    if (std::filesystem::exists(plain, ignored)) return plain.string();
    const std::filesystem::path gz = std::filesystem::path(folder) / (base + ".gz");
    if (std::filesystem::exists(gz, ignored)) return gz.string();
    data::unreadable(folder, "no " + base + " or " + base + ".gz in this folder");
  };
  const std::string images = find(prefix + "-images-idx3-ubyte");
  return load_idx(images, find(prefix + "-labels-idx1-ubyte"), 10);
}

std::string default_fashion_mnist_folder() {
  return "/usr/share/datasets/fashion-mnist";  // dpkg -L dataset-fashion-mnist
}

}  // namespace kolo::models
