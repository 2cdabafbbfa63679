// Configuration from the environment: every KOLO_* variable, its HOROVOD_* alias, KOLO_
// winning over HOROVOD_, and bad values rejected with a message naming the variable.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "kolo/kolo.h"
#include "runtime/config.h"

namespace {

using Env = std::map<std::string, std::string>;

kolo::EnvLookup lookup_in(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

kolo::Config parse(const Env& env) { return kolo::config_from_environment(lookup_in(env)); }

// Parsing must fail with InvalidArgument and a message naming `variable` and the value.
void require_rejected(const Env& env, const std::string& variable) {
  INFO("environment variable " << variable);
  try {
    parse(env);
    FAIL("config_from_environment accepted " << variable << "='" << env.at(variable) << "'");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Matchers::Contains(variable));
    CHECK_THAT(message, Catch::Matchers::Contains("'" + env.at(variable) + "'"));
  }
}

}  // namespace

TEST_CASE("config defaults apply when no variable is set", "[config]") {
  const kolo::Config c = parse({});
  CHECK(c.fusion_threshold_bytes == 64 * 1024 * 1024);
  CHECK(c.cycle_time_ms == 1.0);
  CHECK(c.cache_capacity == 1024);
  CHECK(c.timeline_path.empty());
  CHECK(c.stall_check_seconds == 60.0);
  CHECK(c.stall_check_enabled);
  CHECK(c.stall_shutdown_seconds == 600.0);
  CHECK(c.log_level == kolo::LogLevel::Warning);
  CHECK(c.allreduce_chunk_bytes == 0);
  CHECK_FALSE(c.autotune);
}

TEST_CASE("config reads every KOLO_ variable", "[config]") {
  const kolo::Config c = parse({{"KOLO_FUSION_THRESHOLD", "1048576"},
                                {"KOLO_CYCLE_TIME", "2.5"},
                                {"KOLO_CACHE_CAPACITY", "77"},
                                {"KOLO_TIMELINE", "/tmp/some timeline.json"},
                                {"KOLO_STALL_CHECK_TIME_SECONDS", "7"},
                                {"KOLO_STALL_CHECK_DISABLE", "1"},
                                {"KOLO_STALL_SHUTDOWN_TIME_SECONDS", "30.5"},
                                {"KOLO_LOG_LEVEL", "debug"},
                                {"KOLO_ALLREDUCE_CHUNK_BYTES", "65536"},
                                {"KOLO_CONTROL_TIMEOUT_SECONDS", "12"},
                                {"KOLO_AUTOTUNE", "true"},
                                {"KOLO_AUTOTUNE_LOG", "/tmp/autotune.csv"}});
  CHECK(c.fusion_threshold_bytes == 1048576);
  CHECK(c.cycle_time_ms == 2.5);
  CHECK(c.cache_capacity == 77);
  CHECK(c.timeline_path == "/tmp/some timeline.json");
  CHECK(c.stall_check_seconds == 7.0);
  CHECK_FALSE(c.stall_check_enabled);
  CHECK(c.stall_shutdown_seconds == 30.5);
  CHECK(c.log_level == kolo::LogLevel::Debug);
  CHECK(c.allreduce_chunk_bytes == 65536);
  CHECK(c.control_timeout_seconds == 12.0);
  CHECK(c.autotune);
  CHECK(c.autotune_log == "/tmp/autotune.csv");
}

TEST_CASE("config accepts every HOROVOD_ alias", "[config]") {
  const kolo::Config c = parse({{"HOROVOD_FUSION_THRESHOLD", "0"},
                                {"HOROVOD_CYCLE_TIME", "0.5"},
                                {"HOROVOD_CACHE_CAPACITY", "0"},
                                {"HOROVOD_TIMELINE", "tl.json"},
                                {"HOROVOD_STALL_CHECK_TIME_SECONDS", "15"},
                                {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "45"},
                                {"HOROVOD_LOG_LEVEL", "ERROR"}});
  CHECK(c.fusion_threshold_bytes == 0);
  CHECK(c.cycle_time_ms == 0.5);
  CHECK(c.cache_capacity == 0);
  CHECK(c.timeline_path == "tl.json");
  CHECK(c.stall_check_seconds == 15.0);
  CHECK(c.stall_shutdown_seconds == 45.0);
  CHECK(c.log_level == kolo::LogLevel::Error);
}

