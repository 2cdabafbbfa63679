// FileReader: plain or gzip data files through zlib's gz* interface, with errors that
// name the file.
#include "file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kolo/kolo.h"

namespace kolo::models::data {

void unreadable(const std::string& path, const std::string& problem) {
  throw Error(StatusCode::IoError, "kolo: " + path + ": " + problem);
}

void corrupt(const std::string& path, const std::string& problem) {
  throw Error(StatusCode::InvalidArgument, "kolo: " + path + ": " + problem);
}

FileReader::FileReader(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; only a regular
  // file goes on to be read, where the flag changes nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) unreadable(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    unreadable(path, std::string("cannot read: ") + std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    unreadable(path, std::string("cannot read: ") + (S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file"));
  }
  errno = 0;
  file_ = gzdopen(fd, "rb");  // owns fd from here
  if (file_ == nullptr) {
    ::close(fd);
    unreadable(path, std::string("cannot open: ") + std::strerror(errno != 0 ? errno : ENOMEM));
  }
}

FileReader::~FileReader() {
  if (file_ != nullptr) gzclose(file_);
}

std::size_t FileReader::read_some(uint8_t* into, std::size_t want) {
  errno = 0;
  const int got = gzread(file_, into, static_cast<unsigned>(want));
  int code = Z_OK;
  std::string reason = gzerror(file_, &code);
  // zlib starts its message with what it opened ("<fd:3>: "), which ours names as the path.
  if (const std::size_t end = reason.find(">: "); reason.starts_with("<fd:") && end != std::string::npos)
    reason.erase(0, end + 3);
  if (got < 0) {
    // Z_ERRNO: the read itself failed (a directory, an I/O error); otherwise corrupt gzip.
    if (code == Z_ERRNO) unreadable(path_, std::string("cannot read: ") + std::strerror(errno));
    corrupt(path_, "corrupt gzip data: " + reason);
  }
  // A gzip stream that ends before its trailer: gzread returns what it inflated and
  // leaves Z_BUF_ERROR ("unexpected end of file") behind.
  if (static_cast<std::size_t>(got) < want && code == Z_BUF_ERROR) corrupt(path_, "corrupt gzip data: " + reason);
  return static_cast<std::size_t>(got);
}

std::vector<uint8_t> FileReader::read(uint64_t count) {
  std::vector<uint8_t> bytes;
  while (bytes.size() < count) {
    const std::size_t want = static_cast<std::size_t>(std::min<uint64_t>(kChunk, count - bytes.size()));
    const std::size_t old_size = bytes.size();
    bytes.resize(old_size + want);
    const std::size_t got = read_some(bytes.data() + old_size, want);
    bytes.resize(old_size + got);
    if (got < want) break;  // end of data
  }
  return bytes;
}

uint64_t FileReader::skip_rest() {
  std::vector<uint8_t> scratch(kChunk);
  uint64_t skipped = 0;
  for (std::size_t got = kChunk; got == kChunk;) {
    got = read_some(scratch.data(), kChunk);
    skipped += got;
  }
  return skipped;
}

}  // namespace kolo::models::data
