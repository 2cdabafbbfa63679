// Tensor devices on a machine without a GPU (the GPU side is tests/models/gpu/): CPU
// tensors are what they were, and asking for a GPU that is not there fails clearly.
#include <catch2/catch.hpp>

#include "kolo/models.h"

using namespace kolo::models;

TEST_CASE("CPU tensors stay where they are and report the CPU", "[device]") {
  Tensor t = Tensor::full({2, 3}, 1.5f);
  CHECK(t.device() == kolo::Device::cpu());
  CHECK_FALSE(t.is_cuda());
  CHECK(t.to(kolo::Device::cpu()).data() == t.data());  // no copy
  CHECK(t.cpu().data() == t.data());
  CHECK(t.view().device == kolo::Device::cpu());
  CHECK(t.clone().device() == kolo::Device::cpu());
  auto net = mnist_convnet();
  float* before = net->parameters().front()->value.data();
  net->to(kolo::Device::cpu());
  CHECK(net->parameters().front()->value.data() == before);
  synchronize(kolo::Device::cpu());  // nothing to wait for
}

TEST_CASE("GPU functions reject the CPU device by name", "[device]") {
  CHECK_THROWS_WITH(compute_stream(kolo::Device::cpu()), Catch::Contains("needs a CUDA device, got cpu"));
  CHECK_THROWS_AS(gpu_memory_stats(kolo::Device::cpu()), kolo::Error);
  CHECK_THROWS_AS(set_compute_precision(kolo::Device::cpu(), kolo::DType::Float16), kolo::Error);
  CHECK_THROWS_AS(set_allow_tf32(kolo::Device::cpu(), false), kolo::Error);
  CHECK_THROWS_WITH(set_channels_last(kolo::Device::cpu(), ChannelsLast::Always),
                    Catch::Contains("needs a CUDA device, got cpu"));
}

TEST_CASE("without a GPU, placing a tensor on one fails with the reason", "[device]") {
  if (cuda_device_count() > 0) return;  // the GPU tests cover machines with one
  try {
    Tensor({4}, kolo::Device::cuda(0));
    FAIL("no error");
  } catch (const kolo::Error& e) {
    const std::string what = e.what();
    // A build without CUDA says so (Unsupported); a build with CUDA on a machine without a
    // device says that (InvalidArgument: the caller asked for a device that is not there).
    if (what.find("no CUDA support") != std::string::npos) CHECK(e.code() == kolo::StatusCode::Unsupported);
    else CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    CHECK((what.find("no CUDA support") != std::string::npos || what.find("no CUDA device 0") != std::string::npos));
  }
  CHECK_THROWS_AS(Tensor::full({2}, 1.0f).to(kolo::Device::cuda(0)), kolo::Error);
  auto net = mnist_convnet();
  CHECK_THROWS_AS(net->to(kolo::Device::cuda(0)), kolo::Error);
}
