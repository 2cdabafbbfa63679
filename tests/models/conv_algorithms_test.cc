// The cuDNN convolution algorithm cache (models/cuda/conv_algorithms.h) with a fake finder:
// runs without a GPU.
#include <catch2/catch.hpp>

#include <cmath>

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
    CHECK(e.code() == kolo::StatusCode::Unsupported);
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

// ---- Channels-last: the layout of float16/bfloat16 convolutions ---------------------------

namespace {

// Answers per layout; records the keys asked and the layouts whose casts were timed.
struct LayoutFinder {
  std::vector<AlgoCandidate> nchw, nhwc;
  bool nhwc_throws = false;
  float nchw_cast_ms = 0, nhwc_cast_ms = 0;
  std::vector<ConvKey> asked;
  std::vector<Layout> timed;
  ConvAlgorithmCache::Finder function() {
    return [this](const ConvKey& key, std::size_t) {
      asked.push_back(key);
      if (key.layout == Layout::NHWC && nhwc_throws)
        throw kolo::Error(kolo::StatusCode::Unsupported, "cuDNN: CUDNN_STATUS_NOT_SUPPORTED");  // as check_cudnn
      return key.layout == Layout::NCHW ? nchw : nhwc;
    };
  }
  ConvAlgorithmCache::CastTimer timer() {
    return [this](Layout layout) {
      timed.push_back(layout);
      return layout == Layout::NCHW ? nchw_cast_ms : nhwc_cast_ms;
    };
  }
};

ConvKey half_conv() {
  ConvKey k = resnet_stem();
  k.in_channels = 64;  // a ResNet body convolution: NHWC's home ground
  k.height = k.width = 56;
  k.kernel = 3;
  k.stride = 1;
  k.padding = 1;
  k.dtype = kolo::DType::Float16;
  return k;
}

}  // namespace

TEST_CASE("layout choice takes NHWC when its convolution plus casts is faster, once per key", "[conv-algorithms]") {
  LayoutFinder finder;
  finder.nchw = {{.algorithm = 1, .ok = true, .time_ms = 2.0f}};
  finder.nhwc = {{.algorithm = 6, .ok = true, .time_ms = 1.0f, .workspace_bytes = 4 * MiB, .math_type = 1}};
  finder.nchw_cast_ms = 0.2f;
  finder.nhwc_cast_ms = 0.5f;  // the transposition costs more than the plain cast
  ConvAlgorithmCache cache(64 * MiB);
  const LayoutChoice first = cache.choose_layout(half_conv(), finder.function(), finder.timer());
  CHECK(first.layout == Layout::NHWC);  // 1.5 ms against 2.2 ms
  CHECK(first.choice.algorithm == 6);
  CHECK(first.choice.workspace_bytes == 4 * MiB);
  CHECK(first.choice.math_type == 1);
  CHECK(first.choice.time_ms == 1.0f);
  REQUIRE(finder.asked.size() == 2);  // one search per layout
  CHECK(finder.asked[0].layout == Layout::NCHW);
  CHECK(finder.asked[1].layout == Layout::NHWC);
  CHECK(finder.timed == std::vector<Layout>{Layout::NCHW, Layout::NHWC});

  // Remembered: no search, no timing; the key's own layout field does not matter.
  ConvKey again = half_conv();
  again.layout = Layout::NHWC;
  for (const ConvKey& k : {half_conv(), again}) {
    const LayoutChoice later = cache.choose_layout(k, finder.function(), finder.timer());
    CHECK(later.layout == Layout::NHWC);
    CHECK(later.choice.algorithm == 6);
  }
  CHECK(finder.asked.size() == 2);
  CHECK(finder.timed.size() == 2);
  CHECK(cache.searches() == 2);
  CHECK(cache.layout_searches() == 1);

  // Another pass of the same convolution is another choice.
  ConvKey filter = half_conv();
  filter.pass = ConvPass::BackwardFilter;
  cache.choose_layout(filter, finder.function(), finder.timer());
  CHECK(cache.layout_searches() == 2);
  CHECK(finder.asked.size() == 4);
}

TEST_CASE("layout choice counts the transposition: a slightly faster NHWC convolution can lose", "[conv-algorithms]") {
  LayoutFinder finder;
  finder.nchw = {{.algorithm = 1, .ok = true, .time_ms = 1.0f}};
  finder.nhwc = {{.algorithm = 6, .ok = true, .time_ms = 0.8f}};
  finder.nchw_cast_ms = 0.1f;
  finder.nhwc_cast_ms = 0.5f;  // 1.3 ms against 1.1 ms
  ConvAlgorithmCache cache(64 * MiB);
  const LayoutChoice c = cache.choose_layout(half_conv(), finder.function(), finder.timer());
  CHECK(c.layout == Layout::NCHW);
  CHECK(c.choice.algorithm == 1);

  // A tie keeps kolo's own layout.
  LayoutFinder tie;
  tie.nchw = {{.algorithm = 1, .ok = true, .time_ms = 1.0f}};
  tie.nhwc = {{.algorithm = 6, .ok = true, .time_ms = 0.5f}};
  tie.nchw_cast_ms = 0.25f;
  tie.nhwc_cast_ms = 0.75f;
  ConvAlgorithmCache other(64 * MiB);
  CHECK(other.choose_layout(half_conv(), tie.function(), tie.timer()).layout == Layout::NCHW);
}

