// The host-staged path (ops/staged_backend.h) with host memory standing in for the
// device: a large allreduce is pipelined in pieces, every copy to the host is enqueued
// before the first reduction, each piece goes back as soon as it is reduced, the data
// arrives right, and a copy that never finishes is an error, not a hang.
#include <catch2/catch.hpp>

#include <numeric>

#include "kolo/kolo.h"
#include "ops/staged_backend.h"
#include "support/fake_devices.h"

using Catch::Matchers::Contains;
using kolo::DType;
using kolo::testing::QueuedCopier;
using kolo::testing::RecordingBackend;

namespace {

struct Staged {
  std::vector<std::string> log;
  QueuedCopier* copier = nullptr;
  std::unique_ptr<kolo::ops::Backend> backend;

  explicit Staged(int64_t piece_bytes, bool immediate = true, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto c = std::make_unique<QueuedCopier>(log, immediate);
    copier = c.get();
    kolo::ops::StagingOptions options;
    options.piece_bytes = piece_bytes;
    options.timeout = timeout;
    backend = kolo::ops::make_staged_backend(std::make_unique<RecordingBackend>("mpi", log), std::move(c), options);
  }
};

}  // namespace

TEST_CASE("staged allreduce copies every piece in first, then reduces and copies back piece by piece",
          "[staged]") {
  Staged s(/*piece_bytes=*/16);  // 4 floats
  std::vector<float> in(10), out(10, -1.0f);
  std::iota(in.begin(), in.end(), 1.0f);
  s.backend->allreduce(in.data(), out.data(), 10, DType::Float32, kolo::ReduceOp::Sum);

  const std::vector<std::string> expected = {
      "to_host 16", "to_host 16", "to_host 8",          // all copies in are enqueued at once
      "mpi.allreduce 4", "to_device 16",                  // piece 0 goes back while 1 is reduced
      "mpi.allreduce 4", "to_device 16",
      "mpi.allreduce 2", "to_device 8"};
  CHECK(s.log == expected);
  for (int i = 0; i < 10; ++i) CHECK(out[i] == 2.0f * in[i]);  // the fake reduction doubles
}

TEST_CASE("staged allreduce has the host backend scale every piece before it goes back", "[staged][scaling]") {
  Staged s(/*piece_bytes=*/16);  // 4 floats: pieces of 4, 4 and 2
  std::vector<float> in(10), out(10, -1.0f);
  std::iota(in.begin(), in.end(), 1.0f);
  s.backend->allreduce(in.data(), out.data(), 10, DType::Float32, kolo::ReduceOp::Sum, 0.25);
  const std::vector<std::string> expected = {"to_host 16",         "to_host 16",        "to_host 8",
                                             "mpi.allreduce 4 x0.25", "to_device 16",
                                             "mpi.allreduce 4 x0.25", "to_device 16",
                                             "mpi.allreduce 2 x0.25", "to_device 8"};
  CHECK(s.log == expected);
  for (int i = 0; i < 10; ++i) CHECK(out[i] == 2.0f * in[i] * 0.25f);

  s.log.clear();
  const std::vector<int64_t> counts = {3};
  s.backend->reducescatter(in.data(), out.data(), counts, DType::Float32, kolo::ReduceOp::Sum, 0.5);
  CHECK(s.log == std::vector<std::string>{"to_host 12", "mpi.reducescatter [3] x0.5", "to_device 12"});
  CHECK(std::vector<float>(out.begin(), out.begin() + 3) == std::vector<float>{1, 2, 3});
}

TEST_CASE("staged allreduce in place, and of nothing", "[staged]") {
  Staged s(1 << 20);
  std::vector<float> data = {1, 2, 3};
  s.backend->allreduce(data.data(), data.data(), 3, DType::Float32, kolo::ReduceOp::Sum);
  CHECK(data == std::vector<float>{2, 4, 6});
  s.log.clear();
  s.backend->allreduce(data.data(), data.data(), 0, DType::Float32, kolo::ReduceOp::Sum);
  CHECK(s.log.empty());
}

TEST_CASE("staged collectives copy their input in and their result out", "[staged]") {
  Staged s(1 << 20);
  std::vector<float> in = {1, 2, 3}, out(3, 0.0f);
  const std::vector<int64_t> counts = {3};
  s.backend->allgatherv(in.data(), out.data(), counts, DType::Float32);
  CHECK(out == in);
  CHECK(s.log == std::vector<std::string>{"to_host 12", "mpi.allgatherv [3]", "to_device 12"});

  s.log.clear();
  s.backend->broadcast(in.data(), 3, DType::Float32, 0);  // this rank (0) is the root: nothing comes back
  CHECK(s.log == std::vector<std::string>{"to_host 12", "mpi.broadcast 3 from 0"});

  s.log.clear();
  std::fill(out.begin(), out.end(), 0.0f);
  s.backend->alltoallv(in.data(), counts, out.data(), counts, DType::Float32);
  CHECK(out == in);
  CHECK(s.log == std::vector<std::string>{"to_host 12", "mpi.alltoallv [3]", "to_device 12"});

  s.log.clear();
  s.backend->reducescatter(in.data(), out.data(), counts, DType::Float32, kolo::ReduceOp::Sum);
  CHECK(out == std::vector<float>{2, 4, 6});
  CHECK(s.log == std::vector<std::string>{"to_host 12", "mpi.reducescatter [3]", "to_device 12"});

  s.log.clear();
  s.backend->barrier();
  CHECK(s.log == std::vector<std::string>{"mpi.barrier"});
}

TEST_CASE("staged copies that never finish fail with CommFailure after the timeout", "[staged]") {
  Staged s(1 << 20, /*immediate=*/false, std::chrono::milliseconds(50));
  std::vector<float> data(8, 1.0f);
  try {
    s.backend->allreduce(data.data(), data.data(), 8, DType::Float32, kolo::ReduceOp::Sum);
    FAIL("the staged allreduce returned although its copy never ran");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::CommFailure);
    CHECK_THAT(std::string(e.what()), Contains("copying a GPU tensor to host memory"));
  }
  CHECK(s.log == std::vector<std::string>{"to_host 32"});  // nothing was reduced from stale memory
}

TEST_CASE("the staged backend passes the pipeline piece size on to its host backend", "[staged]") {
  Staged s(1 << 20);
  s.backend->set_allreduce_chunk_bytes(65536);
  CHECK(s.log == std::vector<std::string>{"mpi.chunk 65536"});
}
