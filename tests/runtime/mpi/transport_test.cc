// The MPI transport on its own, beside the runtime kolo::init() made: a process set gets a
// transport of its own, numbered from 0, whose collectives involve its ranks only.
#include "runtime/mpi_transport.h"
#include "support/mpi_util.h"

TEST_CASE("MPI transport: a process set of the even ranks reduces among them only, numbered from 0",
          "[transport][subset]") {
  kolo::Config config;
  config.control_timeout_seconds = 60;
  kolo::MpiTransport world(MPI_COMM_WORLD, config, kolo::steady_clock());
  const int n = world.size(), r = world.rank();
  REQUIRE(n == kolo_test::size());
  std::vector<int> evens;
  for (int q = 0; q < n; q += 2) evens.push_back(q);
  std::unique_ptr<kolo::Transport> set = world.subset(evens);
  CHECK((set != nullptr) == (r % 2 == 0));
  if (set) {
    CHECK(set->rank() == r / 2);
    CHECK(set->size() == int(evens.size()));
    int64_t value = r + 1;
    set->make_host_backend({})->allreduce(&value, &value, 1, kolo::DType::Int64, kolo::ReduceOp::Sum);
    int64_t want = 0;
    for (int q : evens) want += q + 1;
    CHECK(value == want);
    std::string message = set->rank() == 0 ? "from the set's rank 0" : "";
    set->control().broadcast(message, 0);
    CHECK(message == "from the set's rank 0");
  }
  CHECK_THROWS_WITH(world.subset(std::vector<int>{n}), Catch::Matchers::Contains("names rank"));
  kolo_test::world_barrier();
}
