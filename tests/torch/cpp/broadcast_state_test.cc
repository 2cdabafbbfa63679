// broadcast_parameters and broadcast_optimizer_state under mpirun: ranks that start from
// their own weights and their own Adam state (moments, step counts, learning rate) all
// hold root's after the broadcasts, and then train in step.
#include <c10/util/string_utils.h>

#include "catch_after_torch.h"
#include "training.h"

using namespace kolo_torch_test;

namespace {

// Adam's state of every parameter (step, moments) and the learning rate, in one vector.
at::Tensor flat_adam_state(::torch::optim::Adam& adam) {
  std::vector<at::Tensor> parts;
  for (const auto& group : adam.param_groups()) {
    parts.push_back(at::tensor({static_cast<const ::torch::optim::AdamOptions&>(group.options()).lr()}, at::kDouble));
    for (const auto& p : group.params()) {
      auto& s = static_cast<::torch::optim::AdamParamState&>(*adam.state().at(c10::guts::to_string(p.unsafeGetTensorImpl())));
      parts.push_back(at::tensor({static_cast<double>(s.step())}, at::kDouble));
      parts.push_back(s.exp_avg().flatten());
      parts.push_back(s.exp_avg_sq().flatten());
    }
  }
  return at::cat(parts);
}

void check_every_row_is(const at::Tensor& rows, int root) {
  for (int r = 0; r < kolo::size(); ++r) {
    INFO("rank " << r << " against root " << root);
    CHECK(at::equal(rows[r], rows[root]));
  }
}

}  // namespace

TEST_CASE("broadcast_parameters and broadcast_optimizer_state give every rank root's model and Adam state",
          "[torch]") {
  const int rank = kolo::rank();
  const int root = kolo::size() - 1;
  Net net = make_net(50 + rank);
  ::torch::optim::Adam inner(net->parameters(), ::torch::optim::AdamOptions(0.01 * (rank + 1)));
  // Steps of rank-dependent length on rank-dependent data: state that differs everywhere.
  ::torch::manual_seed(200 + rank);
  for (int step = 0; step <= rank; ++step) {
    inner.zero_grad();
    net->forward(at::randn({4, 1, 6, 6}, at::kDouble), /*use_extra=*/true).pow(2).mean().backward();
    inner.step();
  }
  const at::Tensor before = gather_rows(flat_parameters(*net));
  REQUIRE(!at::equal(before[0], before[root]));

  kolo::torch::broadcast_parameters(*net, root);
  kolo::torch::broadcast_optimizer_state(inner, root);
  check_every_row_is(gather_rows(flat_parameters(*net)), root);
  check_every_row_is(gather_rows(flat_adam_state(inner)), root);

  // From the same start, the ranks stay together whatever their data.
  kolo::torch::DistributedOptimizer opt(inner, net->named_parameters());
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    net->forward(at::randn({4, 1, 6, 6}, at::kDouble), /*use_extra=*/true).pow(2).mean().backward();
    opt.step();
  }
  check_every_row_is(gather_rows(flat_parameters(*net)), root);
  check_every_row_is(gather_rows(flat_adam_state(inner)), root);
}
