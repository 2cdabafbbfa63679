// DistributedOptimizer against single-process references: every rank computes, on its own
// copy of the net, what one process would do with the whole global batch, and checks that
// the distributed run (each rank on its share) lands on the same parameters.
#include "dist_util.h"
#include "support/adasum_reference.h"

using namespace kolo_dist_test;
using kolo_test::rank;
using kolo_test::size;

namespace {

constexpr int64_t kBatch = 4;  // per rank and pass

}  // namespace

TEST_CASE("DistributedOptimizer: steps at np ranks of batch B equal local steps on the concatenated batch",
          "[distributed][optimizer]") {
  const Dataset& data = mnist_data();
  const int64_t global = kBatch * size();
  auto net = seeded_mnist(1), reference = seeded_mnist(1);
  const SgdOptions sgd_options{.lr = 0.05, .momentum = 0.9};
  SGD sgd(net->parameters(), sgd_options), reference_sgd(reference->parameters(), sgd_options);
  DistributedOptimizer opt(sgd, *net);
  for (int64_t step = 0; step < 3; ++step) {
    copy_parameter_values(*net, *reference);
    opt.zero_grad();
    train_pass(*net, data, step * global + rank() * kBatch, kBatch);
    REQUIRE(opt.step());
    local_step(*reference, reference_sgd, data, step * global, global);
    require_close_parameters(*net, *reference, 1e-5, 1e-6);
  }
}

// As in Horovod, the passes' gradients add up: two passes of B, each a mean over B, give twice
// the mean gradient over the 2B rows.
TEST_CASE("DistributedOptimizer: two accumulated passes of B add up: one step at twice the rate on the batch of 2B",
          "[distributed][optimizer]") {
  const Dataset& data = mnist_data();
  const int64_t global = 2 * kBatch * size();  // rows per step: two passes of every rank
  auto net = seeded_mnist(3), reference = seeded_mnist(3);
  SGD sgd(net->parameters(), {.lr = 0.1}), reference_sgd(reference->parameters(), {.lr = 0.2});
  DistributedOptimizer opt(sgd, *net, {.backward_passes_per_step = 2});
  for (int64_t step = 0; step < 2; ++step) {
    copy_parameter_values(*net, *reference);
    const std::vector<float> before(net->parameters()[0]->value.data(),
                                    net->parameters()[0]->value.data() + net->parameters()[0]->value.numel());
    opt.zero_grad();
    train_pass(*net, data, step * global + rank() * kBatch, kBatch);
    REQUIRE_FALSE(opt.step());  // accumulating: nothing sent, nothing changed
    CHECK(std::memcmp(before.data(), net->parameters()[0]->value.data(), before.size() * sizeof(float)) == 0);
    opt.zero_grad();  // between passes: keeps the first pass's gradients
    train_pass(*net, data, step * global + (size() + rank()) * kBatch, kBatch);
    REQUIRE(opt.step());
    local_step(*reference, reference_sgd, data, step * global, global);
    require_close_parameters(*net, *reference, 1e-5, 1e-6);
  }
}

TEST_CASE("DistributedOptimizer: predivide factor gives the average, op sum gives size() times it",
          "[distributed][optimizer]") {
  const Dataset& data = mnist_data();
  auto plain = seeded_mnist(5), predivided = seeded_mnist(5), summed = seeded_mnist(5);
  SGD sgd_plain(plain->parameters(), {.lr = 0.1}), sgd_predivided(predivided->parameters(), {.lr = 0.1}),
      sgd_summed(summed->parameters(), {.lr = 0.1});
  DistributedOptimizer opt_plain(sgd_plain, *plain, {.name_prefix = "plain/"});
  DistributedOptimizer opt_predivided(sgd_predivided, *predivided,
                                      {.gradient_predivide_factor = 2.5, .name_prefix = "predivided/"});
  DistributedOptimizer opt_summed(sgd_summed, *summed, {.op = kolo::ReduceOp::Sum, .name_prefix = "summed/"});
  for (Net* net : {plain.get(), predivided.get(), summed.get()}) train_pass(*net, data, rank() * kBatch, kBatch);
  opt_plain.synchronize();
  opt_predivided.synchronize();
  opt_summed.synchronize();
  require_close_parameters(*predivided, *plain, 1e-6, 1e-8, /*grads=*/true);
  for (Parameter* p : plain->parameters())
    for (int64_t i = 0; i < p->grad.numel(); ++i) p->grad[i] *= float(size());
  require_close_parameters(*summed, *plain, 1e-6, 1e-8, /*grads=*/true);
  // step() after synchronize() updates without sending again.
  for (DistributedOptimizer* opt : {&opt_plain, &opt_predivided, &opt_summed}) REQUIRE(opt->step());
}

