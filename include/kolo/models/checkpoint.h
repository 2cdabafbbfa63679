// Checkpoints: parameters, buffers, optimizer state, epoch and RNG state in one binary file
// (format: docs/checkpoint-format.md) with a magic number, a version and a CRC-32, written
// atomically (temporary file, fsync, rename), so a crash never leaves a half-written
// checkpoint under the real name. Part of kolo/models.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "optim.h"

namespace kolo::models {

class Module;

struct Checkpoint {
  std::map<std::string, std::vector<int64_t>> shapes;  // parameter and buffer shapes, by name
  std::map<std::string, std::vector<float>> tensors;   // parameters and buffers, by name
  OptimizerState optimizer;
  std::string optimizer_name;
  int64_t epoch = 0;
  std::map<std::string, std::string> rng;  // named RNG states (std::mt19937_64 text form)
  std::map<std::string, std::string> metadata;
};

// Collects a module's parameters and buffers (and an optimizer's state, if given).
Checkpoint make_checkpoint(Module& module, const Optimizer* optimizer, int64_t epoch);
// Copies parameters and buffers back (and the optimizer state, if an optimizer is given);
// throws kolo::Error naming the first missing, mis-shaped or unexpected tensor, or an
// optimizer of another kind. Checks everything first: on error nothing has changed.
// Epoch, RNG states and metadata are the caller's to read from the checkpoint.
void restore(const Checkpoint& checkpoint, Module& module, Optimizer* optimizer);

// Writes "<path>.tmp.<pid>", fsyncs it, renames it over path and fsyncs the directory
// (first removing the temporary files that killed writers left for path); on
// any error removes the temporary file and throws kolo::Error with the path and the reason:
// IoError when the file system refuses (cannot write, disk full, ...), InvalidArgument for
// an inconsistent checkpoint (checked before any file is made). A tensor without an entry
// in `shapes` is saved as 1-D.
void save_checkpoint(const Checkpoint& checkpoint, const std::string& path);
// Throws kolo::Error with the path and the reason: IoError when the file cannot be opened
// or read (missing, not a regular file); InvalidArgument when it is not a kolo checkpoint
// (bad magic), truncated or corrupt (checksum mismatch); Unsupported for a newer format
// version.
Checkpoint load_checkpoint(const std::string& path);

}  // namespace kolo::models
