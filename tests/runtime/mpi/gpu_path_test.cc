// The runtime's GPU path end to end: device checks at submission, readiness events, the
// GPU Devices path (NCCL or host-staged MPI, hierarchical or not, per the environment),
// fusion per device, 16-bit compression, results allocated on the device, completion
// through events, stream waits.
//
// In kolo_mpi_tests, host memory stands in for device memory (KOLO_TEST_HOST_GPU=1: the
// tensors are host vectors marked cuda:0, MPI stands in for NCCL and memcpy for the CUDA
// copies). kolo_collective_gpu_tests compiles the same cases with KOLO_TEST_REAL_GPU, on cuda:0.
// Hidden ([.gpu-path]): CTest runs them under several settings.
#include <cstdlib>
#include <memory>
#include <numeric>

#include "kolo/kolo_c.h"
#include "support/device_memory.h"
#include "support/mpi_util.h"

using kolo::Compression;
using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

const kolo::Device kGpu = kTestGpu;

#ifdef KOLO_TEST_REAL_GPU
constexpr bool kRealGpu = true;
#else
constexpr bool kRealGpu = false;
#endif

float value(int r, int64_t i) { return static_cast<float>((r * 7 + i * 3) % 11) - 5.0f; }

std::vector<float> rank_values(int64_t count, int r, int64_t offset = 0) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = value(r, i + offset);
  return v;
}

float sum_over_ranks(int64_t i) {
  float s = 0;
  for (int q = 0; q < size(); ++q) s += value(q, i);
  return s;
}

}  // namespace

TEST_CASE("gpu path: the device path is the one asked for, on the node layout asked for", "[.gpu-path]") {
  const std::string config = kolo::describe_configuration();
  INFO(config);
  if (!kRealGpu) CHECK_THAT(config, Catch::Matchers::Contains("KOLO_TEST_HOST_GPU = 1"));
  if (const char* local = std::getenv("KOLO_TEST_LOCAL_SIZE")) {
    CHECK(kolo::local_size() == std::atoi(local));
    CHECK(kolo::cross_size() == size() / std::atoi(local));
    CHECK(kolo::local_rank() == rank() % std::atoi(local));
  }
}