TEST_CASE("config prefers KOLO_ over HOROVOD_ when both are set", "[config]") {
  const kolo::Config c = parse({{"KOLO_FUSION_THRESHOLD", "100"},
                                {"HOROVOD_FUSION_THRESHOLD", "200"},
                                {"KOLO_CYCLE_TIME", "3"},
                                {"HOROVOD_CYCLE_TIME", "4"},
                                {"KOLO_CACHE_CAPACITY", "5"},
                                {"HOROVOD_CACHE_CAPACITY", "6"},
                                {"KOLO_TIMELINE", "kolo.json"},
                                {"HOROVOD_TIMELINE", "horovod.json"},
                                {"KOLO_STALL_CHECK_TIME_SECONDS", "8"},
                                {"HOROVOD_STALL_CHECK_TIME_SECONDS", "9"},
                                {"KOLO_STALL_SHUTDOWN_TIME_SECONDS", "10"},
                                {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "11"},
                                {"KOLO_LOG_LEVEL", "info"},
                                {"HOROVOD_LOG_LEVEL", "trace"}});
  CHECK(c.fusion_threshold_bytes == 100);
  CHECK(c.cycle_time_ms == 3.0);
  CHECK(c.cache_capacity == 5);
  CHECK(c.timeline_path == "kolo.json");
  CHECK(c.stall_check_seconds == 8.0);
  CHECK(c.stall_shutdown_seconds == 10.0);
  CHECK(c.log_level == kolo::LogLevel::Info);
}

TEST_CASE("config ignores a bad HOROVOD_ value when KOLO_ overrides it", "[config]") {
  const kolo::Config c = parse({{"KOLO_FUSION_THRESHOLD", "4096"}, {"HOROVOD_FUSION_THRESHOLD", "junk"}});
  CHECK(c.fusion_threshold_bytes == 4096);
}

TEST_CASE("config rejects bad values naming the variable", "[config]") {
  // Each entry: variable, bad value.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"KOLO_FUSION_THRESHOLD", "abc"},
      {"KOLO_FUSION_THRESHOLD", "-1"},
      {"KOLO_FUSION_THRESHOLD", "64MB"},
      {"KOLO_FUSION_THRESHOLD", ""},
      {"KOLO_FUSION_THRESHOLD", "99999999999999999999999"},
      {"HOROVOD_FUSION_THRESHOLD", "1.5"},
      {"KOLO_CYCLE_TIME", "fast"},
      {"KOLO_CYCLE_TIME", "-0.5"},
      {"KOLO_CYCLE_TIME", "nan"},
      {"HOROVOD_CYCLE_TIME", "5ms"},
      {"KOLO_CACHE_CAPACITY", "-3"},
      {"KOLO_CACHE_CAPACITY", "2000000"},
      {"HOROVOD_CACHE_CAPACITY", "lots"},
      {"KOLO_STALL_CHECK_TIME_SECONDS", "soon"},
      {"HOROVOD_STALL_CHECK_TIME_SECONDS", "-1"},
      {"KOLO_STALL_CHECK_DISABLE", "maybe"},
      {"KOLO_STALL_SHUTDOWN_TIME_SECONDS", "x"},
      {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "-2"},
      {"KOLO_LOG_LEVEL", "verbose"},
      {"HOROVOD_LOG_LEVEL", "loud"},
      {"KOLO_ALLREDUCE_CHUNK_BYTES", "-5"},
      {"KOLO_CONTROL_TIMEOUT_SECONDS", "0"},
      {"KOLO_AUTOTUNE", "2"},
  };
  for (const auto& [variable, value] : bad) {
    INFO(variable << "='" << value << "'");
    require_rejected({{variable, value}}, variable);
  }
}

