#include "sim/json_fields.h"

#include <fstream>

namespace kolo::sim {

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what) {
  std::ifstream in(file);
  if (!in) throw DataFileError(file.string() + ": cannot open the " + what);
  try {
    nlohmann::json document;
    in >> document;
    return document;
  } catch (const nlohmann::json::parse_error& e) {
    throw DataFileError(file.string() + ": not valid JSON: " + e.what());
  }
}

}  // namespace kolo::sim
