// broadcast_parameters: every rank starts from root's weights (hvd.broadcast_parameters).
// The ranks first compare a fingerprint of their tensors' names and shapes, so that nets
// that differ fail on every rank at once instead of leaving some broadcasts unanswered.
#include "kolo/models.h"
#include "models/distributed/agreement.h"
#include "models/distributed/handles.h"

namespace kolo::models {
using namespace distributed_detail;

void broadcast_parameters(Module& net, int root) {
  const std::string what = "broadcast_parameters";
  require_initialized(what);
  check_root(root, what);
  std::vector<std::pair<std::string, Tensor*>> tensors;
  for (Parameter* p : net.parameters()) tensors.emplace_back(p->name, &p->value);
  for (const auto& buffer : net.buffers()) tensors.push_back(buffer);

  Fingerprint layout;
  for (const auto& [name, tensor] : tensors) {
    layout.add(name);
    layout.add(static_cast<int64_t>(tensor->ndim()));
    for (int64_t d : tensor->shape()) layout.add(d);
  }
  const std::vector<int> differing = ranks_differing_from_root(layout.value(), root, "kolo.broadcast_parameters/layout");
  if (!differing.empty())
    throw Error(StatusCode::InvalidArgument,
                "kolo: broadcast_parameters: the nets differ: rank(s) " + rank_list(differing) +
                    " have other parameter or buffer names or shapes than root rank " + std::to_string(root) +
                    " (" + std::to_string(tensors.size()) + " tensors on this rank); nothing was changed");

  std::vector<Handle> handles;
  for (auto& [name, tensor] : tensors)
    handles.push_back(broadcast_async("kolo.broadcast_parameters/" + name, tensor->view(), root));
  wait_all_or_throw(handles, what);
}

}  // namespace kolo::models
