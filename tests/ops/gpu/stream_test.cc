// Readiness and completion on real streams: a gradient produced asynchronously on the
// caller's stream (kolo::set_cuda_stream) is reduced correctly without the caller
// synchronising, and a consumer stream that waits on the handle (wait_on_stream) sees the
// result without the host waiting for it.
#include <cuda_runtime_api.h>

#include "support/device_memory.h"
#include "support/mpi_util.h"

using namespace kolo_test;

TEST_CASE("a tensor produced on the caller's stream is reduced only once it is ready", "[gpu][streams]") {
  const int64_t count = 1 << 22;  // large enough that the copy is still running at submission
  std::vector<float> host(count, float(rank() + 1));
  float* pinned = nullptr;
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), count * sizeof(float)) == cudaSuccess);
  std::copy(host.begin(), host.end(), pinned);
  DeviceVector<float> grad(std::vector<float>(count, 0.0f));
  cudaStream_t producer = nullptr, consumer = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking) == cudaSuccess);

  for (int round = 0; round < 3; ++round) {
    REQUIRE(cudaMemcpyAsync(grad.data(), pinned, count * sizeof(float), cudaMemcpyHostToDevice, producer) ==
            cudaSuccess);
    kolo::set_cuda_stream(producer);  // no synchronisation: kolo's collective waits on the device
    kolo::Handle h = kolo::allreduce_async("streams/grad", grad.view(), {kolo::ReduceOp::Sum});
    kolo::set_cuda_stream(nullptr);
    REQUIRE(h.wait_on_stream(consumer).ok());
    std::vector<float> result(count, -1.0f);
    REQUIRE(cudaMemcpyAsync(result.data(), grad.data(), count * sizeof(float), cudaMemcpyDeviceToHost, consumer) ==
            cudaSuccess);
    REQUIRE(cudaStreamSynchronize(consumer) == cudaSuccess);
    require_ok(h, "allreduce");
    const float want = float(size() * (size() + 1) / 2);
    CHECK(result[0] == want);
    CHECK(result[count - 1] == want);
  }
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
  cudaFreeHost(pinned);
}
