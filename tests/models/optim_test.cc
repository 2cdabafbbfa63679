// Optimizers against values worked out by hand (or, for the longer mixed cases, by a
// double-precision evaluation of PyTorch's formulas; torch 1.13's float32 results agree
// with every expected value here to within 1e-7), state round trips, and LR schedules.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numbers>

#include "kolo/models.h"

using namespace kolo::models;

namespace {

// A 1-D parameter with a zero gradient.
std::unique_ptr<Parameter> param(const std::string& name, const std::vector<float>& values) {
  auto p = std::make_unique<Parameter>();
  p->name = name;
  p->value = Tensor::from({static_cast<int64_t>(values.size())}, values);
  p->grad = Tensor({static_cast<int64_t>(values.size())});
  return p;
}

void set_grad(Parameter& p, const std::vector<float>& grad) {
  REQUIRE(static_cast<int64_t>(grad.size()) == p.grad.numel());
  for (std::size_t i = 0; i < grad.size(); ++i) p.grad[static_cast<int64_t>(i)] = grad[i];
}

// Steps `optimizer` once per gradient in `grads` (all for the one parameter p).
void run(Optimizer& optimizer, Parameter& p, const std::vector<std::vector<float>>& grads) {
  for (const auto& g : grads) {
    set_grad(p, g);
    optimizer.step();
  }
}

void check_values(const Parameter& p, const std::vector<double>& expected) {
  REQUIRE(p.value.numel() == static_cast<int64_t>(expected.size()));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(p.value[static_cast<int64_t>(i)] == Approx(expected[i]).epsilon(1e-6));
  }
}

// Three varied gradients for a 3-element parameter, for the mixed cases.
const std::vector<std::vector<float>> kMixedGrads = {{0.5f, 1, -1}, {0.25f, -0.5f, 2}, {-1, 0.125f, 0.5f}};

}  // namespace

// ---- SGD ---------------------------------------------------------------------------------

TEST_CASE("plain SGD moves against the gradient by lr", "[optim][sgd]") {
  auto p = param("w", {1, -2, 0.5f});
  SGD sgd({p.get()}, {.lr = 0.1});
  run(sgd, *p, {{0.5f, 1, -1}});
  check_values(*p, {0.95, -2.1, 0.6});
}

TEST_CASE("SGD momentum starts from the first update and dampens later ones", "[optim][sgd]") {
  // Constant g, momentum 0.9, dampening 0.1: buf1 = g, buf2 = 0.9 g + 0.9 g = 1.8 g,
  // buf3 = 0.9 * 1.8 g + 0.9 g = 2.52 g; p3 = p0 - 0.1 * (1 + 1.8 + 2.52) g = p0 - 0.532 g.
  auto p = param("w", {1, -2, 0.5f});
  SGD sgd({p.get()}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1});
  run(sgd, *p, {{0.5f, 1, -1}, {0.5f, 1, -1}, {0.5f, 1, -1}});
  check_values(*p, {1 - 0.532 * 0.5, -2 - 0.532, 0.5 + 0.532});
}

TEST_CASE("SGD Nesterov steps along the gradient plus momentum times the buffer", "[optim][sgd]") {
  // Constant g, momentum 0.9: buf = g, 1.9 g, 2.71 g and d = g + 0.9 buf = 1.9 g, 2.71 g,
  // 3.439 g; p3 = p0 - 0.1 * 8.049 g.
  auto p = param("w", {1, -2, 0.5f});
  SGD sgd({p.get()}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  run(sgd, *p, {{0.5f, 1, -1}, {0.5f, 1, -1}, {0.5f, 1, -1}});
  check_values(*p, {1 - 0.8049 * 0.5, -2 - 0.8049, 0.5 + 0.8049});
}

TEST_CASE("SGD weight decay adds wd * p to the gradient before momentum", "[optim][sgd]") {
  // p0 = 1, g = 0.5: d1 = 0.5 + 0.1 = 0.6 = buf1, p1 = 0.94; d2 = 0.5 + 0.094 = 0.594,
  // buf2 = 0.54 + 0.594 = 1.134, p2 = 0.8266. p0 = -2: d1 = 0.3, p1 = -2.03; d2 = 0.297,
  // buf2 = 0.567, p2 = -2.0867.
  auto p = param("w", {1, -2});
  SGD sgd({p.get()}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1});
  run(sgd, *p, {{0.5f, 0.5f}, {0.5f, 0.5f}});
  check_values(*p, {0.8266, -2.0867});
}

