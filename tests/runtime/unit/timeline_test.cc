// The timeline's Chrome-trace JSON, parsed back with nlohmann::json: written directly by
// a Timeline here, and (tag [timeline-file], run by CTest after kolo_timeline_writer)
// written by a real two-rank run with KOLO_TIMELINE set.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "kolo/kolo.h"
#include "runtime/timeline.h"

using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          (stem + "." + std::to_string(::getpid()) + ".json"))
      .string();
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  json doc;
  REQUIRE_NOTHROW(doc = json::parse(in));
  return doc;
}

// tid -> lane name, from the thread_name metadata events of one pid.
std::map<int, std::string> lanes_of(const json& doc, int pid) {
  std::map<int, std::string> lanes;
  for (const json& e : doc)
    if (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("pid") == pid)
      lanes[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  return lanes;
}

int lane_of(const std::map<int, std::string>& lanes, const std::string& tensor) {
  for (const auto& [tid, name] : lanes)
    if (name == tensor) return tid;
  return -1;
}

// Phase names of the complete ("X") events on one lane, in file order.
std::vector<std::string> phases_on(const json& doc, int tid) {
  std::vector<std::string> phases;
  for (const json& e : doc)
    if (e.at("ph") == "X" && e.at("tid") == tid) phases.push_back(e.at("name").get<std::string>());
  return phases;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

TEST_CASE("json_escape escapes quotes, backslashes and control characters", "[timeline]") {
  CHECK(kolo::json_escape("plain/name:0") == "plain/name:0");
  CHECK(kolo::json_escape("a\"b") == "a\\\"b");
  CHECK(kolo::json_escape("back\\slash") == "back\\\\slash");
  CHECK(kolo::json_escape("line\nbreak\ttab") == "line\\nbreak\\ttab");
  CHECK(kolo::json_escape(std::string("\x01\x1f", 2)) == "\\u0001\\u001f");
  CHECK(kolo::json_escape("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 passes through
  // Whatever json_escape produces parses back to the original.
  const std::string nasty = "q\"uote\\ new\nline \x02 end";
  CHECK(json::parse("\"" + kolo::json_escape(nasty) + "\"").get<std::string>() == nasty);
  // A name is bytes; JSON is UTF-8 text: what is not well-formed UTF-8 becomes U+FFFD, and
  // the file still parses. (Passed through, one such name made the whole file unreadable.)
  CHECK(kolo::json_escape("bad\xff\xfe end") == "bad\\ufffd\\ufffd end");
  CHECK(kolo::json_escape("cut \xc3") == "cut \\ufffd");                   // truncated
  CHECK(kolo::json_escape("\xc0\xaf") == "\\ufffd\\ufffd");                // overlong '/'
  CHECK(kolo::json_escape("\xed\xa0\x80") == "\\ufffd\\ufffd\\ufffd");   // a surrogate
  CHECK(kolo::json_escape("\xf0\x9f\x98\x80 ok") == "\xf0\x9f\x98\x80 ok");  // U+1F600 passes
  for (const std::string bytes : {std::string("a\xff\"b"), std::string("\xe2\x82"), std::string("\x80\x80")})
    CHECK_NOTHROW(json::parse("\"" + kolo::json_escape(bytes) + "\""));
}

TEST_CASE("timeline writes a Chrome trace with a lane per tensor and fused groups", "[timeline]") {
  const std::string path = temp_path("kolo_timeline_unit");
  const std::string odd_name = "grad/\"odd\"\nname";
  {
    kolo::Timeline tl;
    CHECK_FALSE(tl.enabled());
    tl.phase(0, "ignored", "NEGOTIATE", kolo::Timeline::Clock::now(), kolo::Timeline::Clock::now());
    tl.open(path, 3);
    REQUIRE(tl.enabled());
    const auto t0 = kolo::Timeline::Clock::now();
    tl.phase(0, "grad/w", "NEGOTIATE", t0, t0 + 10us);
    tl.phase(0, "grad/w", "WAIT_FOR_OTHERS", t0 + 10us, t0 + 30us);
    tl.phase(0, "grad/b", "NEGOTIATE", t0, t0 + 5us, "\"bytes\":64");
    tl.phase(0, "grad/w", "ALLREDUCE", t0 + 30us, t0 + 130us);
    tl.phase(0, odd_name, "MEMCPY_IN", t0 + 1ms, t0 + 2ms);
    tl.fused_group(0, 7, {"grad/w", "grad/b", odd_name}, 4096, t0 + 30us, t0 + 2ms);
    tl.phase(2, "grad/w", "ALLREDUCE", t0 + 3ms, t0 + 4ms);  // the same name in process set 2
    tl.close();
    CHECK_FALSE(tl.enabled());
    tl.close();  // twice is harmless
  }
  const json doc = read_json(path);
  std::filesystem::remove(path);
  REQUIRE(doc.is_array());

  for (const json& e : doc) {
    CHECK(e.at("pid") == 3);
    CHECK(e.contains("tid"));
    CHECK((e.at("ph") == "M" || e.at("ph") == "X"));
    if (e.at("ph") == "X") {
      CHECK(e.at("ts").get<double>() >= 0);
      CHECK(e.at("dur").get<double>() >= 0);
    }
  }
  // Process name and the fused-groups lane.
  bool process_named = false;
  for (const json& e : doc)
    if (e.at("name") == "process_name") process_named = e.at("args").at("name") == "kolo rank 3";
  CHECK(process_named);
  const auto lanes = lanes_of(doc, 3);
  CHECK(lanes.at(0) == "fused groups");
  const int w = lane_of(lanes, "grad/w"), b = lane_of(lanes, "grad/b"), odd = lane_of(lanes, odd_name);
  const int w2 = lane_of(lanes, "grad/w (process set 2)");
  CHECK(w > 0);
  CHECK(b > 0);
  CHECK(odd > 0);
  CHECK(w2 > 0);
  CHECK(std::set<int>{w, b, odd, w2}.size() == 4);
  CHECK(phases_on(doc, w2) == std::vector<std::string>{"ALLREDUCE"});
  CHECK(phases_on(doc, w) == std::vector<std::string>{"NEGOTIATE", "WAIT_FOR_OTHERS", "ALLREDUCE"});
  CHECK(phases_on(doc, b) == std::vector<std::string>{"NEGOTIATE"});
  CHECK(phases_on(doc, odd) == std::vector<std::string>{"MEMCPY_IN"});
  CHECK_FALSE(contains(phases_on(doc, lane_of(lanes, "ignored")), "NEGOTIATE"));

  for (const json& e : doc) {
    if (e.at("ph") != "X") continue;
    if (e.at("tid") == w && e.at("name") == "ALLREDUCE") {
      CHECK(e.at("dur").get<double>() == Approx(100).margin(0.01));
      CHECK(e.at("ts").get<double>() >= 30);
    }
    if (e.at("tid") == b) CHECK(e.at("args").at("bytes") == 64);
    CHECK(e.at("args").at("process_set") == (e.at("tid") == w2 ? 2 : 0));  // every event names its set
    if (e.at("name") == "FUSED") {
      CHECK(e.at("tid") == 0);
      CHECK(e.at("args").at("group") == 7);
      CHECK(e.at("args").at("bytes") == 4096);
      CHECK(e.at("args").at("tensors") == json::array({"grad/w", "grad/b", odd_name}));
      CHECK(e.at("dur").get<double>() == Approx(1970).margin(0.01));
    }
  }
}

// The watchdog's end of a job (MPI_Abort, _Exit) runs no destructor: what flush() wrote is
// all the file will have, and a viewer reads it without the closing bracket.
TEST_CASE("a flushed timeline has its events on disk while it is still open", "[timeline]") {
  const std::string path = temp_path("kolo_timeline_flush");
  const auto t0 = kolo::Timeline::Clock::now();
  kolo::Timeline timeline;
  timeline.open(path, 0, t0);
  timeline.phase(0, "grad/w", "ALLREDUCE", t0 + 1ms, t0 + 2ms);
  timeline.flush();
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const json doc = json::parse(text + "]");
  CHECK(phases_on(doc, lane_of(lanes_of(doc, 0), "grad/w")) == std::vector<std::string>{"ALLREDUCE"});
  timeline.close();
  std::remove(path.c_str());
}

TEST_CASE("flush_if_written writes out the events since the last flush", "[timeline]") {
  const std::string path = temp_path("kolo_timeline_flush_if_written");
  const auto t0 = kolo::Timeline::Clock::now();
  kolo::Timeline timeline;
  timeline.flush_if_written();  // not open: nothing
  timeline.open(path, 0, t0);
  timeline.phase(0, "grad/w", "ALLREDUCE", t0 + 1ms, t0 + 2ms);  // 1 ms after the open: not flushed by time
  timeline.flush_if_written();
  const auto on_disk = [&] {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const json doc = json::parse(on_disk() + "]");
  CHECK(phases_on(doc, lane_of(lanes_of(doc, 0), "grad/w")) == std::vector<std::string>{"ALLREDUCE"});
  timeline.close();
  std::remove(path.c_str());
}

TEST_CASE("cycle markers are global instant CYCLE_START events at the cycles' times", "[timeline]") {
  const std::string path = temp_path("kolo_timeline_cycles");
  {
    kolo::Timeline tl;
    tl.cycle_start(kolo::Timeline::Clock::now());  // not open: nothing
    tl.open(path, 0, kolo::Timeline::Clock::now(), /*mark_cycles=*/true);
    const auto t0 = kolo::Timeline::Clock::now();
    tl.cycle_start(t0 + 1ms);
    tl.phase(0, "grad/w", "ALLREDUCE", t0 + 1ms, t0 + 2ms);
    tl.cycle_start(t0 + 3ms);
  }
  const json doc = read_json(path);
  std::filesystem::remove(path);
  std::vector<double> marks;
  for (const json& e : doc) {
    if (e.at("name") != "CYCLE_START") continue;
    CHECK(e.at("ph") == "i");
    CHECK(e.at("s") == "g");  // drawn across every lane
    CHECK(e.at("pid") == 0);
    marks.push_back(e.at("ts").get<double>());
  }
  REQUIRE(marks.size() == 2);
  CHECK(marks[1] - marks[0] == Approx(2000).margin(0.01));
}

TEST_CASE("a timeline opened without mark_cycles has no cycle markers, reopened, a new file", "[timeline]") {
  const std::string first = temp_path("kolo_timeline_first"), second = temp_path("kolo_timeline_second");
  {
    kolo::Timeline tl;
    tl.open(first, 0);
    CHECK_FALSE(tl.marks_cycles());
    tl.cycle_start(kolo::Timeline::Clock::now());
    tl.phase(0, "a", "ALLREDUCE", kolo::Timeline::Clock::now(), kolo::Timeline::Clock::now());
    tl.open(second, 0, kolo::Timeline::Clock::now(), true);  // closes the first
    CHECK(tl.marks_cycles());
    tl.phase(0, "b", "ALLREDUCE", kolo::Timeline::Clock::now(), kolo::Timeline::Clock::now());
  }
  const json a = read_json(first), b = read_json(second);
  std::filesystem::remove(first);
  std::filesystem::remove(second);
  for (const json& e : a) CHECK(e.at("name") != "CYCLE_START");
  CHECK(a.size() == 4);  // process name, fused lane, a's lane, its event
  CHECK(lane_of(lanes_of(b, 0), "a") < 0);
  CHECK(lane_of(lanes_of(b, 0), "b") > 0);
}

TEST_CASE("rank 0 writes the timeline, every rank when the path names {rank}", "[timeline]") {
  CHECK(kolo::timeline_file_of("tl.json", 0) == "tl.json");
  CHECK_FALSE(kolo::timeline_file_of("tl.json", 1));
  CHECK_FALSE(kolo::timeline_file_of("", 0));
  CHECK(kolo::timeline_file_of("/tmp/tl.{rank}.json", 0) == "/tmp/tl.0.json");
  CHECK(kolo::timeline_file_of("/tmp/{rank}/tl.{rank}.json", 12) == "/tmp/12/tl.12.json");
  CHECK(kolo::timeline_file_of("{rank}", 3) == "3");
}

TEST_CASE("timeline open fails with a kolo::Error naming the path", "[timeline]") {
  kolo::Timeline tl;
  const std::string path = "/nonexistent-dir-kolo/sub/timeline.json";
  try {
    tl.open(path, 0);
    FAIL("opened " << path);
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::IoError);
    CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains(path));
  }
  CHECK_FALSE(tl.enabled());

  // A path that cannot be written leaves a running timeline running.
  const std::string good = temp_path("kolo_timeline_kept");
  tl.open(good, 0);
  CHECK_THROWS_AS(tl.open(path, 0), kolo::Error);
  CHECK(tl.enabled());
  const auto t0 = kolo::Timeline::Clock::now();
  tl.phase(0, "after", "ALLREDUCE", t0, t0 + 1ms);
  tl.close();
  std::ifstream in(good);
  CHECK(json::parse(in).dump().find("\"after\"") != std::string::npos);  // its lane
  std::remove(good.c_str());
}

TEST_CASE("timeline destructor completes the JSON array", "[timeline]") {
  const std::string path = temp_path("kolo_timeline_dtor");
  {
    kolo::Timeline tl;
    tl.open(path, 0);
    tl.phase(0, "x", "BROADCAST", kolo::Timeline::Clock::now(), kolo::Timeline::Clock::now());
  }
  const json doc = read_json(path);
  std::filesystem::remove(path);
  CHECK(doc.is_array());
  CHECK(doc.size() == 4);  // process name, fused lane, x's lane, the event
}

// The file a real run wrote (see tests/runtime/timeline_writer.cc and
// tests/runtime/CMakeLists.txt).
TEST_CASE("timeline of a two-rank run has per-tensor phases and fused groups", "[.][timeline-file]") {
  const char* path = std::getenv("KOLO_TOOL_TEST_TIMELINE_FILE");
  REQUIRE(path != nullptr);
  INFO("timeline file " << path);
  const json doc = read_json(path);
  REQUIRE(doc.is_array());
  REQUIRE(doc.size() > 10);
  for (const json& e : doc) {
    REQUIRE(e.contains("name"));
    REQUIRE(e.contains("ph"));
    CHECK(e.at("pid") == 0);  // rank 0 writes the timeline
    if (e.at("ph") == "X") {
      CHECK(e.at("ts").get<double>() >= 0);
      CHECK(e.at("dur").get<double>() >= 0);
    }
  }
  const auto lanes = lanes_of(doc, 0);

  // An unfused allreduce: negotiation, waiting, the collective, in that order in time.
  const int big = lane_of(lanes, "tl/big");
  REQUIRE(big > 0);
  const auto big_phases = phases_on(doc, big);
  CHECK(contains(big_phases, "NEGOTIATE_ALLREDUCE"));
  CHECK(contains(big_phases, "WAIT_FOR_OTHERS"));
  CHECK(contains(big_phases, "ALLREDUCE"));
  double negotiate_ts = -1, allreduce_ts = -1;
  for (const json& e : doc) {
    if (e.at("ph") != "X" || e.at("tid") != big) continue;
    if (e.at("name") == "NEGOTIATE_ALLREDUCE" && negotiate_ts < 0) negotiate_ts = e.at("ts");
    if (e.at("name") == "ALLREDUCE" && allreduce_ts < 0) allreduce_ts = e.at("ts");
  }
  CHECK(negotiate_ts <= allreduce_ts);
  for (const json& e : doc)  // its phases carry its size: 2^20 float32 values
    if (e.at("ph") == "X" && e.at("tid") == big && e.at("name") == "ALLREDUCE")
      CHECK(e.at("args").at("bytes") == 4 << 20);

  // Small tensors: fused, with memcpy phases, and a FUSED event listing them, never more
  // bytes than the run's KOLO_FUSION_THRESHOLD.
  const char* threshold_text = std::getenv("KOLO_TOOL_TEST_FUSION_THRESHOLD");
  const int64_t threshold = threshold_text ? std::atoll(threshold_text) : int64_t{64} << 20;
  std::set<std::string> fused_members;
  for (const json& e : doc) {
    if (e.at("ph") != "X" || e.at("name") != "FUSED") continue;
    CHECK(e.at("tid") == 0);
    CHECK(e.at("args").at("bytes").get<int64_t>() > 0);
    CHECK(e.at("args").at("bytes").get<int64_t>() <= threshold);
    const auto tensors = e.at("args").at("tensors").get<std::vector<std::string>>();
    CHECK(tensors.size() >= 2);
    fused_members.insert(tensors.begin(), tensors.end());
  }
  REQUIRE_FALSE(fused_members.empty());
  int small_with_memcpy = 0;
  for (const std::string& name : fused_members) {
    CHECK(name.rfind("tl/small/", 0) == 0);
    const int tid = lane_of(lanes, name);
    REQUIRE(tid > 0);
    const auto phases = phases_on(doc, tid);
    CHECK(contains(phases, "NEGOTIATE_ALLREDUCE"));
    CHECK(contains(phases, "ALLREDUCE"));
    if (contains(phases, "MEMCPY_IN") && contains(phases, "MEMCPY_OUT")) ++small_with_memcpy;
  }
  CHECK(small_with_memcpy == static_cast<int>(fused_members.size()));

  // HOROVOD_TIMELINE_MARK_CYCLES=1 (set by CTest): the cycles are marked, in time order.
  std::vector<double> marks;
  for (const json& e : doc)
    if (e.at("name") == "CYCLE_START" && e.at("ph") == "i") marks.push_back(e.at("ts").get<double>());
  REQUIRE(marks.size() >= 10);
  CHECK(std::is_sorted(marks.begin(), marks.end()));
  // A collective runs inside a cycle, so a cycle began before it. (NEGOTIATE_ALLREDUCE starts at
  // the submission, which may come before the background thread's first cycle.)
  CHECK(marks.front() <= allreduce_ts);

  // The other collectives have their own phase names.
  const int bcast = lane_of(lanes, "tl/bcast"), gather = lane_of(lanes, "tl/gather");
  REQUIRE(bcast > 0);
  REQUIRE(gather > 0);
  CHECK(contains(phases_on(doc, bcast), "NEGOTIATE_BROADCAST"));
  CHECK(contains(phases_on(doc, bcast), "BROADCAST"));
  CHECK(contains(phases_on(doc, gather), "NEGOTIATE_ALLGATHER"));
  CHECK(contains(phases_on(doc, gather), "ALLGATHER"));
}
