// Reading a data file that may be gzip-compressed, and the one way data files fail: a
// kolo::Error(InvalidArgument) that names the file and the problem. Private to models/data/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct gzFile_s;  // zlib's handle, kept out of this header

namespace kolo::models::data {

// "kolo: <path>: <problem>" as a kolo::Error(InvalidArgument).
[[noreturn]] void fail(const std::string& path, const std::string& problem);

// Reads plain and gzip files alike: zlib looks at the first bytes (the gzip magic 1f 8b),
// not at the name, and passes anything else through unchanged.
class FileReader {
 public:
  explicit FileReader(const std::string& path);  // fails with "cannot open: <strerror>"
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Up to `count` bytes; fewer only at the end of the data. The buffer grows with what
  // was actually read, so a header that claims terabytes cannot make us allocate them.
  std::vector<uint8_t> read(uint64_t count);
  std::vector<uint8_t> read_all() { return read(UINT64_MAX); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile_s* file_ = nullptr;
};

}  // namespace kolo::models::data