TEST_CASE("SGD with weight decay, momentum and dampening over varied gradients", "[optim][sgd]") {
  auto p = param("w", {1, -2, 0.5f});
  SGD sgd({p.get()}, {.lr = 0.05, .momentum = 0.5, .dampening = 0.5, .weight_decay = 0.01});
  run(sgd, *p, kMixedGrads);
  check_values(*p, {0.970395748406, -2.06884150306, 0.499225221859});
}

TEST_CASE("SGD with weight decay and Nesterov over varied gradients", "[optim][sgd]") {
  auto p = param("w", {1, -2, 0.5f});
  SGD sgd({p.get()}, {.lr = 0.05, .momentum = 0.8, .weight_decay = 0.2, .nesterov = true});
  run(sgd, *p, kMixedGrads);
  check_values(*p, {0.917562988, -1.952850296, 0.322115444});
}

TEST_CASE("SGD rejects settings PyTorch rejects", "[optim][sgd]") {
  auto p = param("w", {1});
  CHECK_THROWS_AS(SGD({p.get()}, {.lr = -1}), kolo::Error);
  CHECK_THROWS_AS(SGD({p.get()}, {.momentum = 0, .nesterov = true}), kolo::Error);
  // Not a rate at all: they would train on silently (nan), or to nan (inf).
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    CHECK_THROWS_AS(SGD({p.get()}, {.lr = bad}), kolo::Error);
    CHECK_THROWS_AS(Adam({p.get()}, {.lr = bad}), kolo::Error);
    CHECK_THROWS_AS(Adadelta({p.get()}, {.lr = bad}), kolo::Error);
  }
  SGD sgd({p.get()}, {.lr = 0.5});
  CHECK_THROWS_WITH(sgd.set_lr(-1), Catch::Contains("invalid learning rate"));
  CHECK_THROWS_AS(sgd.set_lr(std::numeric_limits<double>::quiet_NaN()), kolo::Error);
  CHECK(sgd.lr() == 0.5);
  OptimizerState state = sgd.state();
  state.scalars["lr"] = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(sgd.load_state(state), Catch::Contains("scalar 'lr' is inf"));
  CHECK(sgd.lr() == 0.5);
  CHECK_THROWS_AS(SGD({p.get()}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}), kolo::Error);
}

// ---- Adam --------------------------------------------------------------------------------

TEST_CASE("Adam with a constant gradient moves lr * sign(g) per step", "[optim][adam]") {
  // The bias corrections make m_hat = g and v_hat = g² at every step, so each step is
  // lr * g / (|g| + eps).
  auto p = param("w", {1, -1, 0.5f});
  Adam adam({p.get()}, {.lr = 0.01});
  run(adam, *p, {{1, -2, 0.5f}, {1, -2, 0.5f}, {1, -2, 0.5f}});
  check_values(*p, {0.97, -0.97, 0.47});
}

TEST_CASE("Adam bias-corrects a gradient that changes sign", "[optim][adam]") {
  // g = 1 then -1: p1 = 0.99. m2 = 0.9 * 0.1 - 0.1 = -0.01, bias_correction1 = 0.19;
  // v2 = 0.999 * 0.001 + 0.001 = 0.001999 = bias_correction2, so denom = 1 + eps;
  // p2 = 0.99 + 0.01 * 0.01 / 0.19.
  auto p = param("w", {1});
  Adam adam({p.get()}, {.lr = 0.01});
  run(adam, *p, {{1}, {-1}});
  check_values(*p, {0.99 + 0.0001 / 0.19});
}

