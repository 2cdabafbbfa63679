// Checkpoints of a training run in one folder, one file per finished epoch
// (checkpoint-epoch-0003.kolo), each written atomically by save_checkpoint, and resuming
// from the newest.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kolo/models.h"

namespace kolo::examples {

class CheckpointDir {
 public:
  // An empty folder name turns checkpoints off. After each save only the `keep` newest
  // files stay.
  explicit CheckpointDir(std::string folder, int keep = 2) : folder_(std::move(folder)), keep_(keep) {}
  bool enabled() const { return !folder_.empty(); }
  const std::string& folder() const { return folder_; }

  std::string path_for(int64_t epoch) const;
  // The epoch of the newest checkpoint in the folder; 0 if there is none (or no folder).
  int64_t latest_epoch() const;
  // That checkpoint's file, as named in the folder; empty if there is none.
  std::string latest_path() const;
  // Creates the folder if needed and checks that this process can write there: before the
  // first epoch, so that a bad folder is said then, not after an epoch's training. Throws
  // kolo::Error (IoError) naming the folder.
  void prepare() const;
  // Creates the folder if needed, writes <folder>/checkpoint-epoch-<epoch>.kolo atomically,
  // then removes the oldest ones beyond `keep`, only those of earlier epochs. Throws
  // kolo::Error naming the path on failure.
  void save(const models::Checkpoint& checkpoint) const;

 private:
  std::string folder_;
  int keep_;
};

// Every rank continues from the newest checkpoint in the folder: rank 0 finds and reads
// it, and the parameters, buffers and optimizer state reach every rank. Returns the number
// of finished epochs it holds, 0 (changing nothing) if the folder has no checkpoint.
// Metadata entries that differ from `expected` (another batch size, seed...) are printed by
// rank 0 as warnings: the run goes on, but will not repeat an uninterrupted one.
int64_t resume_from_latest(const CheckpointDir& dir, models::Module& net, models::Optimizer& optimizer,
                           const std::map<std::string, std::string>& expected);

}  // namespace kolo::examples
