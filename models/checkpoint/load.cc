// load_checkpoint: checks a checkpoint file from the outside in (magic, version, header
// checksum, length, whole-file checksum) and only then parses it, bounding every count
// and length by the bytes that remain, so that no file, however damaged, can crash the
// reader or make it allocate more than the file's size.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kolo/models.h"
#include "models/checkpoint/format.h"

namespace kolo::models {
namespace {
using namespace checkpoint_format;

// The file's bytes are not a checkpoint (bad magic, truncated, corrupt): InvalidArgument;
// a checkpoint of a newer format: Unsupported.
[[noreturn]] void reject(const std::string& path, const std::string& why,
                         StatusCode code = StatusCode::InvalidArgument) {
  throw Error(code, "kolo: checkpoint " + path + ": " + why);
}
// The operating system could not open, inspect or read the path.
[[noreturn]] void os_failure(const std::string& path, const std::string& why) {
  throw Error(StatusCode::IoError, "kolo: cannot read checkpoint " + path + ": " + why);
}

struct File {
  int fd = -1;
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads up to n bytes at offset; fewer only at the end of the file.
std::size_t read_at(int fd, const std::string& path, void* data, std::size_t n, uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, static_cast<char*>(data) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) os_failure(path, std::strerror(errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

// Sequential reads within [position, end) through a buffer; asking for more than is left
// means the structure is inconsistent.
class Reader {
 public:
  Reader(int fd, std::string path, uint64_t begin, uint64_t end) : fd_(fd), path_(std::move(path)), pos_(begin), end_(end) {}

  uint64_t remaining() const { return end_ - pos_; }
  uint64_t position() const { return pos_; }
  void set_end(uint64_t end) { end_ = end; }

  void bytes(void* data, uint64_t n, const char* what) {
    if (n > remaining()) corrupt(std::string(what) + " extends past the end of its section");
    auto* out = static_cast<char*>(data);
    while (n > 0) {
      if (buffered_ == 0 && n >= kBufferBytes) {  // large tensors: straight into place
        if (read_at(fd_, path_, out, n, pos_) != n) corrupt("the file shrank while being read");
        pos_ += n;
        return;
      }
      if (buffered_ == 0) fill();
      const std::size_t take = static_cast<std::size_t>(std::min<uint64_t>(n, buffered_));
      std::memcpy(out, buffer_.data() + (buffer_.size() - buffered_), take);
      buffered_ -= take;
      pos_ += take;
      out += take;
      n -= take;
    }
  }
  void skip(uint64_t n) {
    if (n > remaining()) corrupt("a section extends past the end of the file");
    buffered_ = n < buffered_ ? buffered_ - static_cast<std::size_t>(n) : 0;
    pos_ += n;
  }
  uint32_t u32(const char* what) {
    uint8_t b[4];
    bytes(b, 4, what);
    return static_cast<uint32_t>(load_le(b, 4));
  }
  uint64_t u64(const char* what) {
    uint8_t b[8];
    bytes(b, 8, what);
    return load_le(b, 8);
  }
  double f64(const char* what) { return std::bit_cast<double>(u64(what)); }
  std::string string(const char* what) {
    const uint64_t n = u64(what);
    if (n > remaining()) corrupt(std::string(what) + " of " + std::to_string(n) + " bytes extends past the end");
    std::string s(static_cast<std::size_t>(n), '\0');
    bytes(s.data(), n, what);
    return s;
  }
  std::vector<float> floats(const std::string& what) {
    const uint64_t n = u64(what.c_str());
    if (n > remaining() / sizeof(float))
      corrupt(what + " of " + std::to_string(n) + " values extends past the end");
    std::vector<float> values(static_cast<std::size_t>(n));
    bytes(values.data(), n * sizeof(float), what.c_str());
    if constexpr (!kHostIsLittleEndian)
      for (float& v : values) v = std::bit_cast<float>(static_cast<uint32_t>(load_le(reinterpret_cast<uint8_t*>(&v), 4)));
    return values;
  }
  // A count of records of at least min_bytes each: bounded by what is left.
  uint64_t count(const char* what, uint64_t min_bytes) {
    const uint64_t n = u64(what);
    if (n > remaining() / min_bytes) corrupt(std::string(what) + " " + std::to_string(n) + " is more than the section holds");
    return n;
  }
  [[noreturn]] void corrupt(const std::string& why) const { reject(path_, "corrupt: " + why); }

 private:
  static constexpr std::size_t kBufferBytes = 1 << 20;
  void fill() {
    const std::size_t want = static_cast<std::size_t>(std::min<uint64_t>(kBufferBytes, remaining()));
    buffer_.resize(want);
    if (read_at(fd_, path_, buffer_.data(), want, pos_) != want) corrupt("the file shrank while being read");
    buffered_ = want;
  }

  int fd_;
  std::string path_;
  uint64_t pos_, end_;
  std::vector<char> buffer_;
  std::size_t buffered_ = 0;  // unread bytes at the end of buffer_
};

// ---- Sections ---------------------------------------------------------------------------------

// The epochs completed: a count, not more than an int64 holds (a larger one was a
// negative epoch, and a resumed run counted up from it).
int64_t read_epoch(Reader& in) {
  const uint64_t epoch = in.u64("epoch");
  if (epoch > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    in.corrupt("epoch " + std::to_string(epoch) + " is not a count of epochs");
  return static_cast<int64_t>(epoch);
}

void read_tensors(Reader& in, Checkpoint& c) {
  const uint64_t n = in.count("tensor count", 8 + 4 + 8);
  for (uint64_t i = 0; i < n; ++i) {
    std::string name = in.string("tensor name");
    if (c.tensors.count(name)) in.corrupt("tensor '" + name + "' appears twice");
    const uint32_t ndim = in.u32("tensor rank");
    if (ndim > in.remaining() / 8) in.corrupt("tensor '" + name + "' has rank " + std::to_string(ndim));
    std::vector<int64_t> shape(ndim);
    uint64_t numel = 1;
    for (int64_t& d : shape) {
      const uint64_t dim = in.u64("tensor dimension");
      // Any real tensor's element count fits in the file; this also stops overflow.
      if (dim > (uint64_t{1} << 62) || (dim != 0 && numel > (uint64_t{1} << 62) / dim))
        in.corrupt("tensor '" + name + "' has a dimension of " + std::to_string(dim));
      d = static_cast<int64_t>(dim);
      numel *= dim;
    }
    std::vector<float> values = in.floats("tensor '" + name + "'");
    if (values.size() != numel)
      in.corrupt("tensor '" + name + "' has shape " + shape_string(shape) + " but " + std::to_string(values.size()) + " values");
    c.shapes[name] = std::move(shape);
    c.tensors[name] = std::move(values);
  }
}

void read_optimizer(Reader& in, Checkpoint& c) {
  c.optimizer_name = in.string("optimizer name");
  const uint64_t tensors = in.count("optimizer tensor count", 16);
  for (uint64_t i = 0; i < tensors; ++i) {
    std::string name = in.string("optimizer tensor name");
    c.optimizer.tensors[name] = in.floats("optimizer tensor '" + name + "'");
  }
  const uint64_t scalars = in.count("optimizer scalar count", 16);
  for (uint64_t i = 0; i < scalars; ++i) {
    std::string name = in.string("optimizer scalar name");
    c.optimizer.scalars[name] = in.f64("optimizer scalar");
  }
}

void read_strings(Reader& in, std::map<std::string, std::string>& out) {
  const uint64_t n = in.count("string count", 16);
  for (uint64_t i = 0; i < n; ++i) {
    std::string key = in.string("key");
    out[key] = in.string("value");
  }
}

Checkpoint read_sections(Reader& in) {
  Checkpoint c;
  std::vector<uint32_t> seen;
  const uint64_t end = in.position() + in.remaining();
  while (in.remaining() > 0) {
    const uint32_t tag = in.u32("section tag");
    const uint64_t length = in.u64("section length");
    if (length > in.remaining()) in.corrupt("a section of " + std::to_string(length) + " bytes extends past the end");
    const char name[5] = {static_cast<char>(tag), static_cast<char>(tag >> 8), static_cast<char>(tag >> 16),
                          static_cast<char>(tag >> 24), 0};
    if (std::find(seen.begin(), seen.end(), tag) != seen.end()) in.corrupt(std::string("section ") + name + " appears twice");
    seen.push_back(tag);
    const uint64_t section_end = in.position() + length;
    in.set_end(section_end);
    if (tag == kTensorsTag) read_tensors(in, c);
    else if (tag == kOptimizerTag) read_optimizer(in, c);
    else if (tag == kEpochTag) c.epoch = read_epoch(in);
    else if (tag == kRngTag) read_strings(in, c.rng);
    else if (tag == kMetadataTag) read_strings(in, c.metadata);
    else in.skip(length);  // a section from a later writer of the same version: not ours to read
    if (in.remaining() != 0) in.corrupt(std::string("section ") + name + " has " + std::to_string(in.remaining()) + " unread bytes");
    in.set_end(end);
  }
  return c;
}

// ---- The envelope -----------------------------------------------------------------------------

// Checks magic, version, header checksum and length; returns the length.
uint64_t check_header(int fd, const std::string& path, uint64_t size) {
  uint8_t header[kHeaderBytes];
  const std::size_t got = read_at(fd, path, header, sizeof header, 0);
  const std::size_t magic_bytes = std::min<std::size_t>(got, sizeof kMagic);
  if (std::memcmp(header, kMagic, magic_bytes) != 0) reject(path, "not a kolo checkpoint (bad magic)");
  if (got < 12) reject(path, "truncated: " + std::to_string(size) + " bytes, shorter than the header");
  const auto version = static_cast<uint32_t>(load_le(header + 8, 4));
  if (version > kFormatVersion)
    reject(path, "written by a newer kolo: format version " + std::to_string(version) + ", this build reads up to " +
                     std::to_string(kFormatVersion), StatusCode::Unsupported);
  if (version == 0) reject(path, "corrupt: format version 0");
  if (got < kHeaderBytes) reject(path, "truncated: " + std::to_string(size) + " bytes, shorter than the header");
  if (load_le(header + 20, 4) != crc32_update(0, header, 20)) reject(path, "corrupt: header checksum mismatch");
  const uint64_t length = load_le(header + 12, 8);
  if (length < kHeaderBytes + kTrailerBytes) reject(path, "corrupt: header gives a length of " + std::to_string(length));
  if (size < length)
    reject(path, "truncated: " + std::to_string(size) + " of " + std::to_string(length) + " bytes");
  if (size > length)
    reject(path, "corrupt: " + std::to_string(size) + " bytes, but the header says " + std::to_string(length));
  return length;
}

void check_crc(int fd, const std::string& path, uint64_t length) {
  std::vector<char> buffer(static_cast<std::size_t>(std::min<uint64_t>(1 << 20, length)));
  uint32_t crc = 0;
  for (uint64_t pos = 0; pos < length - kTrailerBytes;) {
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(buffer.size(), length - kTrailerBytes - pos));
    if (read_at(fd, path, buffer.data(), n, pos) != n) reject(path, "truncated while being read");
    crc = crc32_update(crc, buffer.data(), n);
    pos += n;
  }
  uint8_t stored[4];
  if (read_at(fd, path, stored, 4, length - kTrailerBytes) != 4) reject(path, "truncated while being read");
  if (load_le(stored, 4) != crc) reject(path, "corrupt: checksum mismatch");
}

}  // namespace

Checkpoint load_checkpoint(const std::string& path) {
  File file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block the open
  if (file.fd < 0) os_failure(path, std::strerror(errno));
  struct stat st;
  if (::fstat(file.fd, &st) != 0) os_failure(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) os_failure(path, "not a regular file");  // a folder, a device: as EISDIR would be
  const uint64_t size = static_cast<uint64_t>(st.st_size);

  const uint64_t length = check_header(file.fd, path, size);
  check_crc(file.fd, path, length);
  Reader reader(file.fd, path, kHeaderBytes, length - kTrailerBytes);
  return read_sections(reader);
}

}  // namespace kolo::models
