// synchronize_batchnorm: at np ranks, each on its rows of the global batch, a conv+BN net
// computes what the plain net computes on the whole batch in one process: the forward
// output, the running statistics, the input gradient, and (summed over ranks) the
// parameter gradients. The loss is Σ y·dy for a fixed dy, so that no 1/batch factor
// differs between the two.
#include "dist_util.h"

using namespace kolo_dist_test;
using kolo_test::rank;
using kolo_test::size;

TEST_CASE("synchronize_batchnorm: np ranks on their rows equal one process on the whole batch",
          "[distributed][syncbn]") {
  const int64_t per_rank = 2, global = per_rank * size(), first = rank() * per_rank;
  const Tensor x = seeded_tensor({global, 3, 5, 5}, 31);
  const Tensor dy = seeded_tensor({global, 2, 5, 5}, 32);

  auto reference = conv_bn_net();
  fill_seeded(*reference, 30);
  reference->set_needs_input_grad(true);

  auto net = conv_bn_net();
  fill_seeded(*net, 30);
  net->set_needs_input_grad(true);
  synchronize_batchnorm(*net);
  SGD sgd(net->parameters(), {.lr = 0.1});
  DistributedOptimizer opt(sgd, *net, {.op = kolo::ReduceOp::Sum});  // Σ y·dy over all ranks' rows
  // Two passes without an update: the second starts from running statistics the first changed.
  for (int pass = 0; pass < 2; ++pass) {
    INFO("pass " << pass);
    reference->zero_grad();
    const Tensor y_reference = reference->forward(x);
    const Tensor dx_reference = reference->backward(dy);

    opt.zero_grad();  // (after synchronize() without step(): discards the gradients)
    const Tensor y = net->forward(slice_rows(x, first, per_rank));
    require_close(y, slice_rows(y_reference, first, per_rank), 1e-4, 1e-5, "forward output");
    for (auto& [name, buffer] : net->buffers())
      require_close(*buffer, *reference->find_buffer(name), 1e-5, 1e-6, name);
    const Tensor dx = net->backward(slice_rows(dy, first, per_rank));
    require_close(dx, slice_rows(dx_reference, first, per_rank), 1e-4, 1e-5, "input gradient");
    opt.synchronize();
    require_close_parameters(*net, *reference, 1e-4, 1e-5, /*grads=*/true);
  }
}

TEST_CASE("synchronize_batchnorm: evaluation uses the running statistics alone, with no collective",
          "[distributed][syncbn]") {
  // Each rank evaluates its own images: had evaluation reduced statistics across ranks, the
  // outputs would differ from the plain layer's.
  auto net = conv_bn_net(), reference = conv_bn_net();
  fill_seeded(*net, 40);
  fill_seeded(*reference, 40);
  synchronize_batchnorm(*net);
  net->eval();
  reference->eval();
  const Tensor x = seeded_tensor({3, 3, 4, 4}, 41 + rank());
  require_close(net->forward(x), reference->forward(x), 0, 0, "eval output");
}

TEST_CASE("synchronize_batchnorm: a rank that has joined counts as an empty batch",
          "[distributed][syncbn][join]") {
  if (size() < 2) return;
  // The last rank has no data: it joins at once; the others see only each other's rows.
  const int64_t per_rank = 2, active = size() - 1, first = rank() * per_rank;
  const Tensor x = seeded_tensor({active * per_rank, 3, 5, 5}, 51);
  const Tensor dy = seeded_tensor({active * per_rank, 2, 5, 5}, 52);
  auto reference = conv_bn_net(), net = conv_bn_net();
  fill_seeded(*reference, 50);
  fill_seeded(*net, 50);
  reference->set_needs_input_grad(true);
  net->set_needs_input_grad(true);
  synchronize_batchnorm(*net);
  SGD sgd(net->parameters(), {.lr = 0.1});
  DistributedOptimizer opt(sgd, *net, {.op = kolo::ReduceOp::Sum});
  if (rank() == active) {
    bounded_join();
    return;
  }
  const Tensor y_reference = reference->forward(x), dx_reference = reference->backward(dy);
  const Tensor y = net->forward(slice_rows(x, first, per_rank));
  const Tensor dx = net->backward(slice_rows(dy, first, per_rank));
  opt.synchronize();
  bounded_join();  // before any check: a failed check must not leave the joined rank waiting
  require_close(y, slice_rows(y_reference, first, per_rank), 1e-4, 1e-5, "forward output");
  for (auto& [name, buffer] : net->buffers())
    require_close(*buffer, *reference->find_buffer(name), 1e-5, 1e-6, name);
  require_close(dx, slice_rows(dx_reference, first, per_rank), 1e-4, 1e-5, "input gradient");
  require_close_parameters(*net, *reference, 1e-4, 1e-5, /*grads=*/true);
}
