#include "node_layout.h"

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

}  // namespace kolo::ops
