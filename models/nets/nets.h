// Block counts of the ResNet family, shared by the v1 and v2 builders.
#pragma once

#include <array>

namespace kolo::models {

struct NetSpec {
  std::array<int, 4> blocks;
  bool bottleneck;
};

// 18, 34 (basic blocks); 50, 101, 152 (bottlenecks). Throws kolo::Error otherwise.
NetSpec resnet_spec(int depth);

}  // namespace kolo::models
