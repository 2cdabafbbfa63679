// Rank 0 helpers: printing and checkpointing once per job rather than once per rank.
#include <cstdio>

#include "kolo/models.h"

namespace kolo::models {

bool is_root() { return !is_initialized() || rank() == 0; }

void print_on_root(const std::string& line) {
  if (!is_root()) return;
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void save_checkpoint_on_root(const std::function<Checkpoint()>& make, const std::string& path) {
  if (is_root()) save_checkpoint(make(), path);
}

void save_checkpoint_on_root(Module& net, const Optimizer* optimizer, int64_t epoch, const std::string& path) {
  save_checkpoint_on_root([&] { return make_checkpoint(net, optimizer, epoch); }, path);
}

}  // namespace kolo::models
