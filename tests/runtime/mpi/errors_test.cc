// Errors never hang: names in flight, bad local arguments, waits on unfinished handles; the
// stall inspector ([stall], run by its own CTest entry with short stall settings). The
// mismatches between ranks and the first stall test are scenarios (scenarios_test.cc).
#include <cstdlib>
#include <memory>

#include "support/mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;
using Catch::Matchers::Contains;

namespace {

bool need_two_ranks() {
  if (size() >= 2) return true;
  WARN("skipped: needs at least 2 ranks");
  return false;
}

}  // namespace

TEST_CASE("submitting a name that is still in flight is an error", "[errors][inflight]") {
  if (!need_two_ranks()) return;
  // Rank r's own name cannot complete before the other ranks submit it, which they do
  // only after everybody has tried the duplicate.
  const std::string own = "err/inflight/" + std::to_string(rank());
  std::vector<float> first(3, float(rank())), second(3, -1.0f);
  kolo::Handle h1 = kolo::allreduce_async(own, kolo::view(first), {ReduceOp::Sum});
  kolo::Handle h2 = kolo::allreduce_async(own, kolo::view(second), {ReduceOp::Sum});
  CHECK(h2.ready());  // refused in the call, not a cycle later
  const kolo::Status s = finish(h2);
  INFO(s.message());
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Contains(own) && Contains("in flight"));
  CHECK(second == std::vector<float>(3, -1.0f));
  CHECK_FALSE(h1.ready());
  world_barrier();

  std::vector<std::vector<float>> theirs(size());
  std::vector<kolo::Handle> handles(size());
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    theirs[r].assign(3, float(rank()));
    handles[r] = kolo::allreduce_async("err/inflight/" + std::to_string(r), kolo::view(theirs[r]), {ReduceOp::Sum});
  }
  require_ok(h1, own);
  CHECK(first == std::vector<float>(3, float(size() * (size() - 1) / 2)));
  for (int r = 0; r < size(); ++r)
    if (r != rank()) require_ok(handles[r]);
}

TEST_CASE("a group that repeats a name is rejected on every member", "[errors][inflight]") {
  std::vector<float> a(2), b(2);
  const auto handles = kolo::grouped_allreduce_async({"err/dupgroup", "err/dupgroup"}, {kolo::view(a), kolo::view(b)},
                                                     {kolo::view(a), kolo::view(b)});
  REQUIRE(handles.size() == 2);
  for (const auto& h : handles) {
    const kolo::Status s = finish(h);
    CHECK(s.code() == kolo::StatusCode::InvalidArgument);
    CHECK_THAT(s.message(), Contains("err/dupgroup"));
  }
  world_barrier();  // nobody may still be negotiating err/dupgroup
}

