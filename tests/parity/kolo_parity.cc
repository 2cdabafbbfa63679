// kolo-parity FIXTURE_DIR [--device cpu|cuda|cuda:N]: runs kolo's model layer on a PyTorch
// fixture (written by export_fixtures.py) and compares every tensor the fixture has.
// Prints one line per tensor (name, relative L2 error, bound) and exits non-zero if any is
// outside max(1e-5, 10 × PyTorch's own float32 noise); on a GPU (strict float32, no TF32)
// the floor is 1e-4. Exits 77 (skipped) when asked for a GPU that is not there.
//
// Order, as the fixture was made: eval forward with the initial running statistics; train
// forward; backward; two SGD steps, each with the fixture's grad/* values.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "fixture.h"
#include "support/gpu_skip.h"
#include "kolo/models.h"

using namespace kolo::models;
using kolo::parity::Fixture;
using kolo::parity::FixtureTensor;

namespace {

struct Checker {
  const Fixture& fixture;
  double min_bound = 1e-5;
  int checked = 0, failed = 0;

  void compare(const std::string& name, const float* got, int64_t count) {
    const FixtureTensor* t = fixture.find(name);
    if (t == nullptr) return;
    const std::vector<float> want = fixture.floats(*t);
    double diff = 0, norm = 0;
    if (static_cast<int64_t>(want.size()) != count) {
      std::printf("%-48s FAIL: %lld values, expected %zu\n", name.c_str(), static_cast<long long>(count), want.size());
      ++failed;
      return;
    }
    for (int64_t i = 0; i < count; ++i) {
      const double d = double(got[i]) - double(want[static_cast<std::size_t>(i)]);
      diff += d * d;
      norm += double(want[static_cast<std::size_t>(i)]) * double(want[static_cast<std::size_t>(i)]);
    }
    const double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    const double bound = std::max(min_bound, 10 * t->noise_rel_l2);
    const bool ok = rel <= bound && std::isfinite(rel);
    std::printf("%-48s rel_l2 %.3e  bound %.3e  %s\n", name.c_str(), rel, bound, ok ? "ok" : "FAIL");
    ++checked;
    failed += ok ? 0 : 1;
  }
  void compare(const std::string& name, const Tensor& got) {
    const Tensor host = got.cpu();
    compare(name, host.data(), host.numel());
  }
  void compare_scalar(const std::string& name, double value) {
    const float v = static_cast<float>(value);
    compare(name, &v, 1);
  }
};

// A parameter's or buffer's starting value: stored in the fixture, or the rule's.
void load_initial(const Fixture& f, const std::string& stored_name, const std::string& name, Tensor& t) {
  std::vector<float> values;
  if (const FixtureTensor* stored = f.find(stored_name)) values = f.floats(*stored);
  else values = kolo::parity::rule_values(std::stoull(f.meta_value("param_init", 1)), name, t.shape());
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw kolo::Error(kolo::StatusCode::InvalidArgument, "kolo-parity: " + name + " has " +
                                                             std::to_string(values.size()) + " values, kolo's has " +
                                                             std::to_string(t.numel()));
  std::copy(values.begin(), values.end(), t.data());
}

SgdOptions sgd_options(const Fixture& f) {
  SgdOptions o;
  const std::vector<std::string>& v = f.meta.at("sgd");
  for (std::size_t i = 0; i + 1 < v.size(); i += 2) {
    if (v[i] == "lr") o.lr = std::stod(v[i + 1]);
    else if (v[i] == "momentum") o.momentum = std::stod(v[i + 1]);
    else if (v[i] == "weight_decay") o.weight_decay = std::stod(v[i + 1]);
    else if (v[i] == "dampening") o.dampening = std::stod(v[i + 1]);
    else if (v[i] == "nesterov") o.nesterov = v[i + 1] == "1";
  }
  return o;
}

int run(const std::string& folder, kolo::Device device) {
  const Fixture f = kolo::parity::read_fixture(folder);
  std::unique_ptr<Net> net = make_net(f.meta_value("model"), std::stoll(f.meta_value("classes")));
  for (Parameter* p : net->parameters()) load_initial(f, "param/" + p->name, p->name, p->value);
  for (auto& [name, buffer] : net->buffers()) load_initial(f, "buffer_pre/" + name, name, *buffer);
  net->to(device);

  const FixtureTensor* input_record = f.find("input");
  const FixtureTensor* label_record = f.find("label");
  if (input_record == nullptr || label_record == nullptr)
    throw kolo::Error(kolo::StatusCode::InvalidArgument, "kolo-parity: " + folder + " has no input or label");
  const Tensor input = Tensor::from(input_record->shape, f.floats(*input_record)).to(device);
  const std::vector<int32_t> labels = f.ints(*label_record);

  Checker check{f};
  if (!device.is_cpu()) check.min_bound = 1e-4;
  net->eval();
  const Tensor eval_logits = net->forward(input);
  check.compare("eval_logits", eval_logits);
  check.compare_scalar("eval_loss", softmax_cross_entropy(eval_logits, labels).loss);

  net->train();
  net->set_needs_input_grad(true);
  const Tensor logits = net->forward(input);
  const LossResult loss = softmax_cross_entropy(logits, labels);
  check.compare("logits", logits);
  check.compare_scalar("loss", loss.loss);
  for (auto& [name, buffer] : net->buffers()) check.compare("buffer_post/" + name, *buffer);
  const Tensor grad_input = net->backward(loss.grad);
  check.compare("grad_input", grad_input);
  for (Parameter* p : net->parameters()) check.compare("grad/" + p->name, p->grad);

  if (f.meta.count("sgd")) {
    // Each step uses the fixture's gradients where it has them (so that an error in the
    // gradient is not counted twice), kolo's own elsewhere.
    std::map<std::string, std::vector<float>> grads;
    for (Parameter* p : net->parameters()) {
      const FixtureTensor* g = f.find("grad/" + p->name);
      const Tensor own = p->grad.cpu();
      grads[p->name] = g ? f.floats(*g) : std::vector<float>(own.data(), own.data() + own.numel());
    }
    SGD sgd(net->parameters(), sgd_options(f));
    for (int step = 1; step <= 2; ++step) {
      for (Parameter* p : net->parameters()) p->grad.copy_from(Tensor::from(p->grad.shape(), grads[p->name]));
      sgd.step();
      for (Parameter* p : net->parameters()) check.compare("sgd" + std::to_string(step) + "/" + p->name, p->value);
    }
  }
  std::printf("%s: %d tensors checked, %d outside their bound\n", folder.c_str(), check.checked, check.failed);
  return check.failed == 0 && check.checked > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool device_given = argc == 4 && std::string(argv[2]) == "--device";
  if (argc != 2 && !device_given) {
    std::fprintf(stderr, "usage: kolo-parity FIXTURE_DIR [--device cpu|cuda|cuda:N]\n");
    return 2;
  }
  try {
    kolo::Device device = kolo::Device::cpu();
    if (device_given) {
      const std::string name = argv[3];
      if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
        device = kolo::Device::cuda(name == "cuda" ? 0 : std::stoi(name.substr(5)));
        if (device.index >= cuda_device_count())
          return kolo_test::exit_code_without_gpu(
              ("no CUDA device " + std::to_string(device.index) + " visible (or kolo was built without CUDA)").c_str());
        set_allow_tf32(device, false);  // PyTorch's reference is float32 on the CPU
      } else if (name != "cpu") {
        std::fprintf(stderr, "kolo-parity: unknown device '%s' (cpu, cuda or cuda:N)\n", name.c_str());
        return 2;
      }
    }
    return run(argv[1], device);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
