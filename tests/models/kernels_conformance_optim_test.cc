// Kernels conformance (kernels_conformance.h): the multi-tensor steps, sgd_step, adam_step,
// adadelta_step and unscale_and_check, on every implementation, over tensors of several
// sizes (one larger than a GPU chunk of 65536 elements, so that it spans several blocks).
//
// Bounds. The optimizers' reference follows models/kernels.h's rules in double from the
// same float hyper-parameters; the kernels round every operation to float32, so after
// three steps they are ~1e-7 apart: 1e-6. A GPU runs the same float rules, but nvcc fuses
// a·b + c into one rounding: 1e-6 from the CPU. Unscaling is one float product per element
// (exact against the double product rounded to float) and a flag: bit for bit.
#include <limits>

#include "kernels_conformance.h"

using namespace kolo::models;
using namespace kolo::models::conformance;
using kolo::Device;

namespace {

const std::vector<int64_t> kSizes = {70001, 5, 300};
constexpr int kSteps = 3;

// A parameter's tensors for a run, with the gradient of each step.
struct Slot {
  Tensor param, state1, state2;
  std::vector<Tensor> grads;
};

// Each size's parameter and two state tensors filled with `state`, and kSteps gradients.
std::vector<Slot> slots(float state) {
  std::vector<Slot> out;
  uint64_t seed = 100;
  for (int64_t n : kSizes) {
    Slot s{random_tensor({n}, seed++), Tensor::full({n}, state), Tensor::full({n}, state), {}};
    for (int step = 0; step < kSteps; ++step) s.grads.push_back(random_tensor({n}, seed++));
    out.push_back(std::move(s));
  }
  return out;
}

// Runs `step(kernels, tensors, step index)` kSteps times on device d with each slot's param
// and its first `states` state tensors (0: none, as SGD without momentum; 1: state1 as
// SGD's momentum; 2: both) and returns them afterwards.
template <typename Step>
Outputs run_steps(Device d, const std::vector<Slot>& host, int states, Step&& step) {
  std::vector<Tensor> param, state1, state2;
  for (const Slot& s : host) {
    param.push_back(copy_to(s.param, d));
    state1.push_back(copy_to(s.state1, d));
    state2.push_back(copy_to(s.state2, d));
  }
  for (int t = 0; t < kSteps; ++t) {
    std::vector<Tensor> grads;  // kept alive until the step is enqueued
    std::vector<Kernels::UpdateTensors> tensors;
    for (std::size_t i = 0; i < host.size(); ++i) {
      grads.push_back(host[i].grads[static_cast<std::size_t>(t)].to(d));
      tensors.push_back({param[i].data(), grads.back().data(), states >= 1 ? state1[i].data() : nullptr,
                         states >= 2 ? state2[i].data() : nullptr, param[i].numel()});
    }
    step(kernels(d), tensors, t);
  }
  Outputs out;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const std::string n = std::to_string(kSizes[i]);
    out["param " + n] = values(param[i]);
    if (states >= 1) out["state1 " + n] = values(state1[i]);
    if (states >= 2) out["state2 " + n] = values(state2[i]);
  }
  return out;
}

struct Reference {
  std::vector<std::vector<double>> param, state1, state2;
  explicit Reference(const std::vector<Slot>& s) {
    for (const Slot& slot : s) {
      param.push_back(values(slot.param));
      state1.push_back(values(slot.state1));
      state2.push_back(values(slot.state2));
    }
  }
  // The reference's result in run_steps' layout (see the top of this file for the bound).
  std::vector<Expected> expected(int states) const {
    std::vector<Expected> e;
    for (std::size_t i = 0; i < kSizes.size(); ++i) {
      const std::string n = std::to_string(kSizes[i]);
      e.push_back({"param " + n, param[i], {1e-6, 1e-6}});
      if (states >= 1) e.push_back({"state1 " + n, state1[i], {1e-6, 1e-6}});
      if (states >= 2) e.push_back({"state2 " + n, state2[i], {1e-6, 1e-6}});
    }
    return e;
  }
  // body(p, s1, s2, g) for every element of every tensor at step t.
  template <typename Body>
  void step(const std::vector<Slot>& s, int t, Body&& body) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      const Tensor& g = s[i].grads[static_cast<std::size_t>(t)];
      for (std::size_t j = 0; j < param[i].size(); ++j)
        body(param[i][j], state1[i][j], state2[i][j], double(g[static_cast<int64_t>(j)]));
    }
  }
};

}  // namespace