TEST_CASE("bad local arguments fail at once with InvalidArgument (Unsupported where the build lacks it)",
          "[errors][local]") {
  std::vector<float> f(4);
  std::vector<double> d(4);
  std::vector<float> f5(5);
  struct Bad {
    const char* what;
    kolo::Handle h;
    std::string part;
    kolo::StatusCode code = kolo::StatusCode::InvalidArgument;
  };
  std::vector<Bad> bad;
  bad.push_back({"null data", kolo::allreduce_async("bad/null", kolo::TensorView{nullptr, DType::Float32, {4}}),
                 "bad/null"});
  bad.push_back({"negative dimension",
                 kolo::allreduce_async("bad/negative", kolo::TensorView{f.data(), DType::Float32, {2, -2}}),
                 "negative"});
  bad.push_back({"an op outside the enum (Python's op=99)",
                 kolo::allreduce_async("bad/op", kolo::view(f), {static_cast<ReduceOp>(99)}), "unknown reduction op 99"});
  bad.push_back({"a compression outside the enum",
                 kolo::allreduce_async("bad/compression", kolo::view(f),
                                       {ReduceOp::Sum, 1.0, 1.0, static_cast<kolo::Compression>(7)}),
                 "unknown compression 7"});
  bad.push_back({"reducescatter with an op outside the enum",
                 kolo::reducescatter_async("bad/rsop", kolo::view(f), static_cast<ReduceOp>(-1)),
                 "unknown reduction op -1"});
  bad.push_back({"input and output dtypes differ",
                 kolo::allreduce_async("bad/dtypes", kolo::view(f), kolo::view(d), {ReduceOp::Sum}), "float64"});
  bad.push_back({"input and output sizes differ",
                 kolo::allreduce_async("bad/sizes", kolo::view(f), kolo::view(f5), {ReduceOp::Sum}), "bad/sizes"});
  bad.push_back({"GPU memory on the MPI backend",
                 kolo::allreduce_async("bad/gpu", kolo::TensorView{f.data(), DType::Float32, {4}, kolo::Device::cuda(0)}),
                 "bad/gpu",
                 // host memory is no GPU tensor; a build without CUDA has no GPU path at all
                 kolo::build_info().cuda ? kolo::StatusCode::InvalidArgument : kolo::StatusCode::Unsupported});
  bad.push_back({"broadcast root too large", kolo::broadcast_async("bad/root", kolo::view(f), size()), "root"});
  bad.push_back({"broadcast root negative", kolo::broadcast_async("bad/root", kolo::view(f), -1), "root"});
  bad.push_back({"broadcast null data", kolo::broadcast_async("bad/bnull", kolo::TensorView{nullptr, DType::Int8, {3}}, 0),
                 "bad/bnull"});
  bad.push_back({"allgather of a scalar",
                 kolo::allgather_async("bad/gather", kolo::TensorView{f.data(), DType::Float32, {}}), "bad/gather"});
  bad.push_back({"allgather negative dimension",
                 kolo::allgather_async("bad/gneg", kolo::TensorView{f.data(), DType::Float32, {-1, 4}}), "negative"});
  for (const Bad& b : bad) {
    INFO(b.what);
    const kolo::Status s = immediate_failure(b.h);
    INFO("message: " << s.message());
    CHECK(s.code() == b.code);
    CHECK_THAT(s.message(), Contains(b.part));
  }
  CHECK_THROWS_AS(kolo::allreduce("bad/blocking", kolo::TensorView{nullptr, DType::Float32, {1}}), kolo::Error);
  CHECK_THROWS_AS(kolo::broadcast("bad/blocking", kolo::view(f), size() + 3), kolo::Error);
}

TEST_CASE("an empty handle reports an error instead of blocking", "[errors]") {
  kolo::Handle empty;
  CHECK_FALSE(empty.valid());
  CHECK(empty.ready());
  CHECK(empty.wait().code() == kolo::StatusCode::InvalidArgument);
  CHECK(empty.wait_for(std::chrono::milliseconds(1)).code() == kolo::StatusCode::InvalidArgument);
  CHECK(empty.output().data == nullptr);
  CHECK(empty.received_splits().empty());
}

TEST_CASE("wait_for reports Pending while other ranks have not submitted", "[errors]") {
  if (!need_two_ranks()) return;
  std::vector<float> v(2, 1.0f);
  kolo::Handle h;
  if (rank() == 0) {
    h = kolo::allreduce_async("err/pending", kolo::view(v), {ReduceOp::Sum});
    const kolo::Status s = h.wait_for(std::chrono::milliseconds(200));
    CHECK(s.code() == kolo::StatusCode::Pending);
    CHECK_FALSE(h.ready());
  }
  world_barrier();
  if (rank() != 0) h = kolo::allreduce_async("err/pending", kolo::view(v), {ReduceOp::Sum});
  require_ok(h);
  CHECK(v == std::vector<float>(2, float(size())));
}

