// Reading a data file that may be gzip-compressed, and the two ways data files fail, each a
// kolo::Error that names the file and the problem. Private to models/data/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct gzFile_s;  // zlib's handle, kept out of this header

namespace kolo::models::data {

// "kolo: <path>: <problem>" as a kolo::Error. unreadable: IoError, the operating system
// could not open or read the path (missing, a folder, no permission). corrupt:
// InvalidArgument, the bytes are there but are not a valid file of the format (bad magic,
// truncated, damaged gzip, a label out of range).
[[noreturn]] void unreadable(const std::string& path, const std::string& problem);
[[noreturn]] void corrupt(const std::string& path, const std::string& problem);

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
  // Damaged gzip (a bad deflate stream, CRC or length, or a stream cut short) is
  // "corrupt gzip data: <zlib's reason>" as soon as the read reaches it.
  std::vector<uint8_t> read(uint64_t count);
  std::vector<uint8_t> read_all() { return read(UINT64_MAX); }
  // Reads the rest of the data without keeping it and returns its length: a gzip stream
  // is only known to be whole once its trailer has been checked, so a reader that has all
  // it wants still reads to the end before it calls anything left over trailing data.
  uint64_t skip_rest();
  const std::string& path() const { return path_; }

 private:
  // One gzread of up to `want` bytes (at most kChunk) into `into`; fewer only at the end.
  std::size_t read_some(uint8_t* into, std::size_t want);
  // gzread takes an unsigned int; a small chunk also keeps a small file's read small.
  static constexpr std::size_t kChunk = 64 << 10;

  std::string path_;
  gzFile_s* file_ = nullptr;
};

}  // namespace kolo::models::data
