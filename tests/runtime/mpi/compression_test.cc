// fp16 and bf16 compression of allreduces (AllreduceOptions::compression) on CPU tensors:
// the same executor code compresses GPU tensors. Values are chosen so that the 16-bit
// sums are exact; the result must then equal the uncompressed one. Compressed and
// uncompressed tensors are never fused together, and ranks must agree on compression.
#include "support/mpi_util.h"

using kolo::Compression;
using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

// Multiples of 1/4 up to 8 in magnitude: exact in bf16 (8 bits of mantissa) and fp16, and
// so are their sums over 4 ranks.
float value(int r, int64_t i) { return static_cast<float>(((r * 5 + i * 3) % 33) - 16) * 0.25f; }

}  // namespace

TEST_CASE("fp16 and bf16 compression give exact results where 16 bits hold them", "[compression]") {
  const int n = size(), r = rank();
  for (int round = 0; round < 2; ++round)  // the second round runs from the response cache
    for (Compression c : {Compression::FP16, Compression::BF16})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Max}) {
        const std::string base = std::string("compressed/") + kolo::compression_name(c) + "/" + kolo::op_name(op);
        // One tensor alone, several fused, and a float64 one.
        std::vector<std::vector<float>> tensors = {std::vector<float>(1000), std::vector<float>(7), std::vector<float>(9)};
        std::vector<double> wide(5);
        std::vector<kolo::Handle> handles;
        for (std::size_t t = 0; t < tensors.size(); ++t) {
          for (std::size_t i = 0; i < tensors[t].size(); ++i) tensors[t][i] = value(r, int64_t(i + t));
          handles.push_back(kolo::allreduce_async(base + "/" + std::to_string(t), kolo::view(tensors[t]),
                                                  {op, 1.0, 1.0, c}));
        }
        for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = value(r, int64_t(i));
        handles.push_back(kolo::allreduce_async(base + "/f64", kolo::view(wide), {op, 1.0, 1.0, c}));
        require_all_ok(handles, base);
        for (std::size_t t = 0; t < tensors.size(); ++t)
          for (std::size_t i = 0; i < tensors[t].size(); ++i) {
            float want = value(0, int64_t(i + t));
            for (int q = 1; q < n; ++q) {
              const float x = value(q, int64_t(i + t));
              want = op == ReduceOp::Max ? std::max(want, x) : want + x;
            }
            if (op == ReduceOp::Average) want *= static_cast<float>(1.0 / n);
            INFO(base << " tensor " << t << " element " << i);
            REQUIRE(tensors[t][i] == want);
          }
        for (std::size_t i = 0; i < wide.size(); ++i) {
          double want = value(0, int64_t(i));
          for (int q = 1; q < n; ++q) {
            const double x = value(q, int64_t(i));
            want = op == ReduceOp::Max ? std::max(want, x) : want + x;
          }
          if (op == ReduceOp::Average) want = static_cast<float>(want) * static_cast<float>(1.0 / n);
          REQUIRE(wide[i] == Approx(want).epsilon(1e-7));
        }
      }
}

TEST_CASE("fp16 compression rounds to 16 bits on the wire", "[compression]") {
  std::vector<float> x = {1.0f + 1.0f / 4096.0f};  // not representable in fp16: rounds to 1
  require_ok(kolo::allreduce_async("compressed/rounding", kolo::view(x), {ReduceOp::Average, 1.0, 1.0, Compression::FP16}));
  CHECK(x[0] == 1.0f);
  std::vector<float> y = {1.0f + 1.0f / 4096.0f};
  require_ok(kolo::allreduce_async("uncompressed/rounding", kolo::view(y), {ReduceOp::Average}));
  CHECK(y[0] == 1.0f + 1.0f / 4096.0f);
}

TEST_CASE("compression of an integer tensor is refused at once", "[compression]") {
  std::vector<int32_t> v(4, 1);
  const kolo::Status s =
      immediate_failure(kolo::allreduce_async("compressed/int", kolo::view(v), {ReduceOp::Sum, 1.0, 1.0, Compression::FP16}));
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Catch::Matchers::Contains("fp16 compression") && Catch::Matchers::Contains("int32"));
}

TEST_CASE("ranks that disagree on compression get a mismatch", "[compression]") {
  if (size() < 2) return;
  std::vector<float> v(4, 1.0f);
  const Compression c = rank() == 0 ? Compression::FP16 : Compression::None;
  const kolo::Status s = finish(kolo::allreduce_async("compressed/mismatch", kolo::view(v), {ReduceOp::Sum, 1.0, 1.0, c}));
  CHECK(s.code() == kolo::StatusCode::Mismatch);
  CHECK_THAT(s.message(), Catch::Matchers::Contains("compression"));
}