namespace {

// Float16 against float32 with the same options otherwise, after `passes` backward passes:
// every element within float16's rounding of the float32 result, and every one a float16
// sum scaled once (so it did travel as float16).
void check_fp16_close_to_fp32(DistributedOptions options, int passes, uint64_t seed) {
  const Dataset& data = mnist_data();
  const auto pass_rows = [&](int r, int pass) { return (pass * size() + r) * kBatch; };
  auto exact = seeded_mnist(seed), compressed = seeded_mnist(seed), local = seeded_mnist(seed);
  SGD sgd_exact(exact->parameters(), {.lr = 0.1}), sgd_compressed(compressed->parameters(), {.lr = 0.1});
  options.backward_passes_per_step = passes;
  options.name_prefix = "fp32/";
  DistributedOptimizer opt_exact(sgd_exact, *exact, options);
  options.compression = Compression::FP16;
  options.name_prefix = "fp16/";
  DistributedOptimizer opt_compressed(sgd_compressed, *compressed, options);
  for (int pass = 0; pass < passes; ++pass) {
    for (auto [net, opt] : {std::pair{exact.get(), &opt_exact}, std::pair{compressed.get(), &opt_compressed}}) {
      opt->zero_grad();
      train_pass(*net, data, pass_rows(rank(), pass), kBatch);
      if (pass + 1 < passes) REQUIRE_FALSE(opt->step());
    }
  }
  opt_exact.synchronize();
  opt_compressed.synchronize();

  // Σ_r |g_r| per element (g_r: rank r's gradient, summed over its passes), from every
  // rank's passes computed here: what the rounding bound scales with.
  std::vector<std::vector<double>> abs_sum;
  for (Parameter* p : local->parameters()) abs_sum.emplace_back(p->grad.numel(), 0.0);
  for (int r = 0; r < size(); ++r) {
    local->zero_grad();
    for (int pass = 0; pass < passes; ++pass) train_pass(*local, data, pass_rows(r, pass), kBatch);
    for (std::size_t k = 0; k < abs_sum.size(); ++k)
      for (int64_t i = 0; i < local->parameters()[k]->grad.numel(); ++i)
        abs_sum[k][i] += std::fabs(double(local->parameters()[k]->grad[i]));
  }
  // Each rank's value and each partial sum round once to float16 (relative 2^-11, or 2^-25
  // absolute below float16's normal range, times what the predivide factor undoes after the
  // sum); the final scaling rounds in float, within the bound's one spare rounding.
  const double roundings = size() + 2, f = options.gradient_predivide_factor;
  const float final_scale = static_cast<float>(f / size());
  int64_t differing = 0, total = 0;
  for (std::size_t k = 0; k < abs_sum.size(); ++k) {
    const Tensor& got = compressed->parameters()[k]->grad;
    const Tensor& want = exact->parameters()[k]->grad;
    for (int64_t i = 0; i < got.numel(); ++i, ++total) {
      const double bound = roundings * (std::ldexp(abs_sum[k][i] / size(), -11) + std::ldexp(std::max(1.0, f), -25));
      INFO(exact->parameters()[k]->name << "[" << i << "]: float16 " << got[i] << ", float32 " << want[i]);
      REQUIRE(std::fabs(double(got[i]) - double(want[i])) <= bound);
      // It travelled as float16: a float16 sum times the final scale, applied in float.
      const auto sum = static_cast<_Float16>(got[i] / final_scale);
      REQUIRE(static_cast<float>(sum) * final_scale == got[i]);
      differing += got[i] != want[i];
    }
  }
  CHECK(differing > total / 10);
  REQUIRE(opt_exact.step());
  REQUIRE(opt_compressed.step());
}

}  // namespace

