// ReduceOp::Adasum through the whole runtime: negotiation, fusion, the executor and the MPI
// backend's sendrecv. Every rank builds every rank's vectors from a seed, and checks its
// result against the pairwise tree evaluated directly (support/adasum_reference.h). At a
// rank count that is not a power of two (np 3) the tests check the error instead.
#include <cfloat>

#include "kolo/kolo_c.h"
#include "support/adasum_reference.h"
#include "support/mpi_util.h"

using kolo::Compression;
using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;
using Catch::Matchers::Contains;

namespace {

bool power_of_two_ranks() {
  const int n = size();
  if ((n & (n - 1)) == 0) return true;
  WARN("skipped at " << n << " ranks: Adasum needs a power-of-two number (the error is checked)");
  return false;
}

// Fused tensors of odd lengths, of one element, shorter than the number of ranks, and one
// large enough to be exchanged in many pieces by a small KOLO_ALLREDUCE_CHUNK_BYTES.
const std::vector<int64_t> kCounts = {5, 1, 3, 20000, 2, 17, 1000};
// Where the halves and quarters of the fused buffer (320, 160, 480) fall inside tensors.
const std::vector<int64_t> kGroupCounts = {300, 1, 3, 2, 33, 1, 300};

// This rank's tensors of `vectors` in `d`, for kolo to reduce in place.
std::vector<Buffer> own_buffers(DType d, const AdasumTensors& mine) {
  std::vector<Buffer> buffers;
  for (const auto& tensor : mine) {
    buffers.emplace_back(d, std::vector<int64_t>{static_cast<int64_t>(tensor.size())});
    for (std::size_t i = 0; i < tensor.size(); ++i) buffers.back().set(static_cast<int64_t>(i), static_cast<double>(tensor[i]));
  }
  return buffers;
}

void check_results(const std::vector<Buffer>& got, const AdasumTensors& want, DType reference_dtype, long double factor,
                   const std::string& what) {
  for (std::size_t t = 0; t < want.size(); ++t) {
    std::vector<long double> values, expected;
    for (int64_t i = 0; i < got[t].count(); ++i) values.push_back(got[t].get(i));
    for (long double x : want[t]) expected.push_back(x * factor);
    INFO(what << ": rank " << rank() << " of " << size() << ", tensor " << t << " of " << want[t].size() << " elements");
    CHECK(relative_error(values, expected) <= adasum_tolerance(reference_dtype));
  }
}

}  // namespace

TEST_CASE("adasum allreduce matches the pairwise tree, for each float dtype and wide scales", "[adasum]") {
  if (!power_of_two_ranks()) return;
  for (int round = 0; round < 2; ++round)  // the second round runs from the response cache
    for (DType d : {DType::Float16, DType::Float32, DType::Float64})
      for (bool wide : {false, true}) {
        const std::string base = std::string("adasum/") + kolo::dtype_name(d) + (wide ? "/wide/" : "/unit/");
        const std::vector<long double> scales = wide ? adasum_wide_scales(d) : std::vector<long double>{1.0L};
        const std::vector<AdasumTensors> vectors = adasum_vectors(d, size(), kCounts, scales, 11);
        std::vector<Buffer> buffers = own_buffers(d, vectors[static_cast<std::size_t>(rank())]);
        std::vector<kolo::Handle> handles;
        for (std::size_t t = 0; t < buffers.size(); ++t)
          handles.push_back(kolo::allreduce_async(base + std::to_string(t), buffers[t].view(), {ReduceOp::Adasum}));
        require_all_ok(handles, base);
        check_results(buffers, adasum_tree(vectors, d), d, 1, base);
      }
}

TEST_CASE("grouped adasum allreduce, with prescale and postscale", "[adasum]") {
  if (!power_of_two_ranks()) return;
  // Scaling by powers of two is exact, and Adasum does not change under a common scale:
  // the result is prescale · postscale times the tree (no 1/size, unlike an average).
  for (DType d : {DType::Float16, DType::Float32, DType::Float64}) {
    const std::string base = std::string("adasum/group/") + kolo::dtype_name(d) + "/";
    const std::vector<AdasumTensors> vectors = adasum_vectors(d, size(), kGroupCounts, {1.0L, 3e-2L, 10.0L}, 12);
    std::vector<Buffer> buffers = own_buffers(d, vectors[static_cast<std::size_t>(rank())]);
    std::vector<std::string> names;
    std::vector<kolo::TensorView> views;
    for (std::size_t t = 0; t < buffers.size(); ++t) {
      names.push_back(base + std::to_string(t));
      views.push_back(buffers[t].view());
    }
    require_all_ok(kolo::grouped_allreduce_async(names, views, views, {ReduceOp::Adasum, 2.0, 0.25}), base);
    check_results(buffers, adasum_tree(vectors, d), d, 0.5L, base);
  }
}

