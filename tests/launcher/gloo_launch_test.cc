// kolorun --gloo's plan of workers and what it tells each (launcher/gloo_launch.h).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "gloo_launch.h"
#include "runtime/gloo_job.h"

using namespace kolo::launcher;

namespace {

std::map<std::string, std::string> as_map(const std::vector<EnvVar>& variables) {
  std::map<std::string, std::string> out;
  for (const EnvVar& v : variables) out[v.name] = v.value;
  return out;
}

}  // namespace

TEST_CASE("kolorun --gloo tells each worker its place with horovodrun --gloo's variables", "[gloo]") {
  // Host a has three slots, b two: ranks 0-2 on a, 3-4 on b. Slot 2 exists on a only, so
  // its cross set is a alone.
  const std::vector<GlooWorker> workers = plan_gloo_workers(5, {{"a", 3}, {"b", 2}});
  REQUIRE(workers.size() == 5);
  const std::map<std::string, std::string> expected[] = {
      {{"HOROVOD_HOSTNAME", "a"}, {"HOROVOD_RANK", "0"}, {"HOROVOD_SIZE", "5"}, {"HOROVOD_LOCAL_RANK", "0"},
       {"HOROVOD_LOCAL_SIZE", "3"}, {"HOROVOD_CROSS_RANK", "0"}, {"HOROVOD_CROSS_SIZE", "2"}},
      {{"HOROVOD_HOSTNAME", "a"}, {"HOROVOD_RANK", "1"}, {"HOROVOD_SIZE", "5"}, {"HOROVOD_LOCAL_RANK", "1"},
       {"HOROVOD_LOCAL_SIZE", "3"}, {"HOROVOD_CROSS_RANK", "0"}, {"HOROVOD_CROSS_SIZE", "2"}},
      {{"HOROVOD_HOSTNAME", "a"}, {"HOROVOD_RANK", "2"}, {"HOROVOD_SIZE", "5"}, {"HOROVOD_LOCAL_RANK", "2"},
       {"HOROVOD_LOCAL_SIZE", "3"}, {"HOROVOD_CROSS_RANK", "0"}, {"HOROVOD_CROSS_SIZE", "1"}},
      {{"HOROVOD_HOSTNAME", "b"}, {"HOROVOD_RANK", "3"}, {"HOROVOD_SIZE", "5"}, {"HOROVOD_LOCAL_RANK", "0"},
       {"HOROVOD_LOCAL_SIZE", "2"}, {"HOROVOD_CROSS_RANK", "1"}, {"HOROVOD_CROSS_SIZE", "2"}},
      {{"HOROVOD_HOSTNAME", "b"}, {"HOROVOD_RANK", "4"}, {"HOROVOD_SIZE", "5"}, {"HOROVOD_LOCAL_RANK", "1"},
       {"HOROVOD_LOCAL_SIZE", "2"}, {"HOROVOD_CROSS_RANK", "1"}, {"HOROVOD_CROSS_SIZE", "2"}},
  };
  for (const GlooWorker& w : workers) {
    INFO("rank " << w.rank);
    CHECK(as_map(horovod_place_variables(w, workers)) == expected[w.rank]);
  }
}

TEST_CASE("an elastic round's place variables give each worker its slot, unique on its host", "[gloo]") {
  // Slot 0 of host a is empty this round (its worker left); b's two workers joined later.
  // A worker started in slot 0 of a next round must not repeat the survivor's local rank.
  const std::vector<GlooWorker> round = {{0, "a", 1}, {1, "b", 0}, {2, "b", 1}};
  const std::map<std::string, std::string> expected[] = {
      {{"HOROVOD_HOSTNAME", "a"}, {"HOROVOD_RANK", "0"}, {"HOROVOD_SIZE", "3"}, {"HOROVOD_LOCAL_RANK", "1"},
       {"HOROVOD_LOCAL_SIZE", "1"}, {"HOROVOD_CROSS_RANK", "0"}, {"HOROVOD_CROSS_SIZE", "2"}},
      {{"HOROVOD_HOSTNAME", "b"}, {"HOROVOD_RANK", "1"}, {"HOROVOD_SIZE", "3"}, {"HOROVOD_LOCAL_RANK", "0"},
       {"HOROVOD_LOCAL_SIZE", "2"}, {"HOROVOD_CROSS_RANK", "0"}, {"HOROVOD_CROSS_SIZE", "1"}},
      {{"HOROVOD_HOSTNAME", "b"}, {"HOROVOD_RANK", "2"}, {"HOROVOD_SIZE", "3"}, {"HOROVOD_LOCAL_RANK", "1"},
       {"HOROVOD_LOCAL_SIZE", "2"}, {"HOROVOD_CROSS_RANK", "1"}, {"HOROVOD_CROSS_SIZE", "2"}},
  };
  for (const GlooWorker& w : round) {
    INFO("rank " << w.rank);
    CHECK(as_map(horovod_place_variables(w, round)) == expected[w.rank]);
  }
}

