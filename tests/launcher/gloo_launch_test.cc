// kolorun --gloo's plan of workers and what it tells each (launcher/gloo_launch.h).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "gloo_launch.h"

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