TEST_CASE("adasum with fp16 compression combines the 16-bit wire values", "[adasum][compression]") {
  if (!power_of_two_ranks()) return;
  // float32 tensors whose values float16 holds: the wire carries them exactly, and the
  // tree runs in float16.
  const std::vector<AdasumTensors> vectors = adasum_vectors(DType::Float16, size(), kCounts, {1.0L, 0.1L}, 13);
  std::vector<Buffer> buffers = own_buffers(DType::Float32, vectors[static_cast<std::size_t>(rank())]);
  std::vector<kolo::Handle> handles;
  for (std::size_t t = 0; t < buffers.size(); ++t)
    handles.push_back(kolo::allreduce_async("adasum/fp16wire/" + std::to_string(t), buffers[t].view(),
                                            {ReduceOp::Adasum, 1.0, 1.0, Compression::FP16}));
  require_all_ok(handles, "adasum/fp16wire");
  check_results(buffers, adasum_tree(vectors, DType::Float16), DType::Float16, 1, "adasum/fp16wire");
}

TEST_CASE("adasum: a joined rank contributes zeros, which leave its partner's vector as it is", "[adasum][join]") {
  if (!power_of_two_ranks() || size() < 2) return;
  std::vector<AdasumTensors> vectors = adasum_vectors(DType::Float32, size(), {9}, {1e-20L, 1.0L}, 14);
  // Two rounds on every rank put the name in every rank's response cache.
  for (int round = 0; round < 2; ++round) {
    std::vector<Buffer> b = own_buffers(DType::Float32, vectors[static_cast<std::size_t>(rank())]);
    require_ok(kolo::allreduce_async("adasum/join", b[0].view(), {ReduceOp::Adasum}));
    check_results(b, adasum_tree(vectors, DType::Float32), DType::Float32, 1, "adasum/join warm-up");
  }
  if (rank() != 0) {
    std::vector<Buffer> b = own_buffers(DType::Float32, vectors[static_cast<std::size_t>(rank())]);
    require_ok(kolo::allreduce_async("adasum/join", b[0].view(), {ReduceOp::Adasum}));
    for (long double& x : vectors[0][0]) x = 0;
    check_results(b, adasum_tree(vectors, DType::Float32), DType::Float32, 1, "adasum/join with rank 0 joined");
  }
  bounded_join();
}

TEST_CASE("adasum through the C API", "[adasum][c_api]") {
  if (!power_of_two_ranks()) return;
  const std::vector<AdasumTensors> vectors = adasum_vectors(DType::Float64, size(), {6}, {1e-100L, 1.0L}, 15);
  std::vector<Buffer> b = own_buffers(DType::Float64, vectors[static_cast<std::size_t>(rank())]);
  const int64_t shape[] = {6};
  const kolo_handle h =
      kolo_allreduce_async("adasum/c", b[0].data(), b[0].data(), KOLO_FLOAT64, 1, shape, KOLO_ADASUM, 1, 1, -1);
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == KOLO_OK);
  check_results(b, adasum_tree(vectors, DType::Float64), DType::Float64, 1, "adasum/c");
  CHECK(kolo_reducescatter_async("adasum/c/rs", b[0].data(), KOLO_FLOAT64, 1, shape, KOLO_ADASUM, -1) ==
        KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("reducescatter does not support Adasum"));
}

TEST_CASE("adasum errors: integer and bfloat16 dtypes, reducescatter, bf16 compression, rank counts", "[adasum][errors]") {
  std::vector<int32_t> ints(4, 1);
  kolo::Status s = immediate_failure(kolo::allreduce_async("adasum/bad/int", kolo::view(ints), {ReduceOp::Adasum}));
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Contains("adasum/bad/int") && Contains("Adasum needs float16, float32 or float64") &&
                              Contains("int32"));

  Buffer bf16(DType::BFloat16, {4});
  s = immediate_failure(kolo::allreduce_async("adasum/bad/bf16", bf16.view(), {ReduceOp::Adasum}));
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Contains("bfloat16"));

  std::vector<float> v(8, 1.0f);
  s = immediate_failure(kolo::reducescatter_async("adasum/bad/rs", kolo::view(v), ReduceOp::Adasum));
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Contains("adasum/bad/rs") && Contains("reducescatter does not support Adasum (as in Horovod)"));

  if (const int n = size(); (n & (n - 1)) == 0) {
    s = immediate_failure(kolo::allreduce_async("adasum/bad/bf16wire", kolo::view(v),
                                                {ReduceOp::Adasum, 1.0, 1.0, Compression::BF16}));
    CHECK(s.code() == kolo::StatusCode::InvalidArgument);
    CHECK_THAT(s.message(), Contains("bf16 compression"));
  } else {
    s = immediate_failure(kolo::allreduce_async("adasum/bad/ranks", kolo::view(v), {ReduceOp::Adasum}));
    CHECK(s.code() == kolo::StatusCode::InvalidArgument);
    CHECK_THAT(s.message(), Contains("adasum/bad/ranks") &&
                                Contains("Adasum needs a power-of-two number of ranks, and this job has " +
                                         std::to_string(size())));
    CHECK(v == std::vector<float>(8, 1.0f));  // untouched
    // Through a group too: every member fails at once.
    std::vector<float> w(3, 1.0f);
    for (const kolo::Handle& h : kolo::grouped_allreduce_async({"adasum/bad/g0", "adasum/bad/g1"},
                                                               {kolo::view(v), kolo::view(w)},
                                                               {kolo::view(v), kolo::view(w)}, {ReduceOp::Adasum}))
      CHECK_THAT(immediate_failure(h).message(), Contains("power-of-two"));
  }
}