// The runtime turns these two into clock durations (64-bit nanoseconds, added to the
// clock's now): 1e18 ms once converted out of range, which is undefined behaviour.
TEST_CASE("config time settings fit the runtime's clock: the longest accepted convert exactly", "[config]") {
  const kolo::Config longest = parse({{"KOLO_CYCLE_TIME", "2.5e11"}, {"KOLO_CONTROL_TIMEOUT_SECONDS", "1e9"}});
  CHECK(longest.cycle_time() == std::chrono::nanoseconds(int64_t{250'000'000'000'000'000}));
  CHECK(longest.control_timeout() == std::chrono::milliseconds(int64_t{1'000'000'000'000}));
  CHECK(parse({{"KOLO_CYCLE_TIME", "0.5"}}).cycle_time() == std::chrono::microseconds(500));
  for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
           {"KOLO_CYCLE_TIME", "1.5e12"},
           {"HOROVOD_CYCLE_TIME", "1e18"},
           {"KOLO_CYCLE_TIME", "inf"},
           {"KOLO_CONTROL_TIMEOUT_SECONDS", "1.5e9"},
           {"KOLO_CONTROL_TIMEOUT_SECONDS", "1e17"}}) {
    INFO(variable << "='" << value << "'");
    require_rejected({{variable, value}}, variable);
  }
}

// A capacity above the limit must be reported under the name the user actually set.
TEST_CASE("config names HOROVOD_CACHE_CAPACITY when its value is too large", "[config]") {
  require_rejected({{"HOROVOD_CACHE_CAPACITY", "2000000"}}, "HOROVOD_CACHE_CAPACITY");
}

// Values beyond int range must not wrap around into a negative or small capacity.
TEST_CASE("config rejects a cache capacity beyond the int range", "[config]") {
  require_rejected({{"KOLO_CACHE_CAPACITY", "3000000000"}}, "KOLO_CACHE_CAPACITY");
  require_rejected({{"KOLO_CACHE_CAPACITY", "4294967301"}}, "KOLO_CACHE_CAPACITY");
}

TEST_CASE("config accepts the usual spellings of booleans and log levels", "[config]") {
  for (const char* yes : {"1", "true", "TRUE", "yes", "on"})
    CHECK_FALSE(parse({{"KOLO_STALL_CHECK_DISABLE", yes}}).stall_check_enabled);
  for (const char* no : {"0", "false", "FALSE", "no", "off"})
    CHECK(parse({{"KOLO_STALL_CHECK_DISABLE", no}}).stall_check_enabled);
  CHECK(parse({{"KOLO_LOG_LEVEL", "Trace"}}).log_level == kolo::LogLevel::Trace);
  CHECK(parse({{"KOLO_LOG_LEVEL", "warn"}}).log_level == kolo::LogLevel::Warning);
  CHECK(parse({{"KOLO_LOG_LEVEL", "FATAL"}}).log_level == kolo::LogLevel::Fatal);
  CHECK_THROWS_AS(kolo::parse_log_level("chatty"), kolo::Error);
  CHECK(std::string(kolo::log_level_name(kolo::LogLevel::Info)) == "info");
}

TEST_CASE("config describe lists every setting with its value", "[config]") {
  const kolo::Config c = parse({{"KOLO_FUSION_THRESHOLD", "12345"}, {"KOLO_CACHE_CAPACITY", "9"},
                                {"KOLO_TIMELINE", "t.json"}});
  const std::string d = c.describe();
  CHECK_THAT(d, Catch::Matchers::Contains("KOLO_FUSION_THRESHOLD = 12345"));
  CHECK_THAT(d, Catch::Matchers::Contains("KOLO_CACHE_CAPACITY = 9"));
  CHECK_THAT(d, Catch::Matchers::Contains("KOLO_TIMELINE = t.json"));
  CHECK_THAT(d, Catch::Matchers::Contains("KOLO_CYCLE_TIME = 1"));
  CHECK_THAT(d, Catch::Matchers::Contains("KOLO_STALL_CHECK_TIME_SECONDS = 60"));
}

TEST_CASE("KOLO_TIMELINE_MARK_CYCLES is a boolean, also as HOROVOD_TIMELINE_MARK_CYCLES", "[config]") {
  CHECK_FALSE(parse({}).timeline_mark_cycles);
  CHECK(parse({{"KOLO_TIMELINE_MARK_CYCLES", "1"}}).timeline_mark_cycles);
  CHECK(parse({{"HOROVOD_TIMELINE_MARK_CYCLES", "true"}}).timeline_mark_cycles);
  CHECK_FALSE(parse({{"KOLO_TIMELINE_MARK_CYCLES", "0"}, {"HOROVOD_TIMELINE_MARK_CYCLES", "1"}}).timeline_mark_cycles);
  CHECK_THAT(parse({{"KOLO_TIMELINE_MARK_CYCLES", "on"}}).describe(),
             Catch::Matchers::Contains("KOLO_TIMELINE_MARK_CYCLES = 1\n"));
  require_rejected({{"HOROVOD_TIMELINE_MARK_CYCLES", "sometimes"}}, "HOROVOD_TIMELINE_MARK_CYCLES");
}

TEST_CASE("KOLO_KEEP_FREED_MEMORY is a boolean, on by default", "[config]") {
  CHECK(parse({}).keep_freed_memory);
  CHECK_FALSE(parse({{"KOLO_KEEP_FREED_MEMORY", "0"}}).keep_freed_memory);
  CHECK_THAT(parse({{"KOLO_KEEP_FREED_MEMORY", "off"}}).describe(),
             Catch::Matchers::Contains("KOLO_KEEP_FREED_MEMORY = 0\n"));
  require_rejected({{"KOLO_KEEP_FREED_MEMORY", "maybe"}}, "KOLO_KEEP_FREED_MEMORY");
}

// An idle rank sleeps a cycle time while a busy one waits for it in the cycle's allreduce, and
// that wait takes a silence of the control timeout for a dead rank: a cycle time close to the
// timeout would have healthy idle ranks declared dead.
TEST_CASE("config refuses a cycle time over a quarter of the control timeout, naming the variable set", "[config]") {
  CHECK(parse({{"KOLO_CYCLE_TIME", "250"}, {"KOLO_CONTROL_TIMEOUT_SECONDS", "1"}}).cycle_time_ms == 250);
  require_rejected({{"KOLO_CYCLE_TIME", "5000"}, {"KOLO_CONTROL_TIMEOUT_SECONDS", "1"}}, "KOLO_CYCLE_TIME");
  require_rejected({{"HOROVOD_CYCLE_TIME", "251"}, {"HOROVOD_CONTROL_TIMEOUT_SECONDS", "1"}}, "HOROVOD_CYCLE_TIME");
  require_rejected({{"KOLO_CYCLE_TIME", "75001"}}, "KOLO_CYCLE_TIME");  // the default timeout, 300 s
}