TEST_CASE("sgd_step: torch.optim.SGD's rule, the first step's momentum buffer, Nesterov, dampening, weight decay",
          "[kernels][optim]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  struct Config {
    const char* what;
    Kernels::SgdStep step;
  };
  const std::vector<Config> configs = {
      {"plain", {.neg_lr = -0.1f}},
      {"momentum", {.neg_lr = -0.1f, .momentum = 0.9f}},
      {"nesterov and weight decay", {.neg_lr = -0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true}},
      {"dampening and weight decay", {.neg_lr = -0.1f, .momentum = 0.5f, .weight_decay = 1e-3f, .keep = 0.9f}}};
  for (const Config& c : configs) {
    INFO(c.what);
    const bool momentum = c.step.momentum != 0;
    // The first step must create the momentum buffer from its update, never read it: NaN
    // there would show.
    const std::vector<Slot> host = slots(std::numeric_limits<float>::quiet_NaN());
    const auto run = [&](Device d) {
      return run_steps(d, host, momentum ? 1 : 0, [&](Kernels& k, std::span<const Kernels::UpdateTensors> tensors, int t) {
        Kernels::SgdStep step = c.step;
        step.first = momentum && t == 0;
        k.sgd_step(tensors, step);
      });
    };
    Reference r(host);
    const Kernels::SgdStep& s = c.step;
    for (int t = 0; t < kSteps; ++t)
      r.step(host, t, [&](double& p, double& buf, double&, double g) {
        double d = g + double(s.weight_decay) * p;
        if (momentum) {
          buf = t == 0 ? d : buf * s.momentum + double(s.keep) * d;
          d = s.nesterov ? d + double(s.momentum) * buf : buf;
        }
        p += double(s.neg_lr) * d;
      });
    conform(device, run, r.expected(momentum ? 1 : 0));
  }
}

TEST_CASE("adam_step: torch.optim.Adam's rule with bias corrections and weight decay", "[kernels][optim]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  for (const float weight_decay : {0.0f, 0.01f}) {
    INFO("weight decay " << weight_decay);
    const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999;
    // As adam.cc: the bias corrections in double, everything else rounded to float.
    const auto adam = [&](int t) {
      const double bc1 = 1 - std::pow(beta1, t + 1), bc2 = 1 - std::pow(beta2, t + 1);
      return Kernels::AdamStep{.neg_step_size = static_cast<float>(-(lr / bc1)),
                               .bias_correction2_sqrt = static_cast<float>(std::sqrt(bc2)),
                               .beta1 = static_cast<float>(beta1),
                               .one_minus_beta1 = static_cast<float>(1 - beta1),
                               .beta2 = static_cast<float>(beta2),
                               .one_minus_beta2 = static_cast<float>(1 - beta2),
                               .eps = 1e-8f,
                               .weight_decay = weight_decay};
    };
    const std::vector<Slot> host = slots(0.0f);
    const auto run = [&](Device d) {
      return run_steps(d, host, 2, [&](Kernels& k, std::span<const Kernels::UpdateTensors> tensors, int t) {
        k.adam_step(tensors, adam(t));
      });
    };
    Reference r(host);
    for (int t = 0; t < kSteps; ++t) {
      const Kernels::AdamStep s = adam(t);
      r.step(host, t, [&](double& p, double& m, double& v, double g) {
        g += double(s.weight_decay) * p;
        m = m * s.beta1 + double(s.one_minus_beta1) * g;
        v = v * s.beta2 + double(s.one_minus_beta2) * g * g;
        p += double(s.neg_step_size) * m / (std::sqrt(v) / s.bias_correction2_sqrt + s.eps);
      });
    }
    conform(device, run, r.expected(2));
  }
}

