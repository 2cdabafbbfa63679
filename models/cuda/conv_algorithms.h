// Which cuDNN algorithm each convolution uses: chosen once per shape, data type, layout
// and pass by measuring the candidates (as torch.backends.cudnn.benchmark = True), then
// remembered for the life of the process. For float16/bfloat16, whose operands are cast
// into temporary buffers anyway, also which layout to cast them into (channels-last where
// cuDNN is faster, the transposition included). Plain C++: the measuring is a Finder
// function (cudnnFind*AlgorithmEx in models/cuda/conv_cudnn.cc, a fake in the tests) and a
// CastTimer (CUDA events around the casts there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kolo/kolo.h"
#include "kolo/models/gpu.h"

namespace kolo::models::cuda {

enum class ConvPass : int { Forward, BackwardData, BackwardFilter };
enum class Layout : int { NCHW, NHWC };

struct ConvKey {
  ConvPass pass = ConvPass::Forward;
  int64_t batch = 0, in_channels = 0, height = 0, width = 0;
  int64_t out_channels = 0, kernel = 0, stride = 1, padding = 0;
  DType dtype = DType::Float32;  // of x, w and y (accumulation is always float32)
  Layout layout = Layout::NCHW;
  bool tf32 = false;  // float32 products may use TF32 tensor cores (a different search)
  bool operator==(const ConvKey&) const = default;
};
// "forward float16 NHWC x[64,3,224,224] w[64,3,7,7] s2 p3" (+ " tf32")
std::string to_string(const ConvKey& key);

struct ConvKeyHash {
  std::size_t operator()(const ConvKey& k) const;
};

// One measured algorithm, as cudnnConvolution*AlgoPerf_t reports it.
struct AlgoCandidate {
  int algorithm = 0;           // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  bool ok = false;             // status == CUDNN_STATUS_SUCCESS
  float time_ms = 0;
  std::size_t workspace_bytes = 0;
  int math_type = 0;           // cudnnMathType_t the time was measured with
};

struct ConvChoice {
  int algorithm = 0;
  std::size_t workspace_bytes = 0;
  int math_type = 0;
  float time_ms = 0;  // as measured
};

struct LayoutChoice {
  Layout layout = Layout::NCHW;
  ConvChoice choice;  // the fastest algorithm in that layout
};

class ConvAlgorithmCache {
 public:
  // Measures the candidates for a key, allowed at most workspace_limit bytes of workspace.
  using Finder = std::function<std::vector<AlgoCandidate>(const ConvKey& key, std::size_t workspace_limit)>;

  explicit ConvAlgorithmCache(std::size_t workspace_limit) : workspace_limit_(workspace_limit) {}

  // The remembered choice for `key`; on the first request, the fastest candidate of
  // find(key) that succeeded within the workspace limit. Throws kolo::Error naming the
  // convolution when there is none. Concurrent first requests for one key search once.
  ConvChoice choose(const ConvKey& key, const Finder& find);

  // The time (ms) of preparing a convolution's operands and results in `layout`: the casts
  // to and from float16/bfloat16, transposing for NHWC.
  using CastTimer = std::function<float(Layout layout)>;
  // For a convolution whose operands are cast anyway: the layout to cast them into, and its
  // algorithm. On the first request for a key (its layout field is ignored), each layout's
  // fastest algorithm (choose() with that layout) plus cast_ms(layout); the smaller total
  // wins (pick_layout). A layout with no algorithm, or whose search throws, loses; when
  // neither has one, the error is NCHW's. Later requests measure nothing. `mode` Never or
  // Always takes that layout without measuring the other (choose() with it).
  LayoutChoice choose_layout(const ConvKey& key, const Finder& find, const CastTimer& cast_ms,
                             ChannelsLast mode = ChannelsLast::Auto);

  std::size_t workspace_limit() const { return workspace_limit_; }
  std::size_t size() const;
  int64_t searches() const;  // how many times a finder ran
  int64_t layout_searches() const;  // how many layout choices were measured

 private:
  std::size_t workspace_limit_;
  mutable std::mutex mutex_;
  std::unordered_map<ConvKey, ConvChoice, ConvKeyHash> choices_;
  int64_t searches_ = 0;
  // Layout choices, by their key with layout NCHW. Measuring holds layout_mutex_ (not
  // mutex_, which choose() takes): one measurement at a time, as for the searches.
  std::unordered_map<ConvKey, Layout, ConvKeyHash> layouts_;
  int64_t layout_searches_ = 0;
  std::mutex layout_mutex_;
  std::optional<LayoutChoice> known_layout(const ConvKey& nchw, const Finder& find);
};

// The fastest successful candidate within the limit, or false.
bool pick_fastest(const std::vector<AlgoCandidate>& candidates, std::size_t workspace_limit, ConvChoice& choice);

// Given each layout's total time (convolution + casts): NHWC when it is strictly faster,
// else NCHW (kolo's storage, which wins ties). A total that is not a number >= 0 loses.
Layout pick_layout(float nchw_total_ms, float nhwc_total_ms);

}  // namespace kolo::models::cuda
