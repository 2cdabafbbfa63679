// What the layers refuse before their kernels see it: windows that describe no output (a
// window larger than the padded input still counted one output by integer division),
// impossible hyper-parameters, and a backward() with no forward() or a gradient of the wrong
// shape (the kernels trusted it and read or wrote past the buffers' ends).
#include <catch2/catch.hpp>

#include <functional>

#include "kolo/models.h"

using namespace kolo::models;
using Catch::Matchers::Contains;

namespace {

void require_invalid(const std::function<void()>& call, const std::string& words) {
  try {
    call();
    FAIL("accepted; expected an error saying: " << words);
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    CHECK_THAT(e.what(), Contains(words));
  }
}

}  // namespace

TEST_CASE("pooling and convolution refuse windows that fit no input and impossible settings", "[layer-checks]") {
  require_invalid([] { MaxPool2d({.kernel = 0, .stride = 1, .padding = 0}); }, "kernel >= 1");
  require_invalid([] { MaxPool2d({.kernel = 2, .stride = 0, .padding = 0}); }, "stride >= 1");
  require_invalid([] { MaxPool2d({.kernel = 2, .stride = 2, .padding = 2}); }, "padding from 0 to 1");
  require_invalid([] { Conv2d({.in_channels = 1, .out_channels = 1, .kernel = 3, .stride = 0}); }, "stride >= 1");
  require_invalid([] { Conv2d({.in_channels = 1, .out_channels = 1, .kernel = 3, .padding = -1}); }, "padding from 0");
  require_invalid([] { Dropout(1.5); }, "from 0 to 1");
  require_invalid([] { Dropout(-0.5); }, "from 0 to 1");

  MaxPool2d pool({.kernel = 2, .stride = 2, .padding = 0});
  require_invalid([&] { pool.forward(Tensor::zeros({1, 1, 1, 16})); }, "smaller than the kernel");
  Conv2d conv({.in_channels = 1, .out_channels = 1, .kernel = 3, .stride = 2});
  require_invalid([&] { conv.forward(Tensor::zeros({1, 1, 2, 2})); }, "smaller than the kernel");
  // Padding makes the window fit: one output, as in PyTorch.
  Conv2d padded({.in_channels = 1, .out_channels = 1, .kernel = 3, .stride = 2, .padding = 1});
  CHECK(padded.forward(Tensor::zeros({1, 1, 2, 2})).shape() == std::vector<int64_t>{1, 1, 1, 1});
}

TEST_CASE("backward refuses a gradient of another shape, and a backward with no training forward", "[layer-checks]") {
  const Tensor x = Tensor::zeros({2, 1, 4, 4});
  Conv2d conv({.in_channels = 1, .out_channels = 2, .kernel = 3, .padding = 1});
  Linear linear(3, 2);
  BatchNorm2d bn({.channels = 1});
  ReLU relu;
  MaxPool2d pool({.kernel = 2, .stride = 2});
  GlobalAvgPool gap;

  // Without a forward.
  for (Module* m : std::vector<Module*>{&conv, &linear, &bn, &relu, &pool, &gap})
    require_invalid([&] { m->backward(Tensor::zeros({2, 2})); }, "without a forward()");

  // The wrong gradient after a forward.
  conv.forward(x);
  require_invalid([&] { conv.backward(Tensor::zeros({2, 2, 4, 3})); }, "does not match the output [2, 2, 4, 4]");
  linear.forward(Tensor::zeros({2, 3}));
  require_invalid([&] { linear.backward(Tensor::zeros({8, 8})); }, "does not match the output [2, 2]");
  bn.forward(x);
  require_invalid([&] { bn.backward(Tensor::zeros({2, 1, 4, 2})); }, "does not match the output [2, 1, 4, 4]");
  relu.forward(Tensor::zeros({4}));
  require_invalid([&] { relu.backward(Tensor::zeros({5})); }, "does not match the output [4]");
  pool.forward(x);
  require_invalid([&] { pool.backward(Tensor::zeros({2, 1, 4, 4})); }, "does not match the output [2, 1, 2, 2]");
  gap.forward(x);
  require_invalid([&] { gap.backward(Tensor::zeros({2, 2})); }, "does not match the output [2, 1]");

  // An eval-mode forward keeps nothing: backward after it is refused, not run on stale input.
  bn.forward(x);
  bn.eval();
  bn.forward(x);
  require_invalid([&] { bn.backward(Tensor::zeros({2, 1, 4, 4})); }, "without a forward()");
}

TEST_CASE("an optimizer refuses a null parameter", "[layer-checks]") {
  require_invalid([] { SGD({nullptr}, SgdOptions{.lr = 0.1}); }, "parameter 0 is null");
}
