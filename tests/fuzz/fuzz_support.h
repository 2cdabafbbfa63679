// What the harnesses share: the input as a file for readers that only take a path (a
// memfd, so nothing touches the disk), one input split into two, and the check of a
// property, which aborts so that libFuzzer keeps the input as a crash.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

namespace kolo_fuzz {

inline void require(bool holds, const char* property) {
  if (holds) return;
  std::fprintf(stderr, "kolo fuzz: property does not hold: %s\n", property);
  std::abort();
}

// An in-memory file under a path that open() and zlib's gzopen() accept: /proc/self/fd/N.
// Each harness keeps one and replaces its contents for every input.
class MemoryFile {
 public:
  explicit MemoryFile(const char* name) : fd_(::memfd_create(name, 0)) {
    require(fd_ >= 0, "memfd_create succeeds");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  const std::string& hold(std::string_view bytes) {
    require(::ftruncate(fd_, 0) == 0, "a memfd can be emptied");
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      require(n > 0, "a memfd can be written");
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

inline std::string_view as_text(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Two inputs from one: a 16-bit little-endian length (clamped to what follows), that many
// bytes, then the rest. tests/fuzz/write_seeds.cc writes seeds the same way.
inline std::pair<std::string_view, std::string_view> split_in_two(std::string_view input) {
  if (input.size() < 2) return {input, {}};
  const std::size_t first = std::min<std::size_t>(
      static_cast<uint8_t>(input[0]) | std::size_t{static_cast<uint8_t>(input[1])} << 8, input.size() - 2);
  return {input.substr(2, first), input.substr(2 + first)};
}

}  // namespace kolo_fuzz
