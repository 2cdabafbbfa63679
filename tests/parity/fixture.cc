#include "fixture.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kolo/kolo.h"

namespace kolo::parity {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(StatusCode::InvalidArgument, "kolo-parity: " + where + ": " + what);
}

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<float> rule_values(uint64_t seed, const std::string& name, const std::vector<int64_t>& shape) {
  int64_t count = 1, fan_in = 1;
  for (int64_t d : shape) count *= d;
  for (std::size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
  const uint64_t base = seed ^ fnv1a64(name);
  std::vector<float> v(static_cast<std::size_t>(count));
  const bool batch_norm = name.find("bn") != std::string::npos || name.find("downsample.1") != std::string::npos;
  for (int64_t i = 0; i < count; ++i) {
    // Same float32 rounding steps as numpy: the uniform value is a float32 first.
    const float u = static_cast<float>(double(splitmix64(base + uint64_t(i)) >> 40) / double(1 << 23) - 1.0);
    float x;
    // numpy computes these in float32 (a float32 array with Python scalars), so do we.
    if (ends_with(name, "running_var")) x = 1.0f + 0.25f * (u + 1.0f);
    else if (ends_with(name, "running_mean")) x = 0.1f * u;
    else if (ends_with(name, "num_batches_tracked")) x = 0.0f;
    else if (shape.size() >= 2) x = u / static_cast<float>(std::sqrt(double(fan_in)));
    else if (batch_norm && ends_with(name, "weight")) x = 1.0f + 0.1f * u;
    else x = 0.1f * u;
    v[static_cast<std::size_t>(i)] = x;
  }
  return v;
}

Fixture read_fixture(const std::string& folder) {
  Fixture f;
  f.folder = folder;
  const std::string index = folder + "/index.txt";
  std::ifstream in(index);
  if (!in) bad(index, "cannot open");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::string kind;
    if (!(words >> kind) || kind[0] == '#') continue;
    const std::string where = index + ":" + std::to_string(number);
    if (kind == "meta") {
      std::string key, value;
      if (!(words >> key)) bad(where, "meta without a key");
      auto& values = f.meta[key];
      while (words >> value) values.push_back(value);
    } else if (kind == "tensor") {
      FixtureTensor t;
      int ndim = -1;
      if (!(words >> t.name >> t.dtype >> ndim) || ndim < 0 || ndim > 8) bad(where, "bad tensor record");
      t.shape.resize(static_cast<std::size_t>(ndim));
      for (int64_t& d : t.shape)
        if (!(words >> d) || d < 0) bad(where, "bad dimension");
      if (!(words >> t.file >> t.bytes >> t.noise_rel_l2 >> t.noise_max_rel)) bad(where, "bad tensor record");
      const int64_t element = t.dtype == "u8" ? 1 : (t.dtype == "f32" || t.dtype == "i32") ? 4 : 0;
      if (element == 0) bad(where, "unknown dtype '" + t.dtype + "'");
      int64_t bytes = element;
      for (int64_t d : t.shape)
        if (__builtin_mul_overflow(bytes, d, &bytes)) bad(where, "the shape's byte count overflows");
      if (bytes != t.bytes) bad(where, "byte count does not match the shape");
      f.tensors.push_back(std::move(t));
    } else {
      bad(where, "unknown record '" + kind + "'");
    }
  }
  return f;
}

const FixtureTensor* Fixture::find(const std::string& name) const {
  for (const FixtureTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {
std::vector<char> read_bytes(const Fixture& f, const FixtureTensor& t) {
  const std::string path = f.folder + "/" + t.file;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) bad(path, "cannot open");
  // The file's own size before a buffer of the record's: the record is only a claim.
  const std::streamoff size = in.tellg();
  if (size != t.bytes)
    bad(path, "expected exactly " + std::to_string(t.bytes) + " bytes, found " + std::to_string(size));
  in.seekg(0);
  std::vector<char> bytes(static_cast<std::size_t>(size));
  if (!in.read(bytes.data(), size)) bad(path, "cannot read " + std::to_string(size) + " bytes");
  return bytes;
}
}  // namespace

std::vector<float> Fixture::floats(const FixtureTensor& t) const {
  const std::vector<char> bytes = read_bytes(*this, t);
  std::vector<float> v;
  if (t.dtype == "u8") {
    for (char c : bytes) v.push_back(static_cast<float>(static_cast<unsigned char>(c)) / 255.0f);
  } else {
    v.resize(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
  }
  return v;
}

std::vector<int32_t> Fixture::ints(const FixtureTensor& t) const {
  const std::vector<char> bytes = read_bytes(*this, t);
  std::vector<int32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::string Fixture::meta_value(const std::string& key, std::size_t index) const {
  auto it = meta.find(key);
  if (it == meta.end() || it->second.size() <= index) bad(folder, "index.txt has no 'meta " + key + "'");
  return it->second[index];
}

}  // namespace kolo::parity
