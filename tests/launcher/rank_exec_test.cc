// The rank shim's start report (rank_exec.h): what kolorun reads back from every rank.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "rank_exec.h"

using namespace kolo::launcher;

TEST_CASE("a start report gives back the rank's and its parent's pid and start time", "[rank-exec]") {
  const std::string line = format_start_marker({"node1", 4242, 123456, 4100, 120000});
  CHECK(line == "kolorun-rank-started host=node1 pid=4242 start=123456 parent=4100 parent_start=120000");
  const std::optional<RankStart> start = parse_start_marker(line);
  REQUIRE(start);
  CHECK(start->host == "node1");
  CHECK(start->pid == 4242);
  CHECK(start->start_ticks == 123456);
  CHECK(start->parent_pid == 4100);
  CHECK(start->parent_start_ticks == 120000);
}

TEST_CASE("a start report without the parent, or with words it does not know, still parses", "[rank-exec]") {
  // A rank shim of an older kolorun on some host: no parent fields.
  const std::optional<RankStart> old = parse_start_marker("kolorun-rank-started host=vm pid=77 start=5");
  REQUIRE(old);
  CHECK(old->pid == 77);
  CHECK(old->start_ticks == 5);
  CHECK(old->parent_pid == 0);
  CHECK(old->parent_start_ticks == 0);
  const std::optional<RankStart> newer =
      parse_start_marker("kolorun-rank-started host=vm pid=77 start=5 parent=9 parent_start=3 cgroup=x");
  REQUIRE(newer);
  CHECK(newer->parent_pid == 9);
  CHECK(newer->parent_start_ticks == 3);
}

TEST_CASE("a malformed start report is not taken for one", "[rank-exec]") {
  for (const char* line : {"kolorun-rank-started pid=77 start=5",            // no host
                           "kolorun-rank-started host=vm start=5",           // no pid
                           "kolorun-rank-started host=vm pid=77 parent=x",   // a parent that is no number
                           "kolorun-rank-started host=vm pid=seven",         //
                           "rank 1: kolorun-rank-started host=vm pid=77"}) {  // not at the start
    CAPTURE(line);
    CHECK_FALSE(parse_start_marker(line));
  }
}

TEST_CASE("this process is running, and its start time tells a reused pid apart", "[rank-exec]") {
  const long pid = ::getpid();
  const unsigned long long ticks = process_start_ticks(pid);
  REQUIRE(ticks != 0);
  CHECK(rank_still_running({this_host_name(), pid, ticks}));
  CHECK_FALSE(rank_still_running({this_host_name(), pid, ticks + 1}));
  CHECK_FALSE(rank_still_running({this_host_name(), pid, 0}));  // unknown start: never "the same"
}