// Horovod's Adasum optimizer: each rank steps on its own gradients; the ranks' parameter
// changes, not their gradients, are combined (the reference: adasum_reference.h's tree over
// every rank's local step, computed here), and added to where the parameters started.
TEST_CASE("DistributedOptimizer: op Adasum combines the ranks' parameter changes", "[distributed][optimizer][adasum]") {
  if ((size() & (size() - 1)) != 0) {
    WARN("skipped: Adasum needs a power-of-two number of ranks");
    return;
  }
  const Dataset& data = mnist_data();
  auto net = seeded_mnist(11), local = seeded_mnist(11);
  const SgdOptions sgd_options{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3};
  SGD sgd(net->parameters(), sgd_options);
  DistributedOptimizer opt(sgd, *net, {.op = kolo::ReduceOp::Adasum, .name_prefix = "adasum/"});

  // Every rank's change from the common start.
  std::vector<kolo_test::AdasumTensors> changes(size());
  for (int r = 0; r < size(); ++r) {
    copy_parameter_values(*net, *local);
    SGD local_sgd(local->parameters(), sgd_options);
    local_step(*local, local_sgd, data, r * kBatch, kBatch);
    for (std::size_t k = 0; k < local->parameters().size(); ++k) {
      const Tensor &after = local->parameters()[k]->value, &before = net->parameters()[k]->value;
      std::vector<long double> change(after.numel());
      for (int64_t i = 0; i < after.numel(); ++i) change[i] = after[i] - before[i];  // exact in float
      changes[r].push_back(std::move(change));
    }
  }
  const kolo_test::AdasumTensors combined = kolo_test::adasum_tree(changes, kolo::DType::Float32);
  std::vector<Tensor> start;
  for (Parameter* p : net->parameters()) start.push_back(p->value.clone());

  opt.zero_grad();
  train_pass(*net, data, rank() * kBatch, kBatch);
  REQUIRE(opt.step());
  for (std::size_t k = 0; k < combined.size(); ++k) {
    const Tensor& got = net->parameters()[k]->value;
    std::vector<long double> moved(got.numel());
    for (int64_t i = 0; i < got.numel(); ++i) moved[i] = got[i] - start[k][i];
    INFO(net->parameters()[k]->name);
    // The parameter is start + combined change, rounded to float: a rounding of the
    // parameter's size, which may be far larger than the change's.
    CHECK(kolo_test::relative_error(moved, combined[k]) < 1e-3L);
  }
  if (size() == 1) return;
  // Not the average of the ranks' steps: Adasum's combination differs from it.
  bool differs_from_mean = false;
  for (std::size_t k = 0; k < combined.size() && !differs_from_mean; ++k)
    for (std::size_t i = 0; i < combined[k].size(); ++i) {
      long double mean = 0;
      for (int r = 0; r < size(); ++r) mean += changes[r][k][i] / size();
      if (std::fabs(static_cast<double>(combined[k][i] - mean)) > 1e-3 * std::fabs(static_cast<double>(mean)) + 1e-9) {
        differs_from_mean = true;
        break;
      }
    }
  CHECK(differs_from_mean);
}

TEST_CASE("DistributedOptimizer: float16 compression is within float16 rounding of float32",
          "[distributed][optimizer][fp16]") {
  SECTION("average") { check_fp16_close_to_fp32({}, 1, 7); }
  SECTION("predivide factor 2") { check_fp16_close_to_fp32({.gradient_predivide_factor = 2}, 1, 8); }
  SECTION("two accumulated passes") { check_fp16_close_to_fp32({}, 2, 9); }
}

