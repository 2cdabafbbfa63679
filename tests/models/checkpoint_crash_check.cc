// save_checkpoint against what a unit test in one process cannot do to it: a writer killed
// with SIGKILL in the middle of its save, a disk that fills up, a file system that is
// read-only even for root. The checkpoint is a ResNet-18's (about 47 MB), large enough for a
// kill to land inside the write. One scenario per run (tests/models/CMakeLists.txt):
//
//   checkpoint_crash_check kill [KILLS [SEED]]  KILLS writers (default 50) of a new version
//                        are each killed at a random moment of their save
//   checkpoint_crash_check full-disk   on a small tmpfs: a killed writer's leftover does not
//                        keep the next save from fitting; a save that does not fit fails
//   checkpoint_crash_check read-only   on a tmpfs remounted read-only: the save fails
//
// Throughout, the checkpoint on disk loads and is exactly the old version or the new one,
// never a mixture. A temporary file survives only its killed writer: the next save removes
// it, and a load never looks at it. full-disk and read-only mount a tmpfs in a private
// mount namespace; where that is not allowed (not root, no namespaces) they exit 77, CTest's
// skip, saying why. Exit 1 when a check failed, each failure printed.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kolo/models.h"

namespace {

namespace fs = std::filesystem;
using namespace kolo::models;
using Clock = std::chrono::steady_clock;

constexpr int kSkip = 77;  // SKIP_RETURN_CODE in tests/models/CMakeLists.txt

int g_failures = 0;

#define EXPECT(cond, ...)                                                            \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      ++g_failures;                                                                  \
      std::fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond);        \
      std::fprintf(stderr, __VA_ARGS__);                                             \
      std::fprintf(stderr, "\n");                                                    \
    }                                                                                \
  } while (0)

int skip(const std::string& why) {
  std::printf("skipped: %s\n", why.c_str());
  return kSkip;
}

bool says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The two versions a run alternates between: a ResNet-18 with different weights, and a
// different epoch.
struct Versions {
  Checkpoint a, b;
  const Checkpoint& other(const Checkpoint& version) const { return &version == &a ? b : a; }
  const char* name(const Checkpoint& version) const { return &version == &a ? "A" : "B"; }
};

Checkpoint resnet18_checkpoint(uint64_t seed, int64_t epoch) {
  auto net = resnet(18, 1000);
  initialize(*net, seed);
  Checkpoint c = make_checkpoint(*net, nullptr, epoch);
  c.metadata["seed"] = std::to_string(seed);
  return c;
}

bool same(const Checkpoint& x, const Checkpoint& y) {
  return x.shapes == y.shapes && x.tensors == y.tensors && x.optimizer_name == y.optimizer_name &&
         x.optimizer.tensors == y.optimizer.tensors && x.optimizer.scalars == y.optimizer.scalars &&
         x.epoch == y.epoch && x.rng == y.rng && x.metadata == y.metadata;
}

// Loads `path` and says which version it holds: "A", "B", or what is wrong with it.
std::string version_on_disk(const std::string& path, const Versions& versions) {
  try {
    const Checkpoint loaded = load_checkpoint(path);
    if (same(loaded, versions.a)) return "A";
    if (same(loaded, versions.b)) return "B";
    return "neither version (epoch " + std::to_string(loaded.epoch) + ")";
  } catch (const std::exception& e) {
    return std::string("a file that does not load: ") + e.what();
  }
}

// save_checkpoint's temporary files in `dir`: "<name>.tmp.<pid><6 random digits>".
std::vector<fs::path> temporaries(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(entry.path());
  return found;
}

// The temporary file of `writer`, once it has made one; until then a name no file has.
std::string temporary_of(const std::string& path, pid_t writer) {
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp." + std::to_string(writer);
  for (const auto& entry : fs::directory_iterator(target.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0) return entry.path().string();
  }
  return path + ".tmp." + std::to_string(writer);
}

// A child process that saves `version` to `path` and exits 0 (1 if the save threw).
pid_t start_writer(const Checkpoint& version, const std::string& path) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid > 0) return pid;
  try {
    save_checkpoint(version, path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer: %s\n", e.what());
    ::_exit(1);
  }
  ::_exit(0);
}

