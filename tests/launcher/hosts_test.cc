#include <catch2/catch.hpp>

#include "hosts.h"
#include "kolo/kolo.h"
#include "support/status.h"

using namespace kolo::launcher;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using kolo::StatusCode;
using kolo_test::HasCode;

TEST_CASE("host lists give each host its slots and a bare host one slot", "[hosts]") {
  const std::vector<HostSlots> hosts = parse_host_list("node0:2,node1:4,node2");
  REQUIRE(hosts.size() == 3);
  CHECK(hosts[0].host == "node0");
  CHECK(*hosts[0].slots == 2);
  CHECK(*hosts[1].slots == 4);
  CHECK(hosts[2].host == "node2");
  CHECK(*hosts[2].slots == 1);
  CHECK(*total_slots(hosts) == 7);
  CHECK(format_host_list(hosts) == "node0:2,node1:4,node2:1");
}

TEST_CASE("a bad -H entry is an error naming it", "[hosts]") {
  CHECK_THROWS_WITH(parse_host_list("a:x"), Contains("bad slot count 'x' in 'a:x'"));
  CHECK_THROWS_MATCHES(parse_host_list("node0:0"), kolo::Error,
                       HasCode(StatusCode::InvalidArgument,
                               "kolorun: -H: bad slot count '0' in 'node0:0': the slots must be a whole "
                               "number, 1 or more"));
  CHECK_THROWS_WITH(parse_host_list("a:-1"), Contains("bad slot count '-1'"));
  CHECK_THROWS_WITH(parse_host_list("a:99999999999"), Contains("bad slot count '99999999999'"));
  CHECK_THROWS_WITH(parse_host_list("a:2,"), Contains("entry 2 of 'a:2,' is empty"));
  CHECK_THROWS_WITH(parse_host_list("node0:2,,node1"),
                    Equals("kolorun: -H: entry 2 of 'node0:2,,node1' is empty: expected host or host:slots"));
  CHECK_THROWS_WITH(parse_host_list(",a"), Contains("entry 1 of ',a' is empty"));
  CHECK_THROWS_WITH(parse_host_list(":2"), Contains("empty host name in ':2'"));
  CHECK_THROWS_WITH(parse_host_list("a:1, b:1"), Contains("host name ' b' contains white space"));
  CHECK_THROWS_MATCHES(parse_host_list(""), kolo::Error, HasCode(StatusCode::InvalidArgument, "-H: no hosts given"));
  // Slots are digits only, as -np's count; a second ':' is not a host name mpirun could read.
  CHECK_THROWS_WITH(parse_host_list("a:+2"), Contains("bad slot count '+2'"));
  CHECK_THROWS_WITH(parse_host_list("a: 2"), Contains("bad slot count ' 2'"));
  CHECK_THROWS_WITH(parse_host_list("::1"), Contains("'::1' has more than one ':'"));
  CHECK_THROWS_WITH(parse_host_list("node0:2:3"), Contains("'node0:2:3' has more than one ':'"));
}

TEST_CASE("a host listed twice is an error, in -H and in a hostfile", "[hosts]") {
  CHECK_THROWS_WITH(parse_host_list("node0:2,node0:2"),
                    Equals("kolorun: -H: host 'node0' is listed twice (2 + 2 slots): list each host once, with "
                           "all its slots"));
  CHECK_THROWS_WITH(parse_host_list("a,b,a"), Contains("host 'a' is listed twice (1 + 1 slots)"));
  CHECK_THROWS_WITH(parse_hostfile_text("node0 slots=2\nnode1\nnode1\n", "hostfile 'h'"),
                    Equals("kolorun: hostfile 'h' line 3: host 'node1' is listed twice: list each host once, "
                           "with all its slots"));
  // Different names for one machine are not recognised: mpirun sees two hosts too.
  CHECK(parse_host_list("localhost:1,127.0.0.1:1").size() == 2);
}

TEST_CASE("the total of many slots stops at the largest int", "[hosts]") {
  CHECK(*total_slots(parse_host_list("a:2000000000,b:2000000000")) == 2147483647);
}

TEST_CASE("hostfiles in mpirun's and horovodrun's forms", "[hosts]") {
  const std::vector<HostSlots> hosts = parse_hostfile_text(
      "# the cluster\n"
      "node0 slots=4 max_slots=8\n"
      "\n"
      "node1:2   # horovodrun's form\n"
      "  node2 slots=1\n",
      "hostfile");
  REQUIRE(hosts.size() == 3);
  CHECK(hosts[0].host == "node0");
  CHECK(*hosts[0].slots == 4);
  CHECK(*hosts[1].slots == 2);
  CHECK(*hosts[2].slots == 1);
  CHECK(*total_slots(hosts) == 7);
}

TEST_CASE("a hostfile line without slots leaves the slot count to mpirun", "[hosts]") {
  const std::vector<HostSlots> hosts = parse_hostfile_text("node0 slots=2\nnode1\n", "hostfile");
  CHECK_FALSE(hosts[1].slots.has_value());
  CHECK_FALSE(total_slots(hosts).has_value());
}

TEST_CASE("bad hostfiles are errors naming the file and line", "[hosts]") {
  CHECK_THROWS_WITH(parse_hostfile_text("a slots=2\nb slots=many\n", "hostfile 'h'"),
                    Contains("hostfile 'h' line 2: bad slot count 'many'"));
  CHECK_THROWS_WITH(parse_hostfile_text("# nothing\n\n", "hostfile 'h'"), Contains("no hosts"));
  // A typo mpirun would fail on later, less clearly; max_slots is mpirun's, read and unused.
  CHECK_THROWS_WITH(parse_hostfile_text("a slot=4\n", "hostfile 'h'"),
                    Contains("hostfile 'h' line 1: unknown word 'slot=4'"));
  CHECK_THROWS_WITH(parse_hostfile_text("garbage line here\n", "hostfile 'h'"), Contains("unknown word 'line'"));
  CHECK(parse_hostfile_text("a slots=2 max_slots=4\n", "hostfile 'h'")[0].slots == 2);
  CHECK_THROWS_MATCHES(read_hostfile("/nonexistent/kolo-hostfile"), kolo::Error,
                       HasCode(StatusCode::IoError, "cannot read '/nonexistent/kolo-hostfile': No such file"));
  CHECK_THROWS_MATCHES(parse_hostfile_text("# nothing\n", "hostfile 'h'"), kolo::Error,
                       HasCode(StatusCode::InvalidArgument, "no hosts"));
  CHECK_THROWS_MATCHES(read_hostfile("/tmp"), kolo::Error, HasCode(StatusCode::IoError, "'/tmp' is a directory"));
  // Both forms of slots on one line: which one was meant?
  CHECK_THROWS_WITH(parse_hostfile_text("a:2 slots=3\n", "hostfile 'h'"),
                    Contains("hostfile 'h' line 1: 'a:2' and 'slots=3' both give its slots"));
  // host:N, which mpirun's reader refuses, beside a host whose cores mpirun would count.
  CHECK_THROWS_WITH(parse_hostfile_text("a:1\nb\n", "hostfile 'h'"),
                    Contains("hostfile 'h': line 1 gives its slots as host:N and line 2 gives none"));
}
