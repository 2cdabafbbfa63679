// Helpers for the checkpoint tests: a scratch folder, raw file bytes, the message of the
// kolo::Error a call throws, and a small checkpoint to save.
#pragma once

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kolo/models.h"
#include "support/temp_dir.h"

namespace ckpt_test {

namespace fs = std::filesystem;

// A fresh folder (support/temp_dir.h) that also finds save_checkpoint's temporaries.
struct TempDir : kolo_test::TempDir {
  TempDir() : kolo_test::TempDir("kolo-checkpoint-test") {}

  // Names of files that look like save_checkpoint's temporaries ("<name>.tmp.<pid>").
  std::vector<std::string> temporaries() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(path))
      if (entry.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(entry.path());
    return found;
  }
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// The message of the kolo::Error that `call` throws ("" and a test failure if none), which
// must carry `code`.
template <typename F>
std::string error_of(kolo::StatusCode code, F&& call) {
  try {
    call();
  } catch (const kolo::Error& e) {
    CHECK(kolo::status_code_name(e.code()) == std::string(kolo::status_code_name(code)));
    return e.what();
  }
  FAIL_CHECK("no kolo::Error was thrown");
  return "";
}

// A small checkpoint with something in every section.
inline kolo::models::Checkpoint small_checkpoint() {
  kolo::models::Checkpoint c;
  c.shapes["conv.weight"] = {2, 1, 1, 2};
  c.tensors["conv.weight"] = {0.5f, -1.0f, 2.25f, 3.0f};
  c.shapes["bn.num_batches_tracked"] = {};
  c.tensors["bn.num_batches_tracked"] = {7};
  c.optimizer_name = "sgd";
  c.optimizer.tensors["momentum/conv.weight"] = {0.1f, 0.2f, 0.3f, 0.4f};
  c.optimizer.scalars["lr"] = 0.05;
  c.epoch = 12;
  c.rng["sampler"] = "5489 1 2 3";
  c.metadata["model"] = "tiny";
  return c;
}

}  // namespace ckpt_test