TEST_CASE("DistributedOptimizer: step() also averages parameters whose gradient backward never announced",
          "[distributed][optimizer]") {
  // An extra parameter outside the net: no hook fires for it, as for an unused layer.
  auto net = seeded_mnist(9);
  Parameter extra{.name = "extra", .value = Tensor::full({3}, 1.0f), .grad = Tensor::full({3}, float(rank() + 1))};
  std::vector<Parameter*> params = net->parameters();
  params.push_back(&extra);
  SGD sgd(params, {.lr = 1.0});
  DistributedOptimizer opt(sgd, *net);
  train_pass(*net, mnist_data(), rank() * kBatch, kBatch);
  REQUIRE(opt.step());
  const float mean = float(size() + 1) / 2;  // of 1, 2, ..., size()
  for (int64_t i = 0; i < 3; ++i) CHECK(extra.value[i] == Approx(1.0f - mean).epsilon(1e-6));
}

TEST_CASE("DistributedOptimizer: ranks with fewer batches join, the others finish with their zeros",
          "[distributed][optimizer][join]") {
  // Rank r has 2 + r batches. While a rank has joined it adds zeros and the average still
  // divides by size() (as Horovod): the reference does exactly that with every rank's data.
  const Dataset& data = mnist_data();
  const int64_t global = kBatch * size();
  auto net = seeded_mnist(11), reference = seeded_mnist(11);
  SGD sgd(net->parameters(), {.lr = 0.1, .momentum = 0.5}), reference_sgd(reference->parameters(),
                                                                          {.lr = 0.1, .momentum = 0.5});
  {
    DistributedOptimizer opt(sgd, *net);
    for (int64_t step = 0; step < 2 + rank(); ++step) {
      opt.zero_grad();
      train_pass(*net, data, step * global + rank() * kBatch, kBatch);
      REQUIRE(opt.step());
    }
    bounded_join();
  }
  for (int64_t step = 0; step < 2 + rank(); ++step) {
    reference_sgd.zero_grad();
    for (int q = 0; q < size(); ++q)
      if (step < 2 + q) train_pass(*reference, data, step * global + q * kBatch, kBatch);
    for (Parameter* p : reference->parameters())
      for (int64_t i = 0; i < p->grad.numel(); ++i) p->grad[i] /= float(size());
    reference_sgd.step();
  }
  require_close_parameters(*net, *reference, 1e-5, 1e-6);
}

TEST_CASE("DistributedOptimizer: options out of range and misuse are errors that say what to do",
          "[distributed][optimizer][errors]") {
  using Catch::Matchers::Contains;
  auto net = seeded_mnist(13);
  SGD sgd(net->parameters(), {.lr = 0.1});
  REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, *net, {.op = kolo::ReduceOp::Max}),
                      Contains("op must be average, sum or adasum, got max"));
  REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, *net, {.gradient_predivide_factor = 0}),
                      Contains("gradient_predivide_factor must be positive"));
  REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, *net, {.op = kolo::ReduceOp::Sum, .gradient_predivide_factor = 2}),
                      Contains("needs op average"));
  REQUIRE_THROWS_WITH(DistributedOptimizer(sgd, *net, {.backward_passes_per_step = 0}),
                      Contains("backward_passes_per_step must be at least 1, got 0"));
  Parameter twin{.name = net->parameters()[0]->name, .value = Tensor({1}), .grad = Tensor({1})};
  std::vector<Parameter*> params = net->parameters();
  params.push_back(&twin);
  SGD clashing(params, {.lr = 0.1});
  REQUIRE_THROWS_WITH(DistributedOptimizer(clashing, *net), Contains("two parameters are named 'conv1.weight'"));

  DistributedOptimizer opt(sgd, *net);
  train_pass(*net, mnist_data(), rank() * kBatch, kBatch);
  REQUIRE_THROWS_WITH(opt.zero_grad(), Contains("zero_grad() after backward and before step()"));
  opt.synchronize();  // (so that the second backward below does not write under a running allreduce)
  REQUIRE_THROWS_WITH(train_pass(*net, mnist_data(), rank() * kBatch, kBatch),
                      Contains("was produced twice in one pass"));
  REQUIRE(opt.step());  // the object stays usable
  opt.zero_grad();
  train_pass(*net, mnist_data(), rank() * kBatch, kBatch);
  REQUIRE(opt.step());
}