TEST_CASE("Adam weight decay is added to the gradient (not decoupled)", "[optim][adam]") {
  // g = 0, p0 = 2, wd = 0.1: g1 = 0.2, p1 = 1.99; g2 = 0.199, m2 = 0.018 + 0.0199 = 0.0379,
  // v2 = 0.999 * 0.00004 + 0.001 * 0.039601 = 0.000079561;
  // p2 = 1.99 - 0.01 * (0.0379 / 0.19) / sqrt(0.000079561 / 0.001999).
  auto p = param("w", {2});
  Adam adam({p.get()}, {.lr = 0.01, .weight_decay = 0.1});
  run(adam, *p, {{0}, {0}});
  check_values(*p, {1.99 - 0.01 * (0.0379 / 0.19) / std::sqrt(0.000079561 / 0.001999)});
}

TEST_CASE("Adam with all settings over varied gradients", "[optim][adam]") {
  auto p = param("w", {1, -2, 0.5f});
  Adam adam({p.get()}, {.lr = 0.1, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-3, .weight_decay = 0.05});
  run(adam, *p, kMixedGrads);
  check_values(*p, {0.828939921415, -2.11586384897, 0.509790769252});
}

// ---- Adadelta ------------------------------------------------------------------------------

TEST_CASE("Adadelta scales the step by the running RMS of past updates", "[optim][adadelta]") {
  // rho 0.9, eps 1e-6, g = ±1 twice. Step 1: square_avg = 0.1, delta1 = sqrt(eps) /
  // sqrt(0.1 + eps), acc_delta = 0.1 delta1². Step 2: square_avg = 0.19,
  // delta2 = sqrt(acc_delta + eps) / sqrt(0.19 + eps).
  const double eps = 1e-6;
  const double delta1 = std::sqrt(eps) / std::sqrt(0.1 + eps);
  const double delta2 = std::sqrt(0.1 * delta1 * delta1 + eps) / std::sqrt(0.19 + eps);
  auto p = param("w", {1, -1});
  Adadelta adadelta({p.get()}, {});
  run(adadelta, *p, {{1, -1}, {1, -1}});
  check_values(*p, {1 - delta1 - delta2, -1 + delta1 + delta2});
  CHECK(p->value[0] == Approx(0.993593326377).epsilon(1e-6));
}

TEST_CASE("Adadelta with all settings over varied gradients", "[optim][adadelta]") {
  auto p = param("w", {1, -2, 0.5f});
  Adadelta adadelta({p.get()}, {.lr = 0.5, .rho = 0.8, .eps = 1e-4, .weight_decay = 0.1});
  run(adadelta, *p, kMixedGrads);
  check_values(*p, {0.994813233481, -1.99856081508, 0.490988190992});
}

// ---- zero_grad, state ---------------------------------------------------------------------

TEST_CASE("zero_grad clears every parameter's gradient", "[optim]") {
  auto a = param("a", {1, 2});
  auto b = param("b", {3});
  set_grad(*a, {5, 6});
  set_grad(*b, {7});
  SGD sgd({a.get(), b.get()}, {});
  sgd.zero_grad();
  CHECK(a->grad[0] == 0.0f);
  CHECK(a->grad[1] == 0.0f);
  CHECK(b->grad[0] == 0.0f);
}

namespace {

// Two parameters and a deterministic gradient for each step.
struct Problem {
  std::unique_ptr<Parameter> w = param("layer.weight", {0.5f, -1.25f, 2, 0.75f});
  std::unique_ptr<Parameter> b = param("layer.bias", {0.1f, -0.3f});
  std::vector<Parameter*> params() { return {w.get(), b.get()}; }
  void gradients(int step) {
    for (Parameter* p : params())
      for (int64_t i = 0; i < p->grad.numel(); ++i)
        p->grad[i] = std::sin(static_cast<float>(step * 7 + i)) + 0.1f * p->value[i];
  }
};

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()) == 0;
}

