// A fresh folder for one test, removed with everything in it when the test ends:
//   const kolo_test::TempDir dir("kolo-data-test");
//   write_file(dir / "images", bytes);    // "/tmp/kolo-data-test-<pid>-<n>/images"
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>

namespace kolo_test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "kolo-test") {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    ::chmod(path.c_str(), 0700);  // in case a test made it read-only
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace kolo_test
