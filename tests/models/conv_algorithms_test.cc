// The cuDNN convolution algorithm cache (models/cuda/conv_algorithms.h) with a fake finder:
// runs without a GPU.
#include <catch2/catch.hpp>

#include "models/cuda/conv_algorithms.h"

using namespace kolo::models::cuda;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

ConvKey resnet_stem() {
  ConvKey k;
  k.batch = 64;
  k.in_channels = 3;
  k.height = k.width = 224;
  k.out_channels = 64;
  k.kernel = 7;
  k.stride = 2;
  k.padding = 3;
  return k;
}

// Records what it was asked; answers with fixed candidates.
struct FakeFinder {
  std::vector<AlgoCandidate> candidates;
  std::vector<ConvKey> asked;
  std::size_t limit_seen = 0;
  ConvAlgorithmCache::Finder function() {
    return [this](const ConvKey& key, std::size_t limit) {
      asked.push_back(key);
      limit_seen = limit;
      return candidates;
    };
  }
};

}  // namespace

TEST_CASE("algorithm cache picks the fastest successful candidate within the workspace limit", "[conv-algorithms]") {
  FakeFinder finder;
  finder.candidates = {
      {.algorithm = 6, .ok = true, .time_ms = 0.5f, .workspace_bytes = 900 * MiB},   // fastest, too big
      {.algorithm = 7, .ok = false, .time_ms = 0.6f, .workspace_bytes = 0},          // failed
      {.algorithm = 1, .ok = true, .time_ms = 0.9f, .workspace_bytes = 10 * MiB, .math_type = 1},
      {.algorithm = 2, .ok = true, .time_ms = 1.5f, .workspace_bytes = 0},
  };
  ConvAlgorithmCache cache(256 * MiB);
  const ConvChoice choice = cache.choose(resnet_stem(), finder.function());
  CHECK(choice.algorithm == 1);
  CHECK(choice.workspace_bytes == 10 * MiB);
  CHECK(choice.math_type == 1);
  CHECK(finder.limit_seen == 256 * MiB);
}

TEST_CASE("algorithm cache searches once per key and remembers", "[conv-algorithms]") {
  FakeFinder finder;
  finder.candidates = {{.algorithm = 3, .ok = true, .time_ms = 1.0f}};
  ConvAlgorithmCache cache(64 * MiB);
  const ConvKey key = resnet_stem();
  for (int step = 0; step < 5; ++step) CHECK(cache.choose(key, finder.function()).algorithm == 3);
  CHECK(finder.asked.size() == 1);
  CHECK(cache.searches() == 1);

  // Every field of the key makes a different convolution.
  std::vector<ConvKey> others(9, key);
  others[0].pass = ConvPass::BackwardData;
  others[1].pass = ConvPass::BackwardFilter;
  others[2].dtype = kolo::DType::Float16;
  others[3].layout = Layout::NHWC;
  others[4].batch = 128;
  others[5].stride = 1;
  others[6].padding = 0;
  others[7].out_channels = 128;
  others[8].tf32 = true;
  for (const ConvKey& k : others) cache.choose(k, finder.function());
  CHECK(cache.searches() == 10);
  CHECK(cache.size() == 10);
  for (const ConvKey& k : others) cache.choose(k, finder.function());
  CHECK(cache.searches() == 10);
  CHECK(finder.asked[3].dtype == kolo::DType::Float16);
}

TEST_CASE("algorithm cache fails clearly when no candidate fits and searches again next time", "[conv-algorithms]") {
  FakeFinder finder;
  finder.candidates = {{.algorithm = 0, .ok = true, .time_ms = 1.0f, .workspace_bytes = 2 * MiB},
                       {.algorithm = 1, .ok = false, .time_ms = 0.1f}};
  ConvAlgorithmCache cache(1 * MiB);
  ConvKey key = resnet_stem();
  key.dtype = kolo::DType::Float16;
  key.layout = Layout::NHWC;
  try {
    cache.choose(key, finder.function());
    FAIL("no error");
  } catch (const kolo::Error& e) {
    CHECK(std::string(e.what()) ==
          "kolo: cuDNN has no algorithm for convolution forward float16 NHWC x[64,3,224,224] w[64,3,7,7] s2 p3 "
          "within a workspace of 1 MiB");
  }
  CHECK(cache.size() == 0);
  finder.candidates[0].workspace_bytes = 0;
  CHECK(cache.choose(key, finder.function()).algorithm == 0);
  CHECK(finder.asked.size() == 2);
}

TEST_CASE("pick_fastest ignores failed, negative-time and oversized candidates", "[conv-algorithms]") {
  ConvChoice choice;
  CHECK_FALSE(pick_fastest({}, 0, choice));
  CHECK_FALSE(pick_fastest({{.algorithm = 1, .ok = true, .time_ms = -1.0f}}, 0, choice));
  CHECK(pick_fastest({{.algorithm = 4, .ok = true, .time_ms = 2.0f}, {.algorithm = 5, .ok = true, .time_ms = 2.0f}},
                     0, choice));
  CHECK(choice.algorithm == 4);  // a tie keeps cuDNN's order
}
