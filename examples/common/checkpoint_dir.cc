#include "common/checkpoint_dir.h"

#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <vector>

#include "common/fail_together.h"

namespace kolo::examples {
namespace fs = std::filesystem;
namespace {

// The epochs of the checkpoints in a folder, oldest first. Temporary files of an
// interrupted save ("...kolo.tmp.<pid>") do not match.
std::set<int64_t> saved_epochs(const std::string& folder) {
  static const std::regex name(R"(checkpoint-epoch-([0-9]+)\.kolo)");
  std::set<int64_t> epochs;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, match, name)) epochs.insert(std::stoll(match[1].str()));
  }
  return epochs;
}

}  // namespace

std::string CheckpointDir::path_for(int64_t epoch) const {
  char file[64];
  std::snprintf(file, sizeof file, "checkpoint-epoch-%04lld.kolo", static_cast<long long>(epoch));
  return (fs::path(folder_) / file).string();
}

int64_t CheckpointDir::latest_epoch() const {
  if (!enabled()) return 0;
  const std::set<int64_t> epochs = saved_epochs(folder_);
  return epochs.empty() ? 0 : *epochs.rbegin();
}

void CheckpointDir::save(const models::Checkpoint& checkpoint) const {
  std::error_code error;
  fs::create_directories(folder_, error);
  if (error) {
    throw kolo::Error(kolo::StatusCode::IoError,
                      "cannot create the checkpoint folder " + folder_ + ": " + error.message());
  }
  models::save_checkpoint(checkpoint, path_for(checkpoint.epoch));
  std::set<int64_t> epochs = saved_epochs(folder_);
  while (static_cast<int>(epochs.size()) > keep_) {
    fs::remove(path_for(*epochs.begin()), error);  // a file we cannot remove only costs space
    epochs.erase(epochs.begin());
  }
}

int64_t resume_from_latest(const CheckpointDir& dir, models::Module& net, models::Optimizer& optimizer,
                           const std::map<std::string, std::string>& expected) {
  std::vector<int64_t> epoch{0};
  models::Checkpoint checkpoint;
  fail_together([&] {
    if (kolo::rank() != 0 || dir.latest_epoch() == 0) return;
    checkpoint = models::load_checkpoint(dir.path_for(dir.latest_epoch()));
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
