// The rendezvous (rendezvous/): the protocol's bytes, the server as the workers of a Gloo
// job meet it, and as strangers do (none of them disturbs the job), and the node topology
// the workers derive from their hosts (runtime/gloo_job.h).
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "rendezvous/client.h"
#include "rendezvous/server.h"
#include "rendezvous/socket.h"
#include "runtime/gloo_job.h"

using namespace kolo::rendezvous;
using Catch::Matchers::Contains;

namespace {

// Worker "nodeA" slot 0 is rank 0 of round 1, slot 1 rank 1; slot 2 has left the job.
class TwoWorkers final : public Membership {
 public:
  Answer place(const std::string& host, int slot, int64_t after_round) override {
    ++asked;
    if (host != "nodeA" || slot > 2) return {Status::Gone, "no such worker"};
    if (slot == 2) return {Status::Gone, "it was removed"};
    if (after_round >= 1) return {Status::Missing, ""};
    return {Status::Ok, to_text(Place{1, slot, 2})};
  }
  int asked = 0;
};

std::string raw_exchange(int port, const std::string& bytes) {
  const Deadline deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  UniqueFd fd = connect_to("127.0.0.1", port, deadline);
  send_all(fd.get(), bytes, deadline, "server");
  return receive_until(fd.get(), deadline, "server", [](const std::string&) { return false; });
}

}  // namespace

TEST_CASE("rendezvous protocol: messages survive encoding, and damaged bytes are refused", "[rendezvous]") {
  const Request request{Kind::Set, make_secret(), "round1/0", std::string("addr\0ess", 8)};
  const std::string bytes = encode(request);
  for (size_t cut = 0; cut < bytes.size(); ++cut) CHECK(parse_request(bytes.substr(0, cut)).state != Parse::Complete);
  const ParsedRequest parsed = parse_request(bytes + "next");
  REQUIRE(parsed.state == Parse::Complete);
  CHECK(parsed.length == bytes.size());
  CHECK((parsed.request.kind == request.kind && parsed.request.key == request.key &&
         parsed.request.value == request.value && same_secret(parsed.request.secret, request.secret)));
  CHECK(parse_request("GET / HTTP/1.1\r\n").state == Parse::Malformed);
  std::string huge_key = bytes;
  huge_key[8 + kSecretBytes + 3] = '\x7f';  // a key length far beyond kMaxKeyBytes
  CHECK_THAT(parse_request(huge_key).why, Contains("key of"));
  std::string bad_kind = bytes;
  bad_kind[5] = 9;
  CHECK_THAT(parse_request(bad_kind).why, Contains("kind 9"));

  const Secret s = make_secret();
  CHECK(secret_from_hex(secret_to_hex(s)) == s);
  CHECK_FALSE(secret_from_hex("abc"));
  CHECK_FALSE(secret_from_hex(std::string(64, 'g')));
  CHECK_FALSE(same_secret(s, make_secret()));

  CHECK(place_from_text(to_text(Place{3, 1, 4})) == Place{3, 1, 4});
  CHECK_FALSE(place_from_text("3 4 4"));  // rank beyond the size
  CHECK_FALSE(place_from_text("3 1 4 extra"));
  CHECK_FALSE(place_from_text("0 0 1"));  // rounds count from 1
}

TEST_CASE("rendezvous server: the job's workers share a store and learn their places", "[rendezvous]") {
  TwoWorkers membership;
  const Secret secret = make_secret();
  Server server(secret, membership);
  Client a({"127.0.0.1", server.port(), secret}), b({"127.0.0.1", server.port(), secret});
  CHECK_FALSE(a.get("round1/0"));
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.set("round1/0", "address of 0");
  });
  CHECK(a.wait_for("round1/0", std::chrono::seconds(10)) == "address of 0");
  later.join();
  CHECK(a.local_address() == "127.0.0.1");
  CHECK(a.wait_for_place("nodeA", 1, 0, std::chrono::seconds(5)) == Place{1, 1, 2});
  CHECK_THROWS_WITH(a.wait_for_place("nodeA", 2, 0, std::chrono::seconds(5)), Contains("it was removed"));
  CHECK_THROWS_WITH(a.wait_for_place("nodeA", 0, 1, std::chrono::milliseconds(300)),
                    Contains("got no place in the job"));
  CHECK_THROWS_WITH(a.wait_for("round1/never", std::chrono::milliseconds(200)), Contains("no worker published"));
  server.forget("round1/");
  CHECK_FALSE(a.get("round1/0"));
}

TEST_CASE("rendezvous server: strangers, wrong secrets and malformed bytes are refused, the job goes on",
          "[rendezvous]") {
  TwoWorkers membership;
  const Secret secret = make_secret();
  Server server(secret, membership, "", 0, std::chrono::milliseconds(300));
  Client worker({"127.0.0.1", server.port(), secret});
  worker.set("round1/0", "the real address");

  // Another job's worker: refused, and it learns why; nothing of the job changes.
  Client stranger({"127.0.0.1", server.port(), make_secret()});
  CHECK_THROWS_WITH(stranger.set("round1/0", "an impostor's address"), Contains("refused this worker's secret"));
  CHECK_THROWS_WITH(stranger.wait_for_place("nodeA", 0, 0, std::chrono::seconds(1)), Contains("refused"));
  // Bytes that are no request (a web browser, a port scanner): the connection is closed.
  CHECK(raw_exchange(server.port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n").empty());
  // A connection that never finishes its request is closed after the bound, while the
  // job's requests are served meanwhile.
  UniqueFd idle = connect_to("127.0.0.1", server.port(), std::chrono::steady_clock::now() + std::chrono::seconds(5));
  send_all(idle.get(), "KOLR", std::chrono::steady_clock::now() + std::chrono::seconds(5), "server");
  CHECK(worker.get("round1/0") == "the real address");
  CHECK(receive_until(idle.get(), std::chrono::steady_clock::now() + std::chrono::seconds(5), "server",
                      [](const std::string&) { return false; }) == "");

  const Server::Counts counts = server.counts();
  CHECK(counts.refused == 2);
  CHECK(counts.malformed == 1);
  CHECK(counts.timed_out == 1);
  CHECK(membership.asked == 0);  // the stranger's Slot request never reached the membership
  CHECK(worker.wait_for_place("nodeA", 0, 0, std::chrono::seconds(5)) == Place{1, 0, 2});
}

TEST_CASE("Gloo job topology: a host's ranks are a node, cross ranks share a local rank", "[rendezvous][topology]") {
  // Ranks 0, 2 on host a; 1, 3, 4 on host b.
  const std::vector<std::string> hosts = {"a", "b", "a", "b", "b"};
  const kolo::Topology t0 = kolo::topology_from_hosts(hosts, 0), t4 = kolo::topology_from_hosts(hosts, 4),
                       t3 = kolo::topology_from_hosts(hosts, 3);
  CHECK((t0.local_rank == 0 && t0.local_size == 2 && t0.cross_rank == 0 && t0.cross_size == 2));
  CHECK((t3.local_rank == 1 && t3.local_size == 3 && t3.cross_rank == 1 && t3.cross_size == 2));
  // Local rank 2 exists on host b only.
  CHECK((t4.local_rank == 2 && t4.local_size == 3 && t4.cross_rank == 0 && t4.cross_size == 1));
  CHECK_FALSE(t0.homogeneous);
  CHECK(kolo::topology_from_hosts({"x", "x", "y", "y"}, 2).homogeneous);
}
