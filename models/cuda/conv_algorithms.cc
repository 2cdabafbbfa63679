#include "models/cuda/conv_algorithms.h"

#include <cstdio>

namespace kolo::models::cuda {

std::string to_string(const ConvKey& k) {
  static const char* const passes[] = {"forward", "backward-data", "backward-filter"};
  char text[200];
  std::snprintf(text, sizeof text, "%s %s %s x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] s%lld p%lld%s",
                passes[static_cast<int>(k.pass)], dtype_name(k.dtype), k.layout == Layout::NCHW ? "NCHW" : "NHWC",
                static_cast<long long>(k.batch), static_cast<long long>(k.in_channels),
                static_cast<long long>(k.height), static_cast<long long>(k.width),
                static_cast<long long>(k.out_channels), static_cast<long long>(k.in_channels),
                static_cast<long long>(k.kernel), static_cast<long long>(k.kernel), static_cast<long long>(k.stride),
                static_cast<long long>(k.padding), k.tf32 ? " tf32" : "");
  return text;
}

std::size_t ConvKeyHash::operator()(const ConvKey& k) const {
  std::size_t h = 1469598103934665603ull;
  for (int64_t v : {int64_t(k.pass), k.batch, k.in_channels, k.height, k.width, k.out_channels, k.kernel, k.stride,
                    k.padding, int64_t(k.dtype), int64_t(k.layout), int64_t(k.tf32)})
    h = (h ^ static_cast<std::size_t>(v)) * 1099511628211ull;
  return h;
}

bool pick_fastest(const std::vector<AlgoCandidate>& candidates, std::size_t workspace_limit, ConvChoice& choice) {
  const AlgoCandidate* best = nullptr;
  for (const AlgoCandidate& c : candidates) {
    if (!c.ok || c.workspace_bytes > workspace_limit || !(c.time_ms >= 0)) continue;
    if (best == nullptr || c.time_ms < best->time_ms) best = &c;  // ties: cuDNN's order
  }
  if (best == nullptr) return false;
  choice = {best->algorithm, best->workspace_bytes, best->math_type};
  return true;
}

ConvChoice ConvAlgorithmCache::choose(const ConvKey& key, const Finder& find) {
  // The search runs under the lock: cudnnFind times the GPU, and two searches at once would
  // disturb each other's timings (and it happens once per shape).
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = choices_.find(key);
  if (it != choices_.end()) return it->second;
  ++searches_;
  ConvChoice choice;
  if (!pick_fastest(find(key, workspace_limit_), workspace_limit_, choice))
    throw Error(StatusCode::InvalidArgument, "kolo: cuDNN has no algorithm for convolution " + to_string(key) +
                                                 " within a workspace of " + std::to_string(workspace_limit_ >> 20) +
                                                 " MiB");
  choices_.emplace(key, choice);
  return choice;
}

std::size_t ConvAlgorithmCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return choices_.size();
}

int64_t ConvAlgorithmCache::searches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return searches_;
}

}  // namespace kolo::models::cuda