template <typename Opt, typename Options>
void check_state_round_trip(const Options& options) {
  Problem original;
  Opt opt(original.params(), options);
  for (int s = 0; s < 3; ++s) {
    original.gradients(s);
    opt.step();
  }
  opt.set_lr(opt.lr() * 0.5);  // as a schedule would: the state carries the current rate
  const OptimizerState saved = opt.state();

  Problem resumed;
  resumed.w->value.copy_from(original.w->value);
  resumed.b->value.copy_from(original.b->value);
  Opt fresh(resumed.params(), options);
  fresh.load_state(saved);
  CHECK(fresh.lr() == opt.lr());

  for (int s = 3; s < 5; ++s) {
    original.gradients(s);
    opt.step();
    resumed.gradients(s);
    fresh.step();
  }
  CHECK(bit_identical(original.w->value, resumed.w->value));
  CHECK(bit_identical(original.b->value, resumed.b->value));
}

}  // namespace

namespace {

// Steps with update range [begin, end) over the parameters taken end to end (the Problem's
// 4 + 2 elements): the elements inside equal a full step's, bit for bit, the others keep
// their values. Two steps, so that momentum-like state created at the first one is used.
template <typename Opt, typename Options>
void check_update_range(const Options& options, int64_t begin, int64_t end) {
  Problem full, ranged;
  Opt full_opt(full.params(), options), ranged_opt(ranged.params(), options);
  REQUIRE(ranged_opt.can_update_a_range());
  ranged_opt.set_update_range(begin, end);
  std::vector<float> start;
  for (Parameter* p : ranged.params()) start.insert(start.end(), p->value.data(), p->value.data() + p->value.numel());
  for (int s = 0; s < 2; ++s) {
    full.gradients(s);
    for (std::size_t k = 0; k < 2; ++k)  // the same gradients (the Problem's depend on the values)
      ranged.params()[k]->grad.copy_from(full.params()[k]->grad);
    full_opt.step();
    ranged_opt.step();
  }
  int64_t at = 0;
  for (std::size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < full.params()[k]->value.numel(); ++i, ++at) {
      INFO("element " << at);
      const float want = at >= begin && at < end ? full.params()[k]->value[i] : start[static_cast<std::size_t>(at)];
      CHECK(std::memcmp(&ranged.params()[k]->value[i], &want, sizeof(float)) == 0);
    }
}

}  // namespace

TEST_CASE("an update range updates those elements as a full step does, and no others", "[optim]") {
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 6}, {1, 3}, {3, 5}, {4, 6}, {2, 2}}) {
    INFO("range [" << begin << ", " << end << ")");
    check_update_range<SGD>(SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01}, begin, end);
    check_update_range<Adam>(AdamOptions{.lr = 0.01, .weight_decay = 0.01}, begin, end);
    check_update_range<Adadelta>(AdadeltaOptions{.weight_decay = 0.01}, begin, end);
  }
  auto p = param("p", {1});
  SGD sgd({p.get()}, {});
  CHECK_THROWS_AS(sgd.set_update_range(3, 2), kolo::Error);
}

