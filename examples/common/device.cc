#include "common/device.h"

namespace kolo::examples {
namespace {

[[noreturn]] void bad_device(const std::string& flag, const std::string& why) {
  throw kolo::Error(kolo::StatusCode::InvalidArgument, "--device " + flag + ": " + why);
}

}  // namespace

Device training_device(const std::string& flag) {
  const int gpus = models::cuda_device_count();
  if (flag == "cpu" || (flag == "auto" && gpus == 0)) return Device::cpu();
  if (flag != "auto" && flag != "cuda" && flag.rfind("cuda:", 0) != 0)
    bad_device(flag, "expected auto, cpu, cuda or cuda:N");
  if (gpus == 0)
    bad_device(flag, "no CUDA device is visible" +
                         std::string(kolo::build_info().cuda ? "" : " (this kolo was built without CUDA)") +
                         "; use --device cpu");
  if (flag == "auto" || flag == "cuda") return Device::cuda(kolo::local_rank() % gpus);
  int index = -1;
  try {
    std::size_t used = 0;
    index = std::stoi(flag.substr(5), &used);
    if (used != flag.size() - 5) index = -1;
  } catch (const std::exception&) {
  }
  if (index < 0 || index >= gpus)
    bad_device(flag, "no such device: " + std::to_string(gpus) + " CUDA device" + (gpus == 1 ? "" : "s") +
                         " visible (cuda:0" + (gpus > 1 ? " to cuda:" + std::to_string(gpus - 1) : "") + ")");
  return Device::cuda(index);
}

Device device_of(models::Net& net) {
  const std::vector<models::Parameter*> params = net.parameters();
  return params.empty() ? Device::cpu() : params.front()->value.device();
}

models::Tensor images_on(const models::Batch& batch, Device device) {
  return models::Tensor::from(batch.shape, batch.images).to(device);
}

}  // namespace kolo::examples
