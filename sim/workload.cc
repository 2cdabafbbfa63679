// sim/workload.cc: model profiles and the step they make.
#include "sim/workload.h"

#include <algorithm>
#include <stdexcept>

#include "sim/json_fields.h"

namespace kolo::sim {

// Backward runs the layers in reverse; a layer's gradients are ready once its own backward
// is done, which costs (as its forward does) in proportion to its forward FLOPs.
namespace {

// "gradients": [{"name", "elements", "ready_fraction"}...] in backward order, and the
// measured "compute_s_per_image".
void read_measured(const FieldReader& top, const std::string& origin, ModelProfile& profile) {
  profile.measured_s_per_image = top.number("compute_s_per_image", false);
  const nlohmann::json& list = top.array("gradients");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const FieldReader g(list[i], origin, "gradients[" + std::to_string(i) + "].");
    const double fraction = g.number("ready_fraction", false);
    if (fraction > 1) g.fail("ready_fraction", "must be at most 1, got " + list[i]["ready_fraction"].dump());
    if (!profile.gradients.empty() && fraction < profile.gradients.back().ready_fraction)
      g.fail("ready_fraction", "must not be below the previous gradient's (backward order)");
    profile.gradients.push_back({g.text("name"), g.count("elements"), fraction});
    profile.parameters += profile.gradients.back().elements;
  }
}

}  // namespace

ModelProfile parse_profile(const nlohmann::json& document, const std::string& origin) {
  const FieldReader top(document, origin, "");
  ModelProfile profile;
  profile.model = top.text("model");
  profile.source = top.text("source");
  if (document.contains("gradients")) {
    read_measured(top, origin, profile);
    return profile;
  }
  struct Layer {
    double flops = 0;
    std::vector<Gradient> params;
  };
  std::vector<Layer> layers;
  const nlohmann::json& list = top.array("layers");
  double total_flops = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const FieldReader layer(list[i], origin, "layers[" + std::to_string(i) + "].");
    Layer parsed;
    parsed.flops = layer.number("forward_flops", true);
    const nlohmann::json& params = layer.array("params");
    for (std::size_t k = 0; k < params.size(); ++k) {
      const FieldReader param(params[k], origin, "layers[" + std::to_string(i) + "].params[" + std::to_string(k) + "].");
      parsed.params.push_back({param.text("name"), param.count("elements"), 0});
      profile.parameters += parsed.params.back().elements;
    }
    total_flops += parsed.flops;
    layers.push_back(std::move(parsed));
  }
  if (total_flops <= 0) top.fail("layers", "must have some forward_flops");
  profile.forward_flops_per_image = total_flops;
  double done = 0;
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
    done += layer->flops;
    for (Gradient& g : layer->params) {
      g.ready_fraction = std::clamp(done / total_flops, 1e-9, 1.0);
      profile.gradients.push_back(std::move(g));
    }
  }
  return profile;
}

ModelProfile load_profile(const std::filesystem::path& file) {
  return parse_profile(read_json_file(file, "model profile"), file.string());
}

int64_t Workload::steps_per_epoch(int ranks) const {
  return std::max<int64_t>(1, images_per_epoch / (int64_t{batch_per_rank} * ranks));
}

double compute_s_per_image_from_flops(const ModelProfile& profile, double device_flops, double utilization) {
  if (profile.forward_flops_per_image <= 0)
    throw std::invalid_argument("the profile of " + profile.model +
                                " has no FLOPs: give its measured time per image (--one-device-images-per-s)");
  return 3 * profile.forward_flops_per_image / (device_flops * utilization);
}

}  // namespace kolo::sim
