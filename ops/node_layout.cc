#include "node_layout.h"

#include <algorithm>
#include <string>

#include "kolo/kolo.h"

namespace kolo::ops {

NodeLayout forced_node_layout(int rank, int size, int local_size) {
  if (local_size <= 0 || size % local_size != 0)
    throw Error(StatusCode::InvalidArgument,
                "kolo: KOLO_TEST_LOCAL_SIZE=" + std::to_string(local_size) + " does not divide the " +
                    std::to_string(size) + " ranks into equal nodes");
  return NodeLayout{rank % local_size, local_size, rank / local_size, size / local_size};
}

std::vector<int> nodes_by_leader(std::span<const int> leader_of_rank) {
  std::vector<int> leaders(leader_of_rank.begin(), leader_of_rank.end());
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  std::vector<int> node_of_rank;
  node_of_rank.reserve(leader_of_rank.size());
  for (int leader : leader_of_rank)
    node_of_rank.push_back(static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin()));
  return node_of_rank;
}

}  // namespace kolo::ops
