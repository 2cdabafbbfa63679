#include "common/checkpoint_dir.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <vector>

#include "common/fail_together.h"

namespace kolo::examples {
namespace fs = std::filesystem;
namespace {

// The checkpoints in a folder by epoch, oldest first, each with its file's name as found
// (checkpoint-epoch-05.kolo is epoch 5 too). Temporary files of an interrupted save do not
// match; nor does a number too large for an epoch.
std::map<int64_t, fs::path> saved_checkpoints(const std::string& folder) {
  static const std::regex name(R"(checkpoint-epoch-([0-9]+)\.kolo)");
  std::map<int64_t, fs::path> found;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, match, name)) continue;
    const std::string digits = match[1].str();
    int64_t epoch = 0;
    const auto [end, failed] = std::from_chars(digits.data(), digits.data() + digits.size(), epoch);
    if (failed == std::errc() && end == digits.data() + digits.size()) found.emplace(epoch, entry.path());
  }
  return found;
}

}  // namespace

std::string CheckpointDir::path_for(int64_t epoch) const {
  char file[64];
  std::snprintf(file, sizeof file, "checkpoint-epoch-%04lld.kolo", static_cast<long long>(epoch));
  return (fs::path(folder_) / file).string();
}

int64_t CheckpointDir::latest_epoch() const {
  if (!enabled()) return 0;
  const std::map<int64_t, fs::path> saved = saved_checkpoints(folder_);
  return saved.empty() ? 0 : saved.rbegin()->first;
}

std::string CheckpointDir::latest_path() const {
  if (!enabled()) return "";
  const std::map<int64_t, fs::path> saved = saved_checkpoints(folder_);
  return saved.empty() ? "" : saved.rbegin()->second.string();
}

void CheckpointDir::prepare() const {
  std::error_code error;
  fs::create_directories(folder_, error);
  if (error) {
    throw kolo::Error(kolo::StatusCode::IoError,
                      "cannot create the checkpoint folder " + folder_ + ": " + error.message());
  }
  if (::access(folder_.c_str(), W_OK | X_OK) != 0)
    throw kolo::Error(kolo::StatusCode::IoError,
                      "cannot write into the checkpoint folder " + folder_ + ": " + std::strerror(errno));
}

void CheckpointDir::save(const models::Checkpoint& checkpoint) const {
  prepare();
  models::save_checkpoint(checkpoint, path_for(checkpoint.epoch));
  std::error_code error;
  // Only older epochs go: never the one just saved, whatever else the folder holds.
  std::map<int64_t, fs::path> saved = saved_checkpoints(folder_);
  int64_t kept = static_cast<int64_t>(saved.size());
  for (const auto& [epoch, path] : saved) {
    if (kept <= keep_ || epoch >= checkpoint.epoch) break;
    fs::remove(path, error);  // a file we cannot remove only costs space
    --kept;
  }
}

int64_t resume_from_latest(const CheckpointDir& dir, models::Module& net, models::Optimizer& optimizer,
                           const std::map<std::string, std::string>& expected) {
  std::vector<int64_t> epoch{0};
  models::Checkpoint checkpoint;
  fail_together([&] {
    if (kolo::rank() != 0) return;
    const std::string newest = dir.latest_path();
    if (newest.empty()) return;
    checkpoint = models::load_checkpoint(newest);
    // Saved after an epoch, so 1 or more: restoring an "epoch 0" on rank 0 alone, without
    // the broadcast that follows a real one, would leave the ranks apart.
    if (checkpoint.epoch < 1)
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        newest + " says epoch " + std::to_string(checkpoint.epoch) +
                            ": not a checkpoint this program saved after an epoch");
    models::restore(checkpoint, net, &optimizer);
    epoch[0] = checkpoint.epoch;
  });
  kolo::broadcast("examples/resume_epoch", kolo::view(epoch), 0);
  if (epoch[0] == 0) return 0;
  models::broadcast_parameters(net, 0);
  models::broadcast_optimizer_state(optimizer, 0);
  if (models::is_root()) {
    for (const auto& [key, value] : expected) {
      auto found = checkpoint.metadata.find(key);
      const std::string saved = found == checkpoint.metadata.end() ? "(none)" : found->second;
      if (saved != value) {
        std::printf("warning: the checkpoint was made with %s %s, this run has %s: it will not repeat the "
                    "uninterrupted run\n", key.c_str(), saved.c_str(), value.c_str());
      }
    }
  }
  return epoch[0];
}

}  // namespace kolo::examples
