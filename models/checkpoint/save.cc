// save_checkpoint: serialises a Checkpoint (docs/checkpoint-format.md) and writes it
// atomically: "<path>.tmp.<pid>" in the same directory, fsync, rename over the target,
// fsync of the directory. A crash at any point leaves either the old file or the new one
// under the real name, never a mixture; on any error the temporary file is removed.
// A writer that was killed cannot remove its temporary file: the next save to the same
// path does (the writer holds a lock on it while it lives, so a live one's is kept).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "kolo/models.h"
#include "models/checkpoint/format.h"

namespace kolo::models {
namespace {
using namespace checkpoint_format;

// An operating-system call that failed: which one (with its file) and errno.
struct OsFailure {
  std::string what;
  int error;
};

// Counts bytes: the first pass over a section, to know its length before writing it.
struct ByteCounter {
  uint64_t count = 0;
  void bytes(const void*, std::size_t n) { count += n; }
};

// Writes through a 1 MiB buffer and keeps the CRC-32 of everything written.
class FileSink {
 public:
  FileSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) { buffer_.reserve(kBufferBytes); }

  void bytes(const void* data, std::size_t n) {
    crc_ = crc32_update(crc_, data, n);
    const char* p = static_cast<const char*>(data);
    if (buffer_.size() + n > kBufferBytes) flush();
    if (n >= kBufferBytes) {
      write_all(p, n);  // large tensors go straight to the file
    } else {
      buffer_.insert(buffer_.end(), p, p + n);
    }
  }
  void flush() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  uint32_t crc() const { return crc_; }

 private:
  static constexpr std::size_t kBufferBytes = 1 << 20;
  void write_all(const char* p, std::size_t n) {
    while (n > 0) {
      const ssize_t written = ::write(fd_, p, n);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) throw OsFailure{"write " + name_, written < 0 ? errno : EIO};
      p += written;
      n -= static_cast<std::size_t>(written);
    }
  }

  int fd_;
  std::string name_;
  std::vector<char> buffer_;
  uint32_t crc_ = 0;
};

// ---- Encoding (the same code counts and writes) ------------------------------------------

template <typename Out>
void put_u32(Out& out, uint32_t v) {
  uint8_t b[4];
  store_le(b, v, 4);
  out.bytes(b, 4);
}
template <typename Out>
void put_u64(Out& out, uint64_t v) {
  uint8_t b[8];
  store_le(b, v, 8);
  out.bytes(b, 8);
}
template <typename Out>
void put_f64(Out& out, double v) { put_u64(out, std::bit_cast<uint64_t>(v)); }
template <typename Out>
void put_string(Out& out, const std::string& s) {
  put_u64(out, s.size());
  out.bytes(s.data(), s.size());
}
template <typename Out>
void put_floats(Out& out, const std::vector<float>& values) {
  put_u64(out, values.size());
  if constexpr (kHostIsLittleEndian) {
    out.bytes(values.data(), values.size() * sizeof(float));
  } else {
    for (float v : values) put_u32(out, std::bit_cast<uint32_t>(v));
  }
}
template <typename Out>
void put_strings(Out& out, const std::map<std::string, std::string>& strings) {
  put_u64(out, strings.size());
  for (const auto& [key, value] : strings) {
    put_string(out, key);
    put_string(out, value);
  }
}

[[noreturn]] void invalid(const std::string& path, const std::string& what) {
  throw Error(StatusCode::InvalidArgument, "kolo: cannot save checkpoint " + path + ": " + what);
}

// Tensors without a shape are saved as 1-D; a shape must fit its tensor.
std::vector<int64_t> shape_of(const Checkpoint& c, const std::string& name, const std::string& path) {
  const std::vector<float>& values = c.tensors.at(name);
  auto it = c.shapes.find(name);
  if (it == c.shapes.end()) return {static_cast<int64_t>(values.size())};
  int64_t numel = 1;
  for (int64_t d : it->second) {
    if (d < 0) invalid(path, "tensor '" + name + "' has a negative dimension in " + shape_string(it->second));
    if (__builtin_mul_overflow(numel, d, &numel))  // {2^62, 4, 0} must not pass as 0 elements
      invalid(path, "tensor '" + name + "' has shape " + shape_string(it->second) + ", too many elements to count");
  }
  if (numel != static_cast<int64_t>(values.size()))
    invalid(path, "tensor '" + name + "' has shape " + shape_string(it->second) + " but " +
                      std::to_string(values.size()) + " values");
  return it->second;
}

template <typename Out, typename Payload>
void put_section(Out& out, uint32_t tag, const Payload& payload) {
  ByteCounter counter;
  payload(counter);
  put_u32(out, tag);
  put_u64(out, counter.count);
  payload(out);
}

template <typename Out>
void put_sections(Out& out, const Checkpoint& c, const std::string& path) {
  if (c.epoch < 0) invalid(path, "epoch " + std::to_string(c.epoch) + " is not a count of epochs");
  put_section(out, kTensorsTag, [&](auto& o) {
    put_u64(o, c.tensors.size());
    for (const auto& [name, values] : c.tensors) {
      const std::vector<int64_t> shape = shape_of(c, name, path);
      put_string(o, name);
      put_u32(o, static_cast<uint32_t>(shape.size()));
      for (int64_t d : shape) put_u64(o, static_cast<uint64_t>(d));
      put_floats(o, values);
    }
  });
  put_section(out, kOptimizerTag, [&](auto& o) {
    put_string(o, c.optimizer_name);
    put_u64(o, c.optimizer.tensors.size());
    for (const auto& [name, values] : c.optimizer.tensors) {
      put_string(o, name);
      put_floats(o, values);
    }
    put_u64(o, c.optimizer.scalars.size());
    for (const auto& [name, value] : c.optimizer.scalars) {
      put_string(o, name);
      put_f64(o, value);
    }
  });
  put_section(out, kEpochTag, [&](auto& o) { put_u64(o, static_cast<uint64_t>(c.epoch)); });
  put_section(out, kRngTag, [&](auto& o) { put_strings(o, c.rng); });
  put_section(out, kMetadataTag, [&](auto& o) { put_strings(o, c.metadata); });
}

