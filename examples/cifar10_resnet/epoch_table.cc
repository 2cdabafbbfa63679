#include "cifar10_resnet/epoch_table.h"

#include <cstdio>
#include <string>

namespace kolo::examples {

void print_epoch_table(const std::vector<EpochReport>& epochs, bool synthetic) {
  if (epochs.empty()) return;
  std::printf("\n| epoch | time (s) | img/s | loss | acc |%s\n", synthetic ? "" : " val_acc |");
  std::printf("|---:|---:|---:|---:|---:|%s\n", synthetic ? "" : "---:|");
  double seconds = 0, images_per_s = 0;
  for (const EpochReport& e : epochs) {
    std::printf("| %lld | %.1f | %.1f | %.4f | %.4f |", static_cast<long long>(e.epoch), e.seconds, e.images_per_s,
                e.loss, e.acc);
    if (!synthetic) std::printf(" %.4f |", e.val_acc);
    std::printf("\n");
    if (&e != &epochs.front()) {
      seconds += e.seconds;
      images_per_s += e.images_per_s;
    }
  }
  if (epochs.size() > 1) {
    const double n = static_cast<double>(epochs.size() - 1);
    std::string which = "epoch " + std::to_string(epochs[1].epoch);
    if (epochs.size() > 2) which = "epochs " + std::to_string(epochs[1].epoch) + "-" + std::to_string(epochs.back().epoch);
    std::printf("mean of %s: %.1f s, %.1f img/s\n", which.c_str(), seconds / n, images_per_s / n);
  }
  std::fflush(stdout);
}

}  // namespace kolo::examples