TEST_CASE("layout choice falls back to the layout cuDNN has an algorithm for", "[conv-algorithms]") {
  SECTION("NHWC has none within the limit") {
    LayoutFinder finder;
    finder.nchw = {{.algorithm = 1, .ok = true, .time_ms = 3.0f}};
    finder.nhwc = {{.algorithm = 6, .ok = true, .time_ms = 0.1f, .workspace_bytes = 900 * MiB},
                   {.algorithm = 7, .ok = false, .time_ms = 0.1f}};
    ConvAlgorithmCache cache(64 * MiB);
    const LayoutChoice c = cache.choose_layout(half_conv(), finder.function(), finder.timer());
    CHECK(c.layout == Layout::NCHW);
    CHECK(c.choice.algorithm == 1);
    CHECK(finder.timed.empty());  // nothing to compare: no casts timed
    cache.choose_layout(half_conv(), finder.function(), finder.timer());
    CHECK(finder.asked.size() == 2);  // the failed NHWC search is not repeated
  }
  SECTION("NHWC's search throws (a shape cuDNN does not support in NHWC)") {
    LayoutFinder finder;
    finder.nchw = {{.algorithm = 1, .ok = true, .time_ms = 3.0f}};
    finder.nhwc_throws = true;
    ConvAlgorithmCache cache(64 * MiB);
    CHECK(cache.choose_layout(half_conv(), finder.function(), finder.timer()).layout == Layout::NCHW);
  }
  SECTION("only NHWC has one") {
    LayoutFinder finder;
    finder.nchw = {{.algorithm = 1, .ok = false, .time_ms = 1.0f}};
    finder.nhwc = {{.algorithm = 6, .ok = true, .time_ms = 2.0f}};
    ConvAlgorithmCache cache(64 * MiB);
    const LayoutChoice c = cache.choose_layout(half_conv(), finder.function(), finder.timer());
    CHECK(c.layout == Layout::NHWC);
    CHECK(c.choice.algorithm == 6);
  }
  SECTION("neither: NCHW's error, and a later request searches again") {
    LayoutFinder finder;
    finder.nchw = {{.algorithm = 1, .ok = false, .time_ms = 1.0f}};
    finder.nhwc_throws = true;
    ConvAlgorithmCache cache(64 * MiB);
    CHECK_THROWS_WITH(cache.choose_layout(half_conv(), finder.function(), finder.timer()),
                      Catch::Contains("no algorithm for convolution forward float16 NCHW x[64,64,56,56]"));
    CHECK(cache.layout_searches() == 0);
    finder.nhwc_throws = false;
    finder.nhwc = {{.algorithm = 6, .ok = true, .time_ms = 2.0f}};
    CHECK(cache.choose_layout(half_conv(), finder.function(), finder.timer()).layout == Layout::NHWC);
  }
}

TEST_CASE("pick_layout wants NHWC strictly faster and ignores totals that are not times", "[conv-algorithms]") {
  CHECK(pick_layout(2.0f, 1.0f) == Layout::NHWC);
  CHECK(pick_layout(1.0f, 2.0f) == Layout::NCHW);
  CHECK(pick_layout(1.0f, 1.0f) == Layout::NCHW);
  CHECK(pick_layout(NAN, 1.0f) == Layout::NHWC);
  CHECK(pick_layout(1.0f, NAN) == Layout::NCHW);
  CHECK(pick_layout(-1.0f, 5.0f) == Layout::NHWC);
  CHECK(pick_layout(NAN, NAN) == Layout::NCHW);
}

TEST_CASE("layout choice can be forced, measuring nothing else", "[conv-algorithms]") {
  LayoutFinder finder;
  finder.nchw = {{.algorithm = 1, .ok = true, .time_ms = 1.0f}};
  finder.nhwc = {{.algorithm = 6, .ok = true, .time_ms = 9.0f}};
  ConvAlgorithmCache cache(64 * MiB);
  const LayoutChoice always =
      cache.choose_layout(half_conv(), finder.function(), finder.timer(), kolo::models::ChannelsLast::Always);
  CHECK(always.layout == Layout::NHWC);
  CHECK(always.choice.algorithm == 6);
  const LayoutChoice never =
      cache.choose_layout(half_conv(), finder.function(), finder.timer(), kolo::models::ChannelsLast::Never);
  CHECK(never.layout == Layout::NCHW);
  CHECK(never.choice.algorithm == 1);
  CHECK(finder.timed.empty());
  CHECK(finder.asked.size() == 2);
  CHECK(cache.layout_searches() == 0);
  // Auto measures now, reusing both searches: NCHW is faster here.
  CHECK(cache.choose_layout(half_conv(), finder.function(), finder.timer()).layout == Layout::NCHW);
  CHECK(finder.asked.size() == 2);
  CHECK(finder.timed.size() == 2);

  finder.nhwc_throws = true;  // forcing a layout cuDNN cannot do is an error
  ConvKey other = half_conv();
  other.batch = 32;
  CHECK_THROWS_WITH(cache.choose_layout(other, finder.function(), finder.timer(), kolo::models::ChannelsLast::Always),
                    Catch::Contains("NOT_SUPPORTED"));
}
