#include "models/cuda/conv_algorithms.h"

#include <cstdio>
#include <exception>

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
  choice = {best->algorithm, best->workspace_bytes, best->math_type, best->time_ms};
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
    throw Error(StatusCode::Unsupported, "kolo: cuDNN has no algorithm for convolution " + to_string(key) +
                                             " within a workspace of " + std::to_string(workspace_limit_ >> 20) +
                                             " MiB");
  choices_.emplace(key, choice);
  return choice;
}

Layout pick_layout(float nchw_total_ms, float nhwc_total_ms) {
  const bool nchw_ok = nchw_total_ms >= 0, nhwc_ok = nhwc_total_ms >= 0;  // false for NaN
  return nhwc_ok && (!nchw_ok || nhwc_total_ms < nchw_total_ms) ? Layout::NHWC : Layout::NCHW;
}

std::optional<LayoutChoice> ConvAlgorithmCache::known_layout(const ConvKey& nchw, const Finder& find) {
  Layout layout;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = layouts_.find(nchw);
    if (it == layouts_.end()) return std::nullopt;
    layout = it->second;
  }
  ConvKey key = nchw;
  key.layout = layout;
  return LayoutChoice{layout, choose(key, find)};  // remembered when the layout was chosen
}

LayoutChoice ConvAlgorithmCache::choose_layout(const ConvKey& key, const Finder& find, const CastTimer& cast_ms,
                                               ChannelsLast mode) {
  ConvKey nchw = key, nhwc = key;
  nchw.layout = Layout::NCHW;
  nhwc.layout = Layout::NHWC;
  if (mode == ChannelsLast::Never) return {Layout::NCHW, choose(nchw, find)};
  if (mode == ChannelsLast::Always) return {Layout::NHWC, choose(nhwc, find)};
  if (std::optional<LayoutChoice> known = known_layout(nchw, find)) return *known;
  std::lock_guard<std::mutex> measuring(layout_mutex_);
  if (std::optional<LayoutChoice> known = known_layout(nchw, find)) return *known;  // measured meanwhile

  std::optional<ConvChoice> in_nchw, in_nhwc;
  std::exception_ptr nchw_error;
  try {
    in_nchw = choose(nchw, find);
  } catch (const Error&) {
    nchw_error = std::current_exception();
  }
  try {
    in_nhwc = choose(nhwc, find);
  } catch (const Error&) {
    // cuDNN supports fewer shapes in NHWC (or none in this version): NCHW it is.
  }
  if (!in_nchw && !in_nhwc) std::rethrow_exception(nchw_error);
  Layout layout = in_nchw ? Layout::NCHW : Layout::NHWC;
  if (in_nchw && in_nhwc) {
    const float nchw_total = in_nchw->time_ms + cast_ms(Layout::NCHW);  // in this order: the casts
    const float nhwc_total = in_nhwc->time_ms + cast_ms(Layout::NHWC);  // are timed one after the other
    layout = pick_layout(nchw_total, nhwc_total);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    layouts_.emplace(nchw, layout);
    ++layout_searches_;
  }
  return {layout, layout == Layout::NCHW ? *in_nchw : *in_nhwc};
}

std::size_t ConvAlgorithmCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return choices_.size();
}

int64_t ConvAlgorithmCache::searches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return searches_;
}

int64_t ConvAlgorithmCache::layout_searches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return layout_searches_;
}

}  // namespace kolo::models::cuda
