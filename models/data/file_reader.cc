// FileReader: plain or gzip data files through zlib's gz* interface, with errors that
// name the file.
#include "file_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kolo/kolo.h"

namespace kolo::models::data {

void fail(const std::string& path, const std::string& problem) {
  throw Error(StatusCode::InvalidArgument, "kolo: " + path + ": " + problem);
}

FileReader::FileReader(const std::string& path) : path_(path) {
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");
  if (file_ == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno != 0 ? errno : ENOMEM));
}

FileReader::~FileReader() {
  if (file_ != nullptr) gzclose(file_);
}

std::vector<uint8_t> FileReader::read(uint64_t count) {
  constexpr uint64_t kChunk = 1 << 20;  // gzread takes an unsigned int
  std::vector<uint8_t> bytes;
  while (bytes.size() < count) {
    const uint64_t want = std::min<uint64_t>(kChunk, count - bytes.size());
    const std::size_t old_size = bytes.size();
    bytes.resize(old_size + want);
    errno = 0;
    const int got = gzread(file_, bytes.data() + old_size, static_cast<unsigned>(want));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file_, &code);
      // Z_ERRNO: the read itself failed (a directory, an I/O error); otherwise corrupt gzip.
      fail(path_, code == Z_ERRNO ? std::string("cannot read: ") + std::strerror(errno)
                                  : std::string("corrupt gzip data: ") + message);
    }
    bytes.resize(old_size + static_cast<std::size_t>(got));
    if (static_cast<uint64_t>(got) < want) break;  // end of data
  }
  return bytes;
}

}  // namespace kolo::models::data