// milliseconds::max() is a common "for ever": now + max overflowed into a deadline in the past,
// and wait_for returned Pending at once.
TEST_CASE("wait_for with a timeout past the clock's range waits for the result", "[errors]") {
  std::vector<float> v(2, 1.0f);
  kolo::Handle h = kolo::allreduce_async("err/forever", kolo::view(v), {ReduceOp::Sum});
  CHECK(h.wait_for(std::chrono::milliseconds::max()).ok());
  CHECK(v == std::vector<float>(2, float(size())));
}

// init() on a running kolo does nothing, as Horovod's does: a static set it would have had to
// add was silently missing afterwards.
TEST_CASE("init() while kolo runs refuses a process set it does not have", "[errors]") {
  CHECK_NOTHROW(kolo::init());
  CHECK_NOTHROW(kolo::init(std::vector<std::vector<int>>{}));
  try {
    kolo::init({{0}});
    FAIL("a second init() with a new process set passed");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    CHECK_THAT(e.what(), Contains("[0]") && Contains("already running"));
  }
  CHECK(kolo::process_sets().size() == 1);
  CHECK(kolo::is_initialized());
}

// ---- stall inspector (its own CTest entry: KOLO_STALL_CHECK_TIME_SECONDS=1,
// KOLO_STALL_SHUTDOWN_TIME_SECONDS=3) ---------------------------------------------------

double stall_fail_after() {
  const char* check = std::getenv("KOLO_STALL_CHECK_TIME_SECONDS");
  const char* shutdown = std::getenv("KOLO_STALL_SHUTDOWN_TIME_SECONDS");
  REQUIRE(check != nullptr);
  REQUIRE(shutdown != nullptr);
  return std::atof(shutdown);
}

TEST_CASE("stall: a cached tensor missing on one rank also fails as Stalled", "[.][stall]") {
  REQUIRE(size() >= 2);
  const double fail_after = stall_fail_after();
  std::vector<float> v(4);
  for (int round = 0; round < 2; ++round) {  // cached everywhere
    std::fill(v.begin(), v.end(), 1.0f);
    require_ok(kolo::allreduce_async("stall/cached", kolo::view(v), {ReduceOp::Sum}));
  }
  if (rank() == 0) {
    const auto start = std::chrono::steady_clock::now();
    const kolo::Status s = kolo::allreduce_async("stall/cached", kolo::view(v), {ReduceOp::Sum})
                               .wait_for(std::chrono::seconds(30));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(kolo::status_code_name(s.code()) << " after " << took << " s: " << s.message());
    CHECK(s.code() == kolo::StatusCode::Stalled);
    CHECK_THAT(s.message(), Contains("stall/cached") && Contains("rank(s) 1"));
    CHECK(took <= fail_after + 9);
  }
  world_barrier();
  restart_kolo_after_stall();
}

// Rank 0 groups {a, b}, rank 1 groups {a, c}: b and c stall and fail; a is complete but
// its group never will be, so it must fail too rather than wait forever.
TEST_CASE("stall: a grouped tensor whose group cannot complete does not hang", "[.][stall]") {
  REQUIRE(size() >= 2);
  static std::vector<float> a(2, 1.0f), other(2, 1.0f);  // outlive a handle that may hang
  std::vector<kolo::Handle> handles;
  if (rank() <= 1) {
    const std::string second = rank() == 0 ? "stallgroup/b" : "stallgroup/c";
    handles = kolo::grouped_allreduce_async({"stallgroup/a", second}, {kolo::view(a), kolo::view(other)},
                                            {kolo::view(a), kolo::view(other)}, {ReduceOp::Sum});
  }
  for (std::size_t i = 0; i < handles.size(); ++i) {
    const kolo::Status s = handles[i].wait_for(std::chrono::seconds(15));
    INFO("rank " << rank() << " member " << i << ": " << kolo::status_code_name(s.code()) << " " << s.message());
    CHECK(s.code() != kolo::StatusCode::Pending);
    CHECK_FALSE(s.ok());
  }
  world_barrier();
  restart_kolo_after_stall();
}