namespace {

// An optimizer with a before-update hook over [begin, end) of two parameters of several
// blocks each, against the same optimizer without one. The gradients start as NaN and the
// hook writes those of its block only, so an element updated before its hook ran comes out
// NaN; each hook call also checks that the block before it is updated already and its own
// block not yet (hook and update alternate, block by block).
template <typename Opt, typename Options>
void check_before_update_hook(const Options& options) {
  constexpr int64_t kW = 40000, kB = 30001, begin = 5, end = 65000;
  const auto gradient = [](int64_t at) { return std::sin(static_cast<float>(at) * 0.01f) + 0.5f; };
  const auto values = [](int64_t n, float offset) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = offset + 0.001f * static_cast<float>(i % 97);
    return v;
  };
  auto w = param("w", values(kW, 0.5f)), b = param("b", values(kB, -0.25f));
  auto w_full = param("w", values(kW, 0.5f)), b_full = param("b", values(kB, -0.25f));
  Opt hooked({w.get(), b.get()}, options), full({w_full.get(), b_full.get()}, options);
  hooked.set_update_range(begin, end);
  const auto value = [&](int64_t at) { return at < kW ? w->value[at] : b->value[at - kW]; };
  std::vector<float> before_step;  // every value as the step began
  std::vector<std::pair<int64_t, int64_t>> blocks;
  int64_t out_of_turn = 0;
  hooked.set_before_update([&](int64_t from, int64_t to) {
    blocks.emplace_back(from, to);
    if (from > begin) out_of_turn += value(from - 1) == before_step[static_cast<std::size_t>(from - 1)];
    out_of_turn += value(from) != before_step[static_cast<std::size_t>(from)];
    for (int64_t at = from; at < to; ++at) (at < kW ? w->grad[at] : b->grad[at - kW]) = gradient(at);
  });
  for (int s = 0; s < 2; ++s) {
    w->grad.fill(std::nanf(""));
    b->grad.fill(std::nanf(""));
    for (int64_t at = 0; at < kW + kB; ++at) (at < kW ? w_full->grad[at] : b_full->grad[at - kW]) = gradient(at);
    before_step.clear();
    for (int64_t at = 0; at < kW + kB; ++at) before_step.push_back(value(at));
    blocks.clear();
    hooked.step();
    full.step();
  }
  CHECK(out_of_turn == 0);
  // The blocks tile the range, in order.
  REQUIRE(blocks.size() > 2);
  CHECK(blocks.front().first == begin);
  CHECK(blocks.back().second == end);
  for (std::size_t k = 1; k < blocks.size(); ++k) CHECK(blocks[k].first == blocks[k - 1].second);
  const std::vector<float> w_start = values(kW, 0.5f), b_start = values(kB, -0.25f);
  int64_t wrong = 0;
  for (int64_t at = 0; at < kW + kB; ++at) {
    const bool in_w = at < kW;
    const int64_t i = in_w ? at : at - kW;
    const float got = value(at);
    const float want = at >= begin && at < end ? (in_w ? w_full : b_full)->value[i]
                                               : (in_w ? w_start : b_start)[static_cast<std::size_t>(i)];
    wrong += std::memcmp(&got, &want, sizeof(float)) != 0;
  }
  CHECK(wrong == 0);
  // An empty hook: one pass again.
  hooked.set_before_update(nullptr);
  blocks.clear();
  hooked.step();
  CHECK(blocks.empty());
}

}  // namespace

TEST_CASE("a before-update hook makes each block's gradients just before the update reads them", "[optim]") {
  SECTION("sgd") { check_before_update_hook<SGD>(SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01}); }
  SECTION("adam") { check_before_update_hook<Adam>(AdamOptions{.lr = 0.01, .weight_decay = 0.01}); }
  SECTION("adadelta") { check_before_update_hook<Adadelta>(AdadeltaOptions{.weight_decay = 0.01}); }
}

TEST_CASE("optimizer state round trip reproduces the next steps bit for bit", "[optim][state]") {
  SECTION("sgd") { check_state_round_trip<SGD>(SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2}); }
  SECTION("sgd nesterov") { check_state_round_trip<SGD>(SgdOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true}); }
  SECTION("adam") { check_state_round_trip<Adam>(AdamOptions{.lr = 0.01, .weight_decay = 1e-3}); }
  SECTION("adadelta") { check_state_round_trip<Adadelta>(AdadeltaOptions{.lr = 0.5, .weight_decay = 1e-3}); }
}

TEST_CASE("optimizer state names tensors after their parameters", "[optim][state]") {
  Problem problem;
  Adam adam(problem.params(), {});
  CHECK(adam.state().tensors.empty());  // no moments before the first step, as in PyTorch
  problem.gradients(0);
  adam.step();
  const OptimizerState state = adam.state();
  CHECK(state.tensors.count("exp_avg/layer.weight") == 1);
  CHECK(state.tensors.count("exp_avg_sq/layer.bias") == 1);
  CHECK(state.scalars.at("step") == 1);
  CHECK(state.scalars.at("lr") == Approx(1e-3));
}