// ---- Atomic replacement ---------------------------------------------------------------------

// The temporary file: closed and removed unless it was renamed into place.
struct TempFile {
  std::string path;  // empty until this save has created its file
  int fd = -1;
  bool renamed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!renamed && !path.empty()) ::unlink(path.c_str());
  }
};

void sync_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw OsFailure{"open directory " + dir, errno};
  // Some file systems cannot sync a directory (EINVAL); the rename is then as durable as
  // that file system makes it.
  const int failed = ::fsync(fd) != 0 && errno != EINVAL ? errno : 0;
  ::close(fd);
  if (failed) throw OsFailure{"fsync directory " + dir, failed};
}

// Whether `name` is "<target>.tmp.<digits>": a temporary file of a save to `target`.
bool is_temporary_of(const std::string& name, const std::string& target) {
  const std::string prefix = target + ".tmp.";
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

// Removes the temporary files that killed writers left for `path`: those whose lock
// (taken by write_file for the writer's lifetime) is free. Best effort: a file that cannot
// be opened or removed stays, and the save goes on (it fails by itself if the directory
// cannot take a file). A save racing another process's save to the same path may remove
// that one's file in the moment between its creation and its lock (create_temporary then
// takes another name); once locked, a file is held until it is renamed.
void remove_abandoned_temporaries(const std::string& path) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::filesystem::path& file = it->path();
    if (!is_temporary_of(file.filename().string(), target.filename().string())) continue;
    // Read-write: NFS emulates flock with fcntl locks, which need it for an exclusive lock.
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(file.c_str());
    ::close(fd);
  }
}

// This save's own temporary file, "<path>.tmp.<pid><6 random digits>", created anew: with
// O_EXCL it is never another writer's (two writers in containers on one shared file
// system can have one pid), and with O_NOFOLLOW a symbolic link planted under that name
// in a shared directory redirects nothing.
void create_temporary(TempFile& temp, const std::string& path) {
  std::random_device random;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char digits[8];
    std::snprintf(digits, sizeof digits, "%06u", static_cast<unsigned>(random() % 1000000));
    const std::string name = path + ".tmp." + std::to_string(::getpid()) + digits;
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) throw OsFailure{"create " + name, errno};
    // Held until close or death: how the next save tells a live writer's file from a
    // killed one's. A file system without locks skips it (its leftovers then stay).
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) {
      temp.path = name;
      temp.fd = fd;
      return;
    }
    // Another save's clean-up (remove_abandoned_temporaries) locked it first and removes
    // it: leave it to that one, and take another name.
    ::close(fd);
  }
  throw OsFailure{"create a temporary file for " + path + " (16 names were taken)", EEXIST};
}

void write_file(const Checkpoint& c, const std::string& path, uint64_t body_bytes) {
  remove_abandoned_temporaries(path);  // before this save's own file exists
  TempFile temp;
  create_temporary(temp, path);

  FileSink sink(temp.fd, temp.path);
  uint8_t header[kHeaderBytes];
  std::memcpy(header, kMagic, 8);
  store_le(header + 8, kFormatVersion, 4);
  store_le(header + 12, kHeaderBytes + body_bytes + kTrailerBytes, 8);
  store_le(header + 20, crc32_update(0, header, 20), 4);
  sink.bytes(header, sizeof header);
  put_sections(sink, c, path);
  put_u32(sink, sink.crc());
  sink.flush();

  if (::fsync(temp.fd) != 0) throw OsFailure{"fsync " + temp.path, errno};
  // The lock belongs to the open file, not the descriptor: a duplicate keeps it until after
  // the rename, so that another save's clean-up cannot take the file between the close
  // (where NFS reports late write errors) and the rename.
  const int lock_fd = ::dup(temp.fd);
  if (lock_fd < 0) throw OsFailure{"dup " + temp.path, errno};
  const int fd = temp.fd;
  temp.fd = lock_fd;  // closed by TempFile, on failure too
  if (::close(fd) != 0) throw OsFailure{"close " + temp.path, errno};
  if (::rename(temp.path.c_str(), path.c_str()) != 0) throw OsFailure{"rename " + temp.path, errno};
  temp.renamed = true;
  ::close(temp.fd);
  temp.fd = -1;
  sync_directory(path);
}

}  // namespace

void save_checkpoint(const Checkpoint& checkpoint, const std::string& path) {
  // Counting first also checks the checkpoint, before any file is created.
  ByteCounter body;
  put_sections(body, checkpoint, path);
  try {
    write_file(checkpoint, path, body.count);
  } catch (const OsFailure& failure) {
    throw Error(StatusCode::IoError,
                "kolo: cannot save checkpoint " + path + ": " + failure.what + ": " + std::strerror(failure.error));
  }
}

}  // namespace kolo::models
