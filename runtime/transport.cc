#include "transport.h"

#include <string>

namespace kolo {

void check_subset(std::span<const int> ranks, int size) {
  const auto refuse = [&](const std::string& why) {
    throw Error(StatusCode::InvalidArgument, "kolo: a process set " + why);
  };
  if (ranks.empty()) refuse("needs at least one rank");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size)
      refuse("names rank " + std::to_string(ranks[i]) + ", but ranks run from 0 to " + std::to_string(size - 1));
    if (i > 0 && ranks[i] <= ranks[i - 1])
      refuse("must list its ranks in ascending order without repeats (rank " + std::to_string(ranks[i]) +
             " follows " + std::to_string(ranks[i - 1]) + ")");
  }
}

}  // namespace kolo
