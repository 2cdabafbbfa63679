// Reading parity fixtures (written by export_fixtures.py) and reproducing their
// parameter rule, for kolo-parity.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kolo::parity {

struct FixtureTensor {
  std::string name, dtype, file;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  double noise_rel_l2 = 0, noise_max_rel = 0;
};

struct Fixture {
  std::string folder;
  std::map<std::string, std::vector<std::string>> meta;  // key -> values
  std::vector<FixtureTensor> tensors;                     // in file order

  const FixtureTensor* find(const std::string& name) const;
  std::vector<float> floats(const FixtureTensor& t) const;   // f32, or u8 scaled to [0, 1]
  std::vector<int32_t> ints(const FixtureTensor& t) const;   // i32
  std::string meta_value(const std::string& key, std::size_t index = 0) const;
};

// Throws kolo::Error naming the file and line on any malformed record.
Fixture read_fixture(const std::string& folder);

// export_fixtures.py's param_values(): the value of every element of a parameter or buffer.
std::vector<float> rule_values(uint64_t seed, const std::string& name, const std::vector<int64_t>& shape);

}  // namespace kolo::parity
