// sim/json_fields.h: reading the simulator's small JSON data files (hardware, model
// profiles) with errors that name the file and the field.
#pragma once

#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace kolo::sim {

// A bad data file: the message names the file and the field.
class DataFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The file's JSON; `what` names the kind of file in errors ("hardware file").
nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what);

// Reads fields of one JSON object, naming origin and the dotted field path in every error.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string origin, std::string prefix)
      : object_(object), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!object_.is_object())
      throw DataFileError(origin_ + ": " + (prefix_.empty() ? "the document" : "field '" + prefix_.substr(0, prefix_.size() - 1) + "'") +
                          " must be a JSON object");
  }

  const nlohmann::json& field(const std::string& name) const {
    auto it = object_.find(name);
    if (it == object_.end()) fail(name, "is missing");
    return *it;
  }

  double number(const std::string& name, bool zero_allowed) const {
    const nlohmann::json& value = field(name);
    if (!value.is_number()) fail(name, "must be a number, got " + value.dump());
    const double x = value.get<double>();
    if (x < 0) fail(name, "must not be negative, got " + value.dump());
    if (x == 0 && !zero_allowed) fail(name, "must be positive, got 0");
    return x;
  }

  bool has(const std::string& name) const { return object_.contains(name); }

  bool boolean(const std::string& name) const {
    const nlohmann::json& value = field(name);
    if (!value.is_boolean()) fail(name, "must be true or false, got " + value.dump());
    return value.get<bool>();
  }

  int count(const std::string& name) const {
    const nlohmann::json& value = field(name);
    if (!value.is_number_integer() || value.get<long long>() < 1)
      fail(name, "must be a whole number of at least 1, got " + value.dump());
    if (value.get<long long>() > std::numeric_limits<int>::max())  // get<int> would wrap it
      fail(name, "must be at most " + std::to_string(std::numeric_limits<int>::max()) + ", got " + value.dump());
    return value.get<int>();
  }

  std::string text(const std::string& name) const {
    const nlohmann::json& value = field(name);
    if (!value.is_string()) fail(name, "must be a string, got " + value.dump());
    return value.get<std::string>();
  }

  // An object field of strings, as a map (a data file's "sources").
  std::map<std::string, std::string> strings(const std::string& name) const {
    const FieldReader inner = object(name);
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : field(name).items()) out[key] = inner.text(key);
    return out;
  }

  FieldReader object(const std::string& name) const { return FieldReader(field(name), origin_, prefix_ + name + "."); }

  // A non-empty array field.
  const nlohmann::json& array(const std::string& name) const {
    const nlohmann::json& value = field(name);
    if (!value.is_array() || value.empty()) fail(name, "must be a non-empty array");
    return value;
  }

  [[noreturn]] void fail(const std::string& name, const std::string& what) const {
    throw DataFileError(origin_ + ": field '" + prefix_ + name + "' " + what);
  }

 private:
  const nlohmann::json& object_;
  std::string origin_;
  std::string prefix_;
};

}  // namespace kolo::sim
