#include <catch2/catch.hpp>

#include "hosts.h"
#include "kolo/kolo.h"

using namespace kolo::launcher;
using Catch::Matchers::Contains;

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
  CHECK_THROWS_WITH(parse_host_list("a:0"), Contains("bad slot count '0'"));
  CHECK_THROWS_WITH(parse_host_list("a:2,"), Contains("empty entry"));
  CHECK_THROWS_WITH(parse_host_list(":2"), Contains("empty host name"));
  CHECK_THROWS_AS(parse_host_list(""), kolo::Error);
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
  CHECK_THROWS_WITH(read_hostfile("/nonexistent/kolo-hostfile"), Contains("cannot read"));
}
