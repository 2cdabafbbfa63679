// Every net's exact parameter count and naming, against the reference frameworks.
#include <catch2/catch.hpp>

#include "kolo/models.h"

using namespace kolo::models;

namespace {
// Keras counts batch-norm moving statistics as (non-trainable) parameters.
int64_t keras_count(Net& net) {
  int64_t n = net.parameter_count();
  for (auto& [name, t] : net.buffers())
    if (name.find("num_batches_tracked") == std::string::npos) n += t->numel();
  return n;
}
}  // namespace

TEST_CASE("nets have the reference frameworks' exact parameter counts", "[nets]") {
  CHECK(mnist_convnet()->parameter_count() == 62346);
  // torchvision (trainable parameters, 1000 classes)
  CHECK(resnet(18)->parameter_count() == 11689512);
  CHECK(resnet(34)->parameter_count() == 21797672);
  CHECK(resnet(50)->parameter_count() == 25557032);
  CHECK(resnet(101)->parameter_count() == 44549160);
  CHECK(resnet(152)->parameter_count() == 60192808);
  // Keras ResNetV2 (model.count_params(), which includes the moving statistics)
  CHECK(keras_count(*resnet_v2(50)) == 25613800);
  CHECK(keras_count(*resnet_v2(101)) == 44675560);
  CHECK(keras_count(*resnet_v2(152)) == 60380648);
  CHECK(resnet(50)->parameters().size() == 161);
  CHECK(resnet_v2(50)->parameters().size() == 174);
}

TEST_CASE("ResNet parameters carry torchvision's names in its order", "[nets]") {
  auto net = resnet(50, 10);
  const auto params = net->parameters();
  CHECK(params.front()->name == "conv1.weight");
  CHECK(params[3]->name == "layer1.0.conv1.weight");
  CHECK(net->find_parameter("layer1.0.downsample.0.weight") != nullptr);
  CHECK(net->find_parameter("layer4.2.bn3.bias") != nullptr);
  CHECK(net->find_buffer("layer1.0.bn1.running_mean") != nullptr);
  CHECK(params.back()->name == "fc.bias");
  CHECK(params.back()->value.numel() == 10);
  auto v2 = resnet_v2(50, 10);
  CHECK(v2->parameters().front()->name == "conv1_conv.weight");
  CHECK(v2->find_parameter("conv2_block1_preact_bn.weight") != nullptr);
  CHECK(v2->find_parameter("conv5_block3_3_conv.bias") != nullptr);
  CHECK(v2->parameters().back()->name == "predictions.bias");
}

TEST_CASE("nets accept any class count and input size they admit", "[nets]") {
  for (const char* name : {"resnet18", "resnet50v2"}) {
    auto net = make_net(name, 7);
    initialize(*net, 3);
    net->eval();
    const Tensor out = net->forward(Tensor::full({2, 3, 40, 48}, 0.5f));
    CHECK(out.shape() == std::vector<int64_t>{2, 7});
  }
  CHECK_THROWS_AS(make_net("resnet42", 10), kolo::Error);
  CHECK_THROWS_AS(mnist_convnet()->forward(Tensor({1, 3, 28, 28})), kolo::Error);
}

TEST_CASE("initialisation is seeded and reproducible", "[nets]") {
  auto a = resnet(18, 10), b = resnet(18, 10), c = resnet(18, 10);
  initialize(*a, 42);
  initialize(*b, 42);
  initialize(*c, 43);
  const Tensor& wa = a->find_parameter("layer2.0.conv1.weight")->value;
  const Tensor& wb = b->find_parameter("layer2.0.conv1.weight")->value;
  const Tensor& wc = c->find_parameter("layer2.0.conv1.weight")->value;
  bool same = true, differs = false;
  double sum_sq = 0;
  for (int64_t i = 0; i < wa.numel(); ++i) {
    same = same && wa[i] == wb[i];
    differs = differs || wa[i] != wc[i];
    sum_sq += double(wa[i]) * wa[i];
  }
  CHECK(same);
  CHECK(differs);
  // torchvision: Kaiming normal, fan_out mode: std = sqrt(2 / (128 * 3 * 3)).
  CHECK(std::sqrt(sum_sq / double(wa.numel())) == Approx(std::sqrt(2.0 / (128 * 9))).epsilon(0.03));
  CHECK(a->find_parameter("layer2.0.bn1.weight")->value[0] == 1.0f);
}

TEST_CASE("an empty batch goes through a net and back without computing anything", "[nets]") {
  // The convolution kernels split work by the batch: 0 once divided by zero.
  auto mnist = mnist_convnet(10);
  initialize(*mnist, 1);
  const Tensor out = mnist->forward(Tensor({0, 1, 28, 28}));
  CHECK(out.shape() == std::vector<int64_t>{0, 10});
  for (Parameter* p : mnist->parameters()) p->grad.fill(0.25f);
  mnist->backward(Tensor({0, 10}));
  for (Parameter* p : mnist->parameters()) CHECK(p->grad[0] == 0.25f);  // nothing added
  auto resnet = make_net("resnet18", 10);
  initialize(*resnet, 1);
  resnet->eval();
  CHECK(resnet->forward(Tensor({0, 3, 32, 32})).shape() == std::vector<int64_t>{0, 10});
  resnet->train();  // batch statistics of no values: an error, as in PyTorch
  CHECK_THROWS_AS(resnet->forward(Tensor({0, 3, 32, 32})), kolo::Error);
}
