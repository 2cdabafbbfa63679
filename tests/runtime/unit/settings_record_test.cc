// The settings record rank 0 broadcasts at start-up: named and versioned, read by key, and
// refused with a message naming what does not match.
#include <catch2/catch.hpp>

#include "runtime/settings_record.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

kolo::Config unusual() {
  kolo::Config c;
  c.fusion_threshold_bytes = 12345;
  c.cache_capacity = 7;
  c.allreduce_chunk_bytes = 65536;
  c.autotune = true;
  c.gpu_operations = kolo::GpuOperationsSetting::Mpi;
  c.hierarchical_allreduce = true;
  c.hierarchical_allgather = true;
  c.test_host_gpu = true;
  c.dynamic_process_sets = true;
  return c;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("settings record: named, versioned, one KEY=value line per shared setting", "[settings]") {
  const std::string record = kolo::settings_record(unusual());
  CHECK_THAT(record, StartsWith("kolo-settings/1\n"));
  CHECK_THAT(record, Contains("\nKOLO_FUSION_THRESHOLD=12345\n"));
  CHECK_THAT(record, Contains("\nKOLO_CACHE_CAPACITY=7\n"));
  CHECK_THAT(record, Contains("\nKOLO_ALLREDUCE_CHUNK_BYTES=65536\n"));
  CHECK_THAT(record, Contains("\nKOLO_AUTOTUNE=1\n"));
  CHECK_THAT(record, Contains("\nKOLO_DYNAMIC_PROCESS_SETS=1\n"));
}

TEST_CASE("settings record: read back, it sets the shared settings and nothing else", "[settings]") {
  kolo::Config read;
  read.cycle_time_ms = 7.5;
  read.stall_shutdown_seconds = 42;
  kolo::apply_settings_record(kolo::settings_record(unusual()), read);
  const kolo::Config want = unusual();
  CHECK(read.fusion_threshold_bytes == want.fusion_threshold_bytes);
  CHECK(read.cache_capacity == want.cache_capacity);
  CHECK(read.allreduce_chunk_bytes == want.allreduce_chunk_bytes);
  CHECK(read.dynamic_process_sets);
  CHECK(read.autotune);
  CHECK(read.gpu_operations == kolo::GpuOperationsSetting::Mpi);
  CHECK(read.hierarchical_allreduce);
  CHECK(read.hierarchical_allgather);
  CHECK(read.test_host_gpu);
  CHECK(read.cycle_time_ms == 7.5);  // each rank's own
  CHECK(read.stall_shutdown_seconds == 42);
}

TEST_CASE("settings record: another name or version, or keys that do not match, are refused by name",
          "[settings]") {
  const std::string record = kolo::settings_record(unusual());
  kolo::Config config;
  const kolo::Config before = config;
  const auto refused = [&](const std::string& text) {
    try {
      kolo::apply_settings_record(text, config);
    } catch (const kolo::Error& e) {
      CHECK(e.code() == kolo::StatusCode::Unsupported);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused(replaced(record, "kolo-settings/1", "kolo-settings/2")),
             Contains("this rank reads kolo-settings/1") && Contains("named 'kolo-settings/2'"));
  CHECK_THAT(refused(replaced(record, "KOLO_AUTOTUNE=1\n", "")), Contains("KOLO_AUTOTUNE is missing"));
  CHECK_THAT(refused(record + "KOLO_NEW_THING=3\n"), Contains("unknown setting 'KOLO_NEW_THING'"));
  CHECK_THAT(refused(record + "KOLO_CACHE_CAPACITY=3\n"), Contains("KOLO_CACHE_CAPACITY appears twice"));
  CHECK_THAT(refused(replaced(record, "KOLO_CACHE_CAPACITY=7", "KOLO_CACHE_CAPACITY=seven")),
             Contains("the value of KOLO_CACHE_CAPACITY is 'seven', not an integer"));
  CHECK_THAT(refused(""), Contains("named ''"));
  // Values this rank's own parser would refuse: a cache of 2^31 slots (about 32 GiB), a
  // negative threshold, an operations setting past the enum.
  CHECK_THAT(refused(replaced(record, "KOLO_CACHE_CAPACITY=7", "KOLO_CACHE_CAPACITY=2147483647")),
             Contains("KOLO_CACHE_CAPACITY is 2147483647, outside 0 to 1048576"));
  CHECK_THAT(refused(replaced(record, "KOLO_CACHE_CAPACITY=7", "KOLO_CACHE_CAPACITY=-1")),
             Contains("KOLO_CACHE_CAPACITY is -1, outside"));
  CHECK_THAT(refused(replaced(record, "KOLO_AUTOTUNE=1", "KOLO_AUTOTUNE=2")), Contains("KOLO_AUTOTUNE is 2"));
  CHECK_THAT(refused(replaced(record, "KOLO_GPU_OPERATIONS=2", "KOLO_GPU_OPERATIONS=9")),
             Contains("KOLO_GPU_OPERATIONS is 9, outside 0 to 2"));
  // A refused record changes nothing.
  CHECK(config.fusion_threshold_bytes == before.fusion_threshold_bytes);
  CHECK(config.cache_capacity == before.cache_capacity);
}
