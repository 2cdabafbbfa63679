#include <catch2/catch.hpp>

#include "elastic_driver.h"
#include "kolo/kolo.h"
#include "support/status.h"

using namespace kolo::launcher;
using Catch::Matchers::Contains;
using kolo::StatusCode;
using kolo_test::HasCode;

TEST_CASE("a discovery script's lines give hosts and slots, comments and blanks skipped", "[elastic]") {
  const std::vector<HostSlots> hosts = parse_discovered_hosts("node0:2\n# a comment\n\n  node1  \nnode2:4 # x\n", 3);
  REQUIRE(hosts.size() == 3);
  CHECK((hosts[0].host == "node0" && *hosts[0].slots == 2));
  CHECK((hosts[1].host == "node1" && *hosts[1].slots == 3));  // --slots-per-host
  CHECK((hosts[2].host == "node2" && *hosts[2].slots == 4));
  CHECK_THROWS_MATCHES(parse_discovered_hosts("node0\nnode0:2\n", 1), kolo::Error, HasCode(StatusCode::InvalidArgument));
  CHECK_THROWS_WITH(parse_discovered_hosts("node0\nnode1,node2\n", 1), Contains("line 2 'node1,node2' is not one host"));
}

TEST_CASE("a failed host's cooldown backs off as horovodrun's: MIN 2^n plus a fraction of MIN, within the range",
          "[elastic]") {
  CHECK(cooldown_seconds(10, 100, 1, 0.0) == 20);   // the first: 2-3 MIN
  CHECK(cooldown_seconds(10, 100, 1, 0.5) == 25);
  CHECK(cooldown_seconds(10, 100, 2, 0.5) == 45);   // the second: about twice as long
  CHECK(cooldown_seconds(10, 100, 4, 0.0) == 100);  // capped at MAX
  CHECK(cooldown_seconds(1, 2, 1, 0.9) == 2);       // Horovod's own test's range: 2 s
  CHECK(cooldown_seconds(0, 5, 3, 0.9) == 0);       // MIN 0: back at once
  CHECK(cooldown_seconds(1, 3600, 1000, 0.0) == 3600);  // no overflow for a host that keeps failing
}