TEST_CASE("gpu path: allreduce of device tensors, alone and fused, every option", "[.gpu-path]") {
  const int n = size(), r = rank();
  for (int round = 0; round < 3; ++round) {  // later rounds run from the response cache
    // Sizes: fused small ones, one unfused large one (above 256 KiB x ranks), odd counts
    // for the hierarchical tail, and an empty one.
    const std::vector<int64_t> counts = {1, 3, 17, 1000, 300000, 0, 5};
    std::vector<std::unique_ptr<DeviceVector<float>>> in, out;
    std::vector<kolo::Handle> handles;
    for (std::size_t t = 0; t < counts.size(); ++t) {
      in.push_back(std::make_unique<DeviceVector<float>>(rank_values(counts[t], r, int64_t(t))));
      out.push_back(std::make_unique<DeviceVector<float>>(std::vector<float>(counts[t], -99.0f)));
    }
    for (std::size_t t = 0; t < counts.size(); ++t) {
      const std::string name = "gpu/ar/" + std::to_string(t);
      if (t % 2 == 0) handles.push_back(kolo::allreduce_async(name, in[t]->view(), {ReduceOp::Sum}));
      else handles.push_back(kolo::allreduce_async(name, in[t]->view(), out[t]->view(), {ReduceOp::Average, 2.0, 0.5}));
    }
    require_all_ok(handles, "gpu allreduce");
    for (std::size_t t = 0; t < counts.size(); ++t) {
      const std::vector<float> result = (t % 2 == 0 ? in[t] : out[t])->read();
      for (int64_t i = 0; i < counts[t]; ++i) {
        const float sum = sum_over_ranks(i + int64_t(t));
        INFO("tensor " << t << " element " << i << " round " << round);
        if (t % 2 == 0) REQUIRE(result[i] == sum);
        else REQUIRE(result[i] == Approx(sum * 2.0 / n * 0.5).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("gpu path: a lone tensor of several pieces is averaged and postscaled exactly once", "[.gpu-path]") {
  // Three default pieces (1 MiB per rank) and a partial one: the host-staged and MPI
  // backends scale piece by piece, NCCL with ncclAvg (1/size) or a scaling kernel.
  const int n = size(), r = rank();
  const int64_t count = 3 * 262144 * n + 1001;
  const std::vector<std::pair<kolo::AllreduceOptions, double>> cases = {
      {{ReduceOp::Average}, 1.0 / n}, {{ReduceOp::Sum, 1.0, 0.375}, 0.375}, {{ReduceOp::Average, 2.0, 3.0}, 6.0 / n}};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto& [options, factor] = cases[c];
    DeviceVector<float> data(rank_values(count, r));
    require_ok(kolo::allreduce_async("gpu/pieces/" + std::to_string(c), data.view(), options));
    const std::vector<float> result = data.read();
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < count; ++i)
      if (result[i] != Approx(sum_over_ranks(i) * factor).epsilon(1e-6).margin(1e-6)) {
        if (first < 0) first = i;
        ++wrong;
      }
    INFO("case " << c << ": first wrong element " << first << " of " << count);
    CHECK(wrong == 0);
  }
}

TEST_CASE("gpu path: every dtype and op matches the CPU path", "[.gpu-path]") {
  for (DType d : all_dtypes())
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max}) {
      if (d == DType::Int16) continue;  // NCCL cannot reduce int16 (Unsupported, docs/gpu.md)
      Buffer cpu(d, {33});
      for (int64_t i = 0; i < 33; ++i)
        cpu.set(i, d == DType::UInt8 ? double((rank() + i) % 7) : double(value(rank(), i)));
      DeviceVector<std::byte> gpu(cpu.bytes());
      kolo::TensorView device_view = gpu.view({33});
      device_view.dtype = d;
      const std::string name = std::string("gpu/dtype/") + kolo::dtype_name(d) + "/" + kolo::op_name(op);
      require_all_ok({kolo::allreduce_async(name + "/cpu", cpu.view(), {op}),
                      kolo::allreduce_async(name + "/gpu", device_view, {op})},
                     name);
      CHECK(gpu.read() == cpu.bytes());
    }
}

TEST_CASE("gpu path: compressed allreduce is exact where 16 bits hold the values", "[.gpu-path]") {
  for (Compression c : {Compression::FP16, Compression::BF16}) {
    DeviceVector<float> a(rank_values(100, rank())), b(rank_values(3, rank(), 7));
    const std::string suffix = kolo::compression_name(c);
    require_all_ok({kolo::allreduce_async("gpu/c/a/" + suffix, a.view(), {ReduceOp::Sum, 1.0, 1.0, c}),
                    kolo::allreduce_async("gpu/c/b/" + suffix, b.view(), {ReduceOp::Sum, 1.0, 1.0, c})},
                   "compressed");
    const std::vector<float> ra = a.read(), rb = b.read();
    for (int64_t i = 0; i < 100; ++i) REQUIRE(ra[i] == sum_over_ranks(i));
    for (int64_t i = 0; i < 3; ++i) REQUIRE(rb[i] == sum_over_ranks(i + 7));
  }
}

TEST_CASE("gpu path: allgather, broadcast, alltoall and reducescatter of device tensors", "[.gpu-path]") {
  const int n = size(), r = rank();
  // allgather: rank q gives q + 1 rows of 2.
  std::vector<float> rows(2 * (r + 1));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = float(r * 100 + int(i));
  DeviceVector<float> mine(rows);
  kolo::Handle g = kolo::allgather_async("gpu/allgather", mine.view({r + 1, 2}));
  require_ok(g, "allgather");
  const kolo::TensorView gathered = g.output();
  CHECK(gathered.device == kGpu);
  REQUIRE(gathered.shape == std::vector<int64_t>{n * (n + 1) / 2, 2});
  const std::vector<float> got = read_device<float>(gathered.data, std::size_t(n * (n + 1)));
  std::size_t at = 0;
  for (int q = 0; q < n; ++q)
    for (int i = 0; i < 2 * (q + 1); ++i) CHECK(got[at++] == float(q * 100 + i));

  std::vector<int64_t> mine_b(9);
  std::iota(mine_b.begin(), mine_b.end(), int64_t(r * 10));
  DeviceVector<int64_t> b(mine_b);
  require_ok(kolo::broadcast_async("gpu/broadcast", b.view(), n - 1), "broadcast");
  const std::vector<int64_t> rb = b.read();
  for (int64_t i = 0; i < 9; ++i) CHECK(rb[i] == (n - 1) * 10 + i);

  std::vector<int32_t> mine_a(2 * n);  // 2 rows to every rank
  for (int i = 0; i < 2 * n; ++i) mine_a[i] = r * 1000 + i;
  DeviceVector<int32_t> a(mine_a);
  kolo::Handle t = kolo::alltoall_async("gpu/alltoall", a.view());
  require_ok(t, "alltoall");
  CHECK(t.output().device == kGpu);
  const std::vector<int32_t> received = read_device<int32_t>(t.output().data, std::size_t(2 * n));
  for (int q = 0; q < n; ++q)
    for (int k = 0; k < 2; ++k) CHECK(received[2 * q + k] == q * 1000 + 2 * r + k);

  std::vector<double> mine_s(3 * n);
  for (int i = 0; i < 3 * n; ++i) mine_s[i] = double(r + i);
  DeviceVector<double> s(mine_s);
  kolo::Handle rs = kolo::reducescatter_async("gpu/reducescatter", s.view(), ReduceOp::Average);
  require_ok(rs, "reducescatter");
  CHECK(rs.output().device == kGpu);
  const std::vector<double> part = read_device<double>(rs.output().data, 3);
  for (int k = 0; k < 3; ++k) CHECK(part[k] == Approx(double(3 * r + k) + (n - 1) / 2.0));
}

TEST_CASE("gpu path: a framework's stream can wait on an operation, then the host sees the result",
          "[.gpu-path]") {
  DeviceVector<float> v(rank_values(10, rank()));
  kolo::set_cuda_stream(nullptr);
  kolo::Handle h = kolo::allreduce_async("gpu/stream", v.view(), {ReduceOp::Sum});
  CHECK(h.wait_on_stream(nullptr).ok());
  require_ok(h, "allreduce");
  const std::vector<float> result = v.read();
  for (int64_t i = 0; i < 10; ++i) CHECK(result[i] == sum_over_ranks(i));
  std::vector<float> c(4, 1.0f);  // a CPU operation: wait_on_stream is wait()
  CHECK(kolo::allreduce_async("cpu/stream", kolo::view(c), {ReduceOp::Sum}).wait_on_stream(nullptr).ok());
  CHECK(c[0] == float(size()));
}

TEST_CASE("gpu path: the C API takes device >= 0, a stream, and a stream wait", "[.gpu-path]") {
  DeviceVector<float> v(rank_values(6, rank()));
  const int64_t shape[1] = {6};
  CHECK(kolo_set_cuda_stream(nullptr) == 0);
  const kolo_handle h = kolo_allreduce_async("gpu/c-api", v.data(), v.data(), KOLO_FLOAT32, 1, shape, KOLO_SUM,
                                             1.0, 1.0, kTestGpu.index);
  REQUIRE(h > 0);
  CHECK(kolo_wait_on_stream(h, nullptr) == 0);
  CHECK(kolo_wait(h) == 0);
  const std::vector<float> result = v.read();
  for (int64_t i = 0; i < 6; ++i) CHECK(result[i] == sum_over_ranks(i));
  CHECK(kolo_wait_on_stream(h, nullptr) != 0);  // released by kolo_wait
  CHECK_THAT(std::string(kolo_error_message()), Catch::Matchers::Contains("unknown handle"));

  // A result kolo allocated on the device, copied out to host memory.
  DeviceVector<int32_t> mine(std::vector<int32_t>{rank(), rank() + 100});
  const int64_t row[1] = {2};
  const kolo_handle g = kolo_allgather_async("gpu/c-api/allgather", mine.data(), KOLO_INT32, 1, row, kTestGpu.index);
  REQUIRE(g > 0);
  std::vector<int32_t> all(2 * size(), -1);
  int64_t first = 0;
  REQUIRE(kolo_wait_output(g, all.data(), int64_t(all.size() * sizeof(int32_t)), &first) == 0);
  CHECK(first == 2 * size());
  for (int q = 0; q < size(); ++q) {
    CHECK(all[2 * q] == q);
    CHECK(all[2 * q + 1] == q + 100);
  }
}

TEST_CASE("gpu path: CPU and device tensors of one step are never fused together", "[.gpu-path]") {
  std::vector<float> c1(8, 1.0f), c2(8, 3.0f);
  DeviceVector<float> g1(std::vector<float>(8, 2.0f)), g2(std::vector<float>(8, 4.0f));
  require_all_ok({kolo::allreduce_async("mix/c1", kolo::view(c1), {ReduceOp::Sum}),
                  kolo::allreduce_async("mix/g1", g1.view(), {ReduceOp::Sum}),
                  kolo::allreduce_async("mix/c2", kolo::view(c2), {ReduceOp::Sum}),
                  kolo::allreduce_async("mix/g2", g2.view(), {ReduceOp::Sum})},
                 "mixed");
  const float n = float(size());
  CHECK(c1[7] == n);
  CHECK(g1.read()[7] == 2 * n);
  CHECK(c2[7] == 3 * n);
  CHECK(g2.read()[7] == 4 * n);
}

TEST_CASE("gpu path: bad device tensors are refused at once, naming the tensor", "[.gpu-path]") {
  DeviceVector<float> v(std::vector<float>(4, 1.0f));
  kolo::TensorView other = v.view();
  other.device = kolo::Device::cuda(1);
  const kolo::Status s = immediate_failure(kolo::allreduce_async("gpu/other-device", other, {ReduceOp::Sum}));
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  INFO(s.message());
  CHECK_THAT(s.message(), Catch::Matchers::Contains("gpu/other-device") && Catch::Matchers::Contains("cuda:1"));
  // With the stand-in, any ordinal exists: then what stops it is kolo's one-GPU rule.
  if (!kRealGpu) CHECK_THAT(s.message(), Catch::Matchers::Contains("one GPU per process"));
  std::vector<float> cpu(4, 1.0f);
  const kolo::Status mixed =
      immediate_failure(kolo::allreduce_async("gpu/mixed-io", v.view(), kolo::view(cpu), {ReduceOp::Sum}));
  CHECK_THAT(mixed.message(), Catch::Matchers::Contains("different devices"));
  if (kRealGpu) {  // host memory said to be on the GPU
    kolo::TensorView lie = kolo::view(cpu);
    lie.device = kGpu;
    const kolo::Status host = immediate_failure(kolo::allreduce_async("gpu/host-memory", lie, {ReduceOp::Sum}));
    CHECK_THAT(host.message(), Catch::Matchers::Contains("host memory"));
  }
}

TEST_CASE("gpu path: a joined rank contributes zeros to device allreduces", "[.gpu-path]") {
  const int n = size();
  if (rank() != n - 1) {
    DeviceVector<float> v(std::vector<float>(50, float(rank() + 1)));
    require_ok(kolo::allreduce_async("gpu/join", v.view(), {ReduceOp::Sum}), "allreduce with a joined rank");
    CHECK(v.read()[49] == float((n - 1) * n / 2));
  }
  bounded_join();
}