TEST_CASE("load_state rejects a state that does not fit, naming the tensor", "[optim][state]") {
  Problem problem;
  SGD sgd(problem.params(), {.lr = 0.1, .momentum = 0.9});
  problem.gradients(0);
  sgd.step();
  const OptimizerState good = sgd.state();

  auto other_w = param("layer.weight", {1, 2, 3});  // one value short
  auto other_b = param("layer.bias", {1, 2});
  SGD other({other_w.get(), other_b.get()}, {.lr = 0.1, .momentum = 0.9});
  CHECK_THROWS_WITH(other.load_state(good), Catch::Contains("momentum/layer.weight"));

  OptimizerState missing = good;
  missing.tensors.erase("momentum/layer.bias");
  CHECK_THROWS_WITH(sgd.load_state(missing), Catch::Contains("momentum/layer.bias"));

  OptimizerState stranger = good;
  stranger.tensors["momentum/fc.weight"] = {1};
  CHECK_THROWS_WITH(sgd.load_state(stranger), Catch::Contains("momentum/fc.weight"));

  Adam adam(problem.params(), {});
  CHECK_THROWS_WITH(adam.load_state(good), Catch::Contains("momentum/layer"));
  CHECK_THROWS_AS(adam.load_state(good), kolo::Error);

  // A failed load leaves the optimizer as it was.
  SGD before(problem.params(), {.lr = 0.1, .momentum = 0.9});
  CHECK_THROWS(before.load_state(missing));
  CHECK(before.state().tensors.empty());
}

// ---- Schedules ------------------------------------------------------------------------------

TEST_CASE("step schedule multiplies by gamma every step_epochs", "[optim][schedule]") {
  auto s = step_schedule(30, 0.1);
  CHECK(s->factor(0) == 1);
  CHECK(s->factor(29.9) == 1);
  CHECK(s->factor(30) == Approx(0.1));
  CHECK(s->factor(65) == Approx(0.01));
  CHECK_THROWS_AS(step_schedule(0, 0.1), kolo::Error);
}

TEST_CASE("cosine schedule falls from 1 to min_factor and stays there", "[optim][schedule]") {
  auto s = cosine_schedule(10);
  CHECK(s->factor(0) == 1);
  CHECK(s->factor(2.5) == Approx((1 + std::sqrt(0.5)) / 2));  // cos(pi/4)
  CHECK(s->factor(5) == Approx(0.5));
  CHECK(s->factor(10) == Approx(0).margin(1e-12));
  CHECK(s->factor(12) == Approx(0).margin(1e-12));
  auto floor = cosine_schedule(10, 0.1);
  CHECK(floor->factor(5) == Approx(0.55));
  CHECK(floor->factor(10) == Approx(0.1));
}

TEST_CASE("linear warmup rises from start_factor to 1 and stays at 1", "[optim][schedule]") {
  auto s = linear_warmup(5, 0.25);
  CHECK(s->factor(0) == Approx(0.25));
  CHECK(s->factor(2.5) == Approx(0.625));
  CHECK(s->factor(4.9) == Approx(0.25 + 0.75 * 4.9 / 5));
  CHECK(s->factor(5) == 1);
  CHECK(s->factor(100) == 1);
}

TEST_CASE("composed schedules multiply", "[optim][schedule]") {
  std::vector<std::unique_ptr<LrSchedule>> parts;
  parts.push_back(linear_warmup(5, 0.25));
  parts.push_back(step_schedule(30, 0.1));
  parts.push_back(cosine_schedule(100, 0.5));
  auto s = compose(std::move(parts));
  CHECK(s->factor(2.5) == Approx(0.625 * (0.5 + 0.5 * (1 + std::cos(std::numbers::pi * 0.025)) / 2)));
  CHECK(s->factor(50) == Approx(0.1 * 0.75));
  CHECK(compose({})->factor(3) == 1);
}

TEST_CASE("a schedule drives the optimizer's learning rate", "[optim][schedule]") {
  auto p = param("w", {1});
  SGD sgd({p.get()}, {.lr = 0.4});
  const double base = sgd.lr();
  auto warmup = linear_warmup(2, 0.25);
  sgd.set_lr(base * warmup->factor(0.5));
  run(sgd, *p, {{1}});
  check_values(*p, {1 - 0.4 * (0.25 + 0.75 * 0.25)});
}