TEST_CASE("adadelta_step: torch.optim.Adadelta's rule with weight decay", "[kernels][optim]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const std::vector<Kernels::AdadeltaStep> configs = {
      {.neg_lr = -1.0f, .rho = 0.9f, .one_minus_rho = static_cast<float>(1 - 0.9), .eps = 1e-6f},
      {.neg_lr = -0.5f, .rho = 0.8f, .one_minus_rho = static_cast<float>(1 - 0.8), .eps = 1e-4f, .weight_decay = 0.1f}};
  for (const Kernels::AdadeltaStep& s : configs) {
    INFO("rho " << s.rho << ", weight decay " << s.weight_decay);
    const std::vector<Slot> host = slots(0.0f);
    const auto run = [&](Device d) {
      return run_steps(d, host, 2, [&](Kernels& k, std::span<const Kernels::UpdateTensors> tensors, int) {
        k.adadelta_step(tensors, s);
      });
    };
    Reference r(host);
    for (int t = 0; t < kSteps; ++t)
      r.step(host, t, [&](double& p, double& square_avg, double& acc_delta, double g) {
        g += double(s.weight_decay) * p;
        square_avg = square_avg * s.rho + double(s.one_minus_rho) * g * g;
        const double delta = std::sqrt(acc_delta + s.eps) / std::sqrt(square_avg + s.eps) * g;
        acc_delta = acc_delta * s.rho + double(s.one_minus_rho) * delta * delta;
        p += double(s.neg_lr) * delta;
      });
    conform(device, run, r.expected(2));
  }
}

TEST_CASE("unscale_and_check: every tensor times inv_scale, and whether any value was inf or NaN",
          "[kernels][loss-scaler]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  struct Case {
    const char* what;
    int tensor = -1;  // where the bad value goes (-1: none)
    float bad = 0;
  };
  const float inv_scale = static_cast<float>(1.0 / 1024.0 / 3.0);
  for (const Case c : {Case{"all finite"}, Case{"+inf", 2, std::numeric_limits<float>::infinity()},
                       Case{"-inf", 1, -std::numeric_limits<float>::infinity()},
                       Case{"NaN in the large tensor", 0, std::numeric_limits<float>::quiet_NaN()}}) {
    INFO(c.what);
    std::vector<Tensor> host;
    for (std::size_t i = 0; i < kSizes.size(); ++i) host.push_back(random_tensor({kSizes[i]}, 7 + i, 1e4));
    if (c.tensor >= 0) host[static_cast<std::size_t>(c.tensor)][3] = c.bad;
    const auto run = [&](Device d) {
      std::vector<Tensor> there;
      std::vector<float*> pointers;
      std::vector<int64_t> counts;
      for (const Tensor& t : host) {
        there.push_back(copy_to(t, d));
        pointers.push_back(there.back().data());
        counts.push_back(t.numel());
      }
      Outputs out{{"found", {double(kernels(d).unscale_and_check(pointers, counts, inv_scale))}}};
      for (std::size_t i = 0; i < there.size(); ++i) out["tensor " + std::to_string(i)] = values(there[i]);
      return out;
    };
    std::vector<Expected> e = {{"found", {c.tensor >= 0 ? 1.0 : 0.0}, {0, 0}}};
    for (std::size_t i = 0; i < host.size(); ++i) {
      std::vector<double> scaled = values(host[i]);
      for (double& v : scaled) v *= double(inv_scale);
      e.push_back({"tensor " + std::to_string(i), scaled, {0, 0}});
    }
    conform(device, run, e);
  }
  const auto none = [](Device d) {
    return Outputs{{"found", {double(kernels(d).unscale_and_check({}, {}, 0.5f))}}};
  };
  conform(device, none, {{"found", {0.0}, {0, 0}}});
}