TEST_CASE("the place kolorun --gloo tells a worker is the one the runtime takes from the rendezvous", "[gloo]") {
  // kolo's runtime derives its topology from the hosts its workers name (topology_from_hosts);
  // the variables must agree with it for every layout kolorun plans.
  const std::vector<std::vector<HostSlots>> layouts = {
      {{"localhost", 2}}, {{"a", 3}, {"b", 2}}, {{"a", 1}, {"b", 4}, {"c", 2}}, {{"x", 2}, {"y", 2}, {"z", 2}}};
  for (const auto& hosts : layouts) {
    int slots = 0;
    for (const HostSlots& h : hosts) slots += *h.slots;
    const std::vector<GlooWorker> workers = plan_gloo_workers(slots, hosts);
    std::vector<std::string> host_of_rank;
    for (const GlooWorker& w : workers) host_of_rank.push_back(w.host);
    for (const GlooWorker& w : workers) {
      const kolo::Topology t = kolo::topology_from_hosts(host_of_rank, w.rank);
      const std::map<std::string, std::string> told = as_map(horovod_place_variables(w, workers));
      INFO("rank " << w.rank << " on " << w.host << " of " << slots);
      CHECK(told.at("HOROVOD_RANK") == std::to_string(t.rank));
      CHECK(told.at("HOROVOD_SIZE") == std::to_string(t.size));
      CHECK(told.at("HOROVOD_LOCAL_RANK") == std::to_string(t.local_rank));
      CHECK(told.at("HOROVOD_LOCAL_SIZE") == std::to_string(t.local_size));
      CHECK(told.at("HOROVOD_CROSS_RANK") == std::to_string(t.cross_rank));
      CHECK(told.at("HOROVOD_CROSS_SIZE") == std::to_string(t.cross_size));
    }
  }
}

TEST_CASE("a worker on another host gets the variables mpirun's -x would carry, and its own last", "[gloo]") {
  LaunchOptions options;
  options.command = {"train", "--epochs", "1"};
  LaunchContext context;
  context.environment = {"PATH=/usr/bin", "KOLO_CONTROL_TIMEOUT_SECONDS=5", "NCCL_DEBUG=INFO",
                         "HOROVOD_FOO=1", "KOLO_GLOO_RANK=99", "UNRELATED=x"};
  const std::vector<std::string> argv =
      worker_argv({0, "node7", 0}, options, {{"KOLO_GLOO_RANK", "0"}}, context);
  REQUIRE(argv.size() >= 2);
  CHECK(argv[argv.size() - 2] == "node7");
  const std::string& line = argv.back();
  for (const char* carried : {" KOLO_CONTROL_TIMEOUT_SECONDS=5 ", " NCCL_DEBUG=INFO ", " HOROVOD_FOO=1 "})
    CHECK(line.find(carried) != std::string::npos);
  CHECK(line.find("UNRELATED") == std::string::npos);
  CHECK(line.find("KOLO_GLOO_RANK=99") == std::string::npos);  // the worker's own value wins
  CHECK(line.find(" KOLO_GLOO_RANK=0 ") != std::string::npos);
  CHECK(line.substr(line.size() - 17) == " train --epochs 1");
}