// Whether the writer has exited (it is not reaped: kill_writer does that).
bool exited(pid_t writer) {
  siginfo_t info = {};
  return ::waitid(P_PID, static_cast<id_t>(writer), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0;
}

// Reaps a writer that is left to finish; true when its save succeeded.
bool wait_for_writer(pid_t writer) {
  int status = 0;
  while (::waitpid(writer, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Kills the writer (if it still runs) and reaps it; true when it had finished its save.
bool kill_writer(pid_t writer) {
  ::kill(writer, SIGKILL);
  int status = 0;
  while (::waitpid(writer, &status, 0) < 0 && errno == EINTR) {}
  EXPECT(!WIFEXITED(status) || WEXITSTATUS(status) == 0, "writer %d failed with exit status %d", writer,
         WEXITSTATUS(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

uint64_t file_size(const std::string& path) {
  struct stat info = {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<uint64_t>(info.st_size) : 0;
}

// A fresh folder under /tmp, removed at the end.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "kolo-checkpoint-crash-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    path = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// ---- kill ---------------------------------------------------------------------------------

// What a kill left: nothing yet of the new version, part or all of it in the temporary
// file, or the new version under the real name.
struct KillOutcomes {
  int before_the_write = 0, during_the_write = 0, before_the_rename = 0, after_the_rename = 0;
};

int kill_scenario(int kills, uint64_t seed) {
  const Versions versions{resnet18_checkpoint(1, 1), resnet18_checkpoint(2, 2)};
  ScratchDir dir;
  const std::string path = (dir.path / "resnet18.ckpt").string();
  save_checkpoint(versions.a, path);
  const uint64_t size = file_size(path);
  const Checkpoint* on_disk = &versions.a;

  // How long a whole save takes in a child (the median of three: fsync's time varies), so
  // that the kills spread over all of it.
  std::vector<double> seconds;
  for (int i = 0; i < 3; ++i) {
    const Checkpoint* next = &versions.other(*on_disk);
    const auto start = Clock::now();
    EXPECT(wait_for_writer(start_writer(*next, path)), "a timed save failed");
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    on_disk = next;
  }
  std::sort(seconds.begin(), seconds.end());
  const double save_seconds = seconds[1];
  std::printf("checkpoint %.1f MB, a save in a child takes %.3f s; %d kills, seed %llu\n", size / 1e6,
              save_seconds, kills, static_cast<unsigned long long>(seed));

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> moment(0.0, save_seconds);
  KillOutcomes outcomes;
  for (int i = 0; i < kills; ++i) {
    const Checkpoint* next = &versions.other(*on_disk);
    const double delay = moment(rng);
    const pid_t writer = start_writer(*next, path);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    const bool finished = kill_writer(writer);

    const std::string found = version_on_disk(path, versions);
    const bool is_new = found == versions.name(*next);
    EXPECT(is_new || found == versions.name(*on_disk),
           "kill %d at %.3f s: the checkpoint on disk is %s, not the old version %s or the new %s", i, delay,
           found.c_str(), versions.name(*on_disk), versions.name(*next));
    EXPECT(!finished || is_new, "kill %d: the writer finished but the old version is on disk", i);

    // A writer removes the files of earlier killed writers before it creates its own: once
    // its own exists, or it has finished, nothing else may be left.
    const std::vector<fs::path> left = temporaries(dir.path);
    const std::string own = temporary_of(path, writer);
    if (fs::exists(own) || finished)
      for (const fs::path& file : left)
        EXPECT(file == own, "kill %d: %s is left besides the killed writer's %s: the save did not remove an "
                            "earlier killed writer's temporary file", i, file.c_str(), own.c_str());
    EXPECT(!finished || left.empty(), "kill %d: a finished save left %zu temporary files", i, left.size());

    if (is_new) {
      ++outcomes.after_the_rename;
      on_disk = next;
    } else if (!fs::exists(own)) {
      ++outcomes.before_the_write;
    } else if (file_size(own) < size) {
      ++outcomes.during_the_write;
    } else {
      ++outcomes.before_the_rename;
    }
  }
  std::printf("kills: %d before the temporary file existed, %d during the write, %d after the write but before "
              "the rename, %d after the rename\n",
              outcomes.before_the_write, outcomes.during_the_write, outcomes.before_the_rename,
              outcomes.after_the_rename);
  // The point of the scenario: kills that tear the temporary file left the old version. (With
  // a few kills none may land there by chance; with 20 or more, about half do.)
  if (kills >= 20)
    EXPECT(outcomes.during_the_write >= 1, "no kill landed inside the write: the scenario proved nothing");

  // The next save in a live process removes what the last killed writer left.
  const Checkpoint* next = &versions.other(*on_disk);
  save_checkpoint(*next, path);
  EXPECT(version_on_disk(path, versions) == versions.name(*next), "the last save did not land");
  EXPECT(temporaries(dir.path).empty(), "%zu temporary files left after a save that finished",
         temporaries(dir.path).size());
  return g_failures == 0 ? 0 : 1;
}

// ---- full-disk, read-only -------------------------------------------------------------------

// Mounts a tmpfs of `bytes` at `dir` in a mount namespace of this process's own, so that
// nothing outside it sees the mount (and it goes when the process does). Returns why it
// could not, or "".
std::string mount_private_tmpfs(const fs::path& dir, uint64_t bytes) {
  if (::unshare(CLONE_NEWNS) != 0)
    return std::string("cannot make a private mount namespace (unshare: ") + std::strerror(errno) +
           "; it needs root or CAP_SYS_ADMIN)";
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return std::string("cannot make the mounts private (") + std::strerror(errno) + ")";
  const std::string options = "size=" + std::to_string(bytes) + ",mode=0700";
  if (::mount("kolo-checkpoint-crash", dir.c_str(), "tmpfs", 0, options.c_str()) != 0)
    return std::string("cannot mount a tmpfs (") + std::strerror(errno) + ")";
  return "";
}

// Unmounts the tmpfs before ScratchDir removes its folder.
struct Unmount {
  fs::path dir;
  ~Unmount() { ::umount(dir.c_str()); }
};

// The size of a version's file, from a save outside the tmpfs.
uint64_t saved_size(const Checkpoint& version, const fs::path& dir) {
  const std::string probe = (dir / "size-probe.ckpt").string();
  save_checkpoint(version, probe);
  const uint64_t size = file_size(probe);
  fs::remove(probe);
  return size;
}

// The message of the kolo::Error that saving `version` to `path` throws, "" if none.
std::string save_error(const Checkpoint& version, const std::string& path) {
  try {
    save_checkpoint(version, path);
  } catch (const kolo::Error& e) {
    EXPECT(e.code() == kolo::StatusCode::IoError, "the save failed with %s, not IoError",
           kolo::status_code_name(e.code()));
    return e.what();
  }
  return "";
}

// Kills writers of `version` until one leaves a temporary file of at least `bytes`, and
// returns its path; a writer that finishes first is undone by saving `restore` again.
std::string leave_killed_writers_file(const Checkpoint& version, const Checkpoint& restore,
                                      const std::string& path, uint64_t bytes) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const pid_t writer = start_writer(version, path);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (file_size(temporary_of(path, writer)) < bytes && Clock::now() < deadline && !exited(writer))
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    const bool killed = !kill_writer(writer);
    const std::string file = temporary_of(path, writer);
    if (killed && file_size(file) >= bytes) return file;
    save_checkpoint(restore, path);  // the writer got through: try again
  }
  EXPECT(false, "no kill left a temporary file of %llu bytes in 20 attempts", static_cast<unsigned long long>(bytes));
  return "";
}

int full_disk_scenario() {
  const Versions versions{resnet18_checkpoint(1, 1), resnet18_checkpoint(2, 2)};
  ScratchDir dir;
  const uint64_t size = saved_size(versions.a, dir.path);
  // Room for two versions and half of a third: the old version, a killed writer's
  // leftover of more than half a version, and the next save do not fit together.
  if (const std::string why = mount_private_tmpfs(dir.path, size * 5 / 2); !why.empty()) return skip(why);
  const Unmount unmount{dir.path};
  const std::string path = (dir.path / "resnet18.ckpt").string();
  save_checkpoint(versions.a, path);

  const std::string leftover = leave_killed_writers_file(versions.b, versions.a, path, size * 3 / 5);
  EXPECT(version_on_disk(path, versions) == "A", "after the kill the checkpoint is %s",
         version_on_disk(path, versions).c_str());
  std::printf("a killed writer left %s (%.1f of %.1f MB)\n", leftover.c_str(), file_size(leftover) / 1e6, size / 1e6);
  const std::string error = save_error(versions.b, path);
  EXPECT(error.empty(), "the save after the kill failed (the leftover was not removed?): %s", error.c_str());
  EXPECT(version_on_disk(path, versions) == "B", "the checkpoint is %s", version_on_disk(path, versions).c_str());
  EXPECT(temporaries(dir.path).empty(), "the killed writer's file is still there");

  // Fill the disk until half a version fits: the next save runs out of space part-way.
  struct statvfs fs_info = {};
  ::statvfs(dir.path.c_str(), &fs_info);
  const uint64_t free_bytes = static_cast<uint64_t>(fs_info.f_bavail) * fs_info.f_frsize;
  const std::string filler = (dir.path / "filler").string();
  {
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    EXPECT(fd >= 0 && ::posix_fallocate(fd, 0, static_cast<off_t>(free_bytes - size / 2)) == 0,
           "cannot fill the tmpfs");
    ::close(fd);
  }
  const std::string full = save_error(versions.a, path);
  std::printf("a save on the full disk: %s\n", full.c_str());
  EXPECT(says(full, path) && says(full, "No space left on device"), "the error does not say where and why: '%s'",
         full.c_str());
  EXPECT(version_on_disk(path, versions) == "B", "after the failed save the checkpoint is %s",
         version_on_disk(path, versions).c_str());
  EXPECT(temporaries(dir.path).empty(), "the failed save left its temporary file");
  return g_failures == 0 ? 0 : 1;
}

int read_only_scenario() {
  const Versions versions{resnet18_checkpoint(1, 1), resnet18_checkpoint(2, 2)};
  ScratchDir dir;
  const uint64_t size = saved_size(versions.a, dir.path);
  if (const std::string why = mount_private_tmpfs(dir.path, size * 3); !why.empty()) return skip(why);
  const Unmount unmount{dir.path};
  const std::string path = (dir.path / "resnet18.ckpt").string();
  save_checkpoint(versions.a, path);
  if (::mount(nullptr, dir.path.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0)
    return skip(std::string("cannot remount the tmpfs read-only (") + std::strerror(errno) + ")");

  const std::string error = save_error(versions.b, path);
  std::printf("a save on the read-only file system: %s\n", error.c_str());
  EXPECT(says(error, path) && says(error, "Read-only file system"), "the error does not say where and why: '%s'",
         error.c_str());
  EXPECT(version_on_disk(path, versions) == "A", "the checkpoint is %s", version_on_disk(path, versions).c_str());
  EXPECT(temporaries(dir.path).empty(), "a temporary file appeared on a read-only file system");

  // Writable again, the same save goes through: it was the file system that refused.
  EXPECT(::mount(nullptr, dir.path.c_str(), nullptr, MS_REMOUNT, nullptr) == 0, "cannot remount read-write: %s",
         std::strerror(errno));
  save_checkpoint(versions.b, path);
  EXPECT(version_on_disk(path, versions) == "B", "the checkpoint is %s", version_on_disk(path, versions).c_str());
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  const auto started = Clock::now();
  int result = 2;
  if (scenario == "kill") {
    const int kills = argc > 2 ? std::atoi(argv[2]) : 50;
    const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : std::random_device{}();
    result = kill_scenario(kills, seed);
  } else if (scenario == "full-disk") {
    result = full_disk_scenario();
  } else if (scenario == "read-only") {
    result = read_only_scenario();
  } else {
    std::fprintf(stderr, "usage: %s kill [KILLS [SEED]] | full-disk | read-only\n", argv[0]);
    return 2;
  }
  std::printf("%s: %s in %.1f s\n", scenario.c_str(),
              result == 0 ? "passed" : result == kSkip ? "skipped" : "FAILED",
              std::chrono::duration<double>(Clock::now() - started).count());
  return result;
}
