// The GPU settings: KOLO_GPU_OPERATIONS, KOLO_HIERARCHICAL_ALLREDUCE and the test-only
// layout and stand-in switches, their HOROVOD_ aliases, bad values, and which collectives
// GPU tensors get for what the build has.
#include <catch2/catch.hpp>

#include <map>

#include <mpi.h>

#include "runtime/config.h"
#include "runtime/devices.h"
#include "support/status.h"

using Catch::Matchers::Contains;
using kolo::GpuOperationsSetting;

namespace {

kolo::Config parse(const std::map<std::string, std::string>& env) {
  return kolo::config_from_environment([env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

}  // namespace

TEST_CASE("GPU settings default to automatic collectives and a flat allreduce", "[config][gpu]") {
  const kolo::Config c = parse({});
  CHECK(c.gpu_operations == GpuOperationsSetting::Auto);
  CHECK_FALSE(c.hierarchical_allreduce);
  CHECK(c.test_local_size == 0);
  CHECK_FALSE(c.test_host_gpu);
  CHECK_THAT(c.describe(), Contains("KOLO_GPU_OPERATIONS = (auto)") && Contains("KOLO_HIERARCHICAL_ALLREDUCE = 0"));
}

TEST_CASE("KOLO_GPU_OPERATIONS takes NCCL or MPI in any case, and the HOROVOD_ name", "[config][gpu]") {
  CHECK(parse({{"KOLO_GPU_OPERATIONS", "NCCL"}}).gpu_operations == GpuOperationsSetting::Nccl);
  CHECK(parse({{"KOLO_GPU_OPERATIONS", "mpi"}}).gpu_operations == GpuOperationsSetting::Mpi);
  CHECK(parse({{"HOROVOD_GPU_OPERATIONS", "Mpi"}}).gpu_operations == GpuOperationsSetting::Mpi);
  CHECK(parse({{"HOROVOD_GPU_OPERATIONS", "MPI"}, {"KOLO_GPU_OPERATIONS", "NCCL"}}).gpu_operations ==
        GpuOperationsSetting::Nccl);
  CHECK_THROWS_WITH(parse({{"KOLO_GPU_OPERATIONS", "gloo"}}),
                    Contains("KOLO_GPU_OPERATIONS='gloo'") && Contains("NCCL or MPI"));
  CHECK_THROWS_WITH(parse({{"HOROVOD_GPU_OPERATIONS", ""}}), Contains("HOROVOD_GPU_OPERATIONS=''"));
}

TEST_CASE("KOLO_HIERARCHICAL_ALLREDUCE is a boolean, also as HOROVOD_HIERARCHICAL_ALLREDUCE", "[config][gpu]") {
  CHECK(parse({{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}}).hierarchical_allreduce);
  CHECK(parse({{"HOROVOD_HIERARCHICAL_ALLREDUCE", "true"}}).hierarchical_allreduce);
  CHECK_FALSE(parse({{"KOLO_HIERARCHICAL_ALLREDUCE", "0"}, {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}}).hierarchical_allreduce);
  CHECK_THROWS_WITH(parse({{"KOLO_HIERARCHICAL_ALLREDUCE", "2"}}), Contains("KOLO_HIERARCHICAL_ALLREDUCE='2'"));
}

TEST_CASE("KOLO_HIERARCHICAL_ALLGATHER is a boolean of its own, also as HOROVOD_HIERARCHICAL_ALLGATHER",
          "[config][gpu]") {
  CHECK_FALSE(parse({}).hierarchical_allgather);
  CHECK_THAT(parse({}).describe(), Contains("KOLO_HIERARCHICAL_ALLGATHER = 0"));
  const kolo::Config c = parse({{"KOLO_HIERARCHICAL_ALLGATHER", "1"}});
  CHECK(c.hierarchical_allgather);
  CHECK_FALSE(c.hierarchical_allreduce);  // the two are independent
  CHECK_THAT(c.describe(), Contains("KOLO_HIERARCHICAL_ALLGATHER = 1") && Contains("KOLO_HIERARCHICAL_ALLREDUCE = 0"));
  CHECK_FALSE(parse({{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}}).hierarchical_allgather);
  CHECK(parse({{"HOROVOD_HIERARCHICAL_ALLGATHER", "on"}}).hierarchical_allgather);
  CHECK_FALSE(parse({{"KOLO_HIERARCHICAL_ALLGATHER", "off"}, {"HOROVOD_HIERARCHICAL_ALLGATHER", "1"}}).hierarchical_allgather);
  CHECK_THROWS_WITH(parse({{"HOROVOD_HIERARCHICAL_ALLGATHER", "yes please"}}),
                    Contains("HOROVOD_HIERARCHICAL_ALLGATHER='yes please'"));
}

TEST_CASE("the test-only layout and GPU stand-in switches parse and reject nonsense", "[config][gpu]") {
  const kolo::Config c = parse({{"KOLO_TEST_LOCAL_SIZE", "2"}, {"KOLO_TEST_HOST_GPU", "1"}});
  CHECK(c.test_local_size == 2);
  CHECK(c.test_host_gpu);
  CHECK_THAT(c.describe(), Contains("KOLO_TEST_LOCAL_SIZE = 2") && Contains("KOLO_TEST_HOST_GPU = 1"));
  CHECK_THROWS_WITH(parse({{"KOLO_TEST_LOCAL_SIZE", "-1"}}), Contains("KOLO_TEST_LOCAL_SIZE='-1'"));
  CHECK_THROWS_WITH(parse({{"KOLO_TEST_LOCAL_SIZE", "two"}}), Contains("KOLO_TEST_LOCAL_SIZE='two'"));
  CHECK_THROWS_WITH(parse({{"KOLO_TEST_HOST_GPU", "maybe"}}), Contains("KOLO_TEST_HOST_GPU='maybe'"));
}

TEST_CASE("GPU tensors get NCCL where the build has it, MPI otherwise, and NCCL only if built", "[config][gpu]") {
  using kolo::ops::GpuOperations;
  CHECK(kolo::resolve_gpu_operations(GpuOperationsSetting::Auto, true) == GpuOperations::Nccl);
  CHECK(kolo::resolve_gpu_operations(GpuOperationsSetting::Auto, false) == GpuOperations::Mpi);
  CHECK(kolo::resolve_gpu_operations(GpuOperationsSetting::Mpi, true) == GpuOperations::Mpi);
  CHECK(kolo::resolve_gpu_operations(GpuOperationsSetting::Nccl, true) == GpuOperations::Nccl);
  CHECK_THROWS_MATCHES(kolo::resolve_gpu_operations(GpuOperationsSetting::Nccl, false), kolo::Error,
                       kolo_test::HasCode(kolo::StatusCode::Unsupported, "KOLO_GPU_OPERATIONS=NCCL"));
  CHECK_THROWS_WITH(kolo::resolve_gpu_operations(GpuOperationsSetting::Nccl, false), Contains("no NCCL"));
}

TEST_CASE("build_info says what the build has, without init() and without a GPU", "[config][gpu]") {
  const kolo::BuildInfo info = kolo::build_info();
  CHECK_FALSE(info.version.empty());
  CHECK_THAT(info.mpi_library, Contains("MPI"));
  // The loaded library's standard, as the header kolo was compiled against names it.
  CHECK(info.mpi_standard == std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION));
  CHECK(info.cuda_devices >= 0);
  const auto dotted = Catch::Matchers::Matches("[0-9]+\\.[0-9]+(\\.[0-9]+)?");
  if (info.cuda) {
    CHECK_THAT(info.cuda_compiled, dotted);
    CHECK_THAT(info.cuda_runtime, dotted);
    if (info.cuda_driver != "none") CHECK_THAT(info.cuda_driver, dotted);
  } else {
    CHECK(info.cuda_compiled.empty());
    CHECK_FALSE(info.nccl);
  }
  if (info.nccl) {
    CHECK_THAT(info.nccl_compiled, Catch::Matchers::Matches("[0-9]+\\.[0-9]+\\.[0-9]+"));
    CHECK_THAT(info.nccl_runtime, Catch::Matchers::Matches("[0-9]+\\.[0-9]+\\.[0-9]+"));
  }
}
