// The coordinator's negotiation logic, driven in-process: readiness, joined ranks,
// mismatch errors, grouped release, and the stall inspector.
#include <catch2/catch.hpp>

#include <chrono>

#include "kolo/kolo.h"
#include "runtime/coordinator.h"

using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

using Clock = kolo::Coordinator::Clock;

kolo::Request allreduce(std::string name, std::vector<int64_t> shape = {4},
                        kolo::DType dtype = kolo::DType::Float32,
                        kolo::ReduceOp op = kolo::ReduceOp::Sum) {
  kolo::Request r;
  r.name = std::move(name);
  r.type = kolo::OpType::Allreduce;
  r.dtype = dtype;
  r.op = op;
  r.shape = std::move(shape);
  return r;
}

kolo::Request of_type(std::string name, kolo::OpType type, std::vector<int64_t> shape = {4}) {
  kolo::Request r = allreduce(std::move(name), std::move(shape));
  r.type = type;
  return r;
}

kolo::RequestList list_of(std::vector<kolo::Request> requests, bool joined = false) {
  kolo::RequestList l;
  l.requests = std::move(requests);
  l.joined = joined;
  return l;
}

std::vector<std::string> names_of(const std::vector<kolo::Response>& responses) {
  std::vector<std::string> names;
  for (const auto& r : responses)
    for (const auto& n : r.names) names.push_back(n);
  return names;
}

// Submits `per_rank[r]` from rank r and returns the one response that results.
kolo::Response single_response(const std::vector<kolo::Request>& per_rank) {
  kolo::Coordinator c(static_cast<int>(per_rank.size()));
  const auto now = Clock::now();
  for (int r = 0; r < static_cast<int>(per_rank.size()); ++r) c.add(r, list_of({per_rank[r]}), now);
  auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(c.empty());
  return ready[0];
}

}  // namespace

TEST_CASE("coordinator releases a tensor only once every rank submitted it", "[coordinator]") {
  kolo::Coordinator c(3);
  const auto now = Clock::now();
  c.add(0, list_of({allreduce("t")}), now);
  CHECK(c.take_ready().empty());
  c.add(2, list_of({allreduce("t")}), now);
  CHECK(c.take_ready().empty());
  CHECK_FALSE(c.empty());
  c.add(1, list_of({allreduce("t")}), now);
  const auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == kolo::Response::Kind::Run);
  CHECK(ready[0].type == kolo::OpType::Allreduce);
  CHECK(ready[0].names == std::vector<std::string>{"t"});
  CHECK(ready[0].element_counts == std::vector<int64_t>{4});
  CHECK(c.empty());
  CHECK(c.take_ready().empty());  // released once
}

TEST_CASE("coordinator releases tensors in the order they were first submitted", "[coordinator]") {
  kolo::Coordinator c(2);
  const auto now = Clock::now();
  c.add(0, list_of({allreduce("c"), allreduce("a"), allreduce("b")}), now);
  c.add(1, list_of({allreduce("b"), allreduce("a")}), now);
  CHECK(names_of(c.take_ready()) == std::vector<std::string>{"a", "b"});
  c.add(1, list_of({allreduce("c")}), now);
  CHECK(names_of(c.take_ready()) == std::vector<std::string>{"c"});
}

TEST_CASE("coordinator copies the parameters of the request into the response", "[coordinator]") {
  kolo::Request r = allreduce("p", {2, 3}, kolo::DType::BFloat16, kolo::ReduceOp::Average);
  r.prescale = 0.5;
  r.postscale = 4;
  const kolo::Response resp = single_response({r, r});
  CHECK(resp.dtype == kolo::DType::BFloat16);
  CHECK(resp.op == kolo::ReduceOp::Average);
  CHECK(resp.prescale == 0.5);
  CHECK(resp.postscale == 4);
  CHECK(resp.element_counts == std::vector<int64_t>{6});

  kolo::Request b = of_type("b", kolo::OpType::Broadcast);
  b.root = 1;
  CHECK(single_response({b, b}).root == 1);
}

TEST_CASE("coordinator counts joined ranks as submitted for allreduce only", "[coordinator]") {
  kolo::Coordinator c(3);
  const auto now = Clock::now();
  c.add(2, list_of({}, /*joined=*/true), now);
  CHECK(c.joined(2));
  CHECK_FALSE(c.joined(0));
  c.add(0, list_of({allreduce("x"), of_type("bc", kolo::OpType::Broadcast)}), now);
  CHECK(c.take_ready().empty());  // rank 1 has not submitted
  c.add(1, list_of({allreduce("x"), of_type("bc", kolo::OpType::Broadcast)}), now);
  const auto ready = c.take_ready();
  REQUIRE(ready.size() == 2);
  CHECK(ready[0].names == std::vector<std::string>{"x"});
  CHECK(ready[0].kind == kolo::Response::Kind::Run);
  CHECK(ready[0].element_counts == std::vector<int64_t>{4});
  // A broadcast cannot run while a rank has joined: an error naming the joined rank.
  CHECK(ready[1].names == std::vector<std::string>{"bc"});
  CHECK(ready[1].kind == kolo::Response::Kind::Error);
  CHECK(ready[1].error_code == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(ready[1].error_message, Contains("'bc'") && Contains("2") && Contains("joined"));

  // Un-joining: the rank counts as absent again.
  c.add(2, list_of({}, false), now);
  c.add(0, list_of({allreduce("y")}), now);
  c.add(1, list_of({allreduce("y")}), now);
  CHECK(c.take_ready().empty());
}

TEST_CASE("coordinator reports a shape mismatch naming tensor, field and ranks", "[coordinator]") {
  const kolo::Response r =
      single_response({allreduce("w", {4}), allreduce("w", {5}), allreduce("w", {5})});
  CHECK(r.kind == kolo::Response::Kind::Error);
  CHECK(r.error_code == kolo::StatusCode::Mismatch);
  CHECK(r.names == std::vector<std::string>{"w"});
  CHECK_THAT(r.error_message, Contains("'w'") && Contains("shape"));
  CHECK_THAT(r.error_message, Contains("rank 0 gave [4]") && Contains("ranks 1, 2 gave [5]"));
}

TEST_CASE("coordinator reports dtype, op, root and prescale mismatches", "[coordinator]") {
  SECTION("dtype") {
    const auto r = single_response({allreduce("d", {4}, kolo::DType::Float32),
                                    allreduce("d", {4}, kolo::DType::Float64)});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains("dtype") && Contains("'d'") &&
                                    Contains("rank 0 gave float32") && Contains("rank 1 gave float64"));
  }
  SECTION("op") {
    const auto r = single_response({allreduce("o", {4}, kolo::DType::Float32, kolo::ReduceOp::Sum),
                                    allreduce("o", {4}, kolo::DType::Float32, kolo::ReduceOp::Sum),
                                    allreduce("o", {4}, kolo::DType::Float32, kolo::ReduceOp::Max)});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains(" op ") && Contains("'o'") &&
                                    Contains("ranks 0, 1 gave sum") && Contains("rank 2 gave max"));
  }
  SECTION("root") {
    kolo::Request a = of_type("r", kolo::OpType::Broadcast), b = a;
    a.root = 0;
    b.root = 1;
    const auto r = single_response({a, b, b, a});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains("root") && Contains("'r'") &&
                                    Contains("ranks 0, 3 gave 0") && Contains("ranks 1, 2 gave 1"));
  }
  SECTION("prescale") {
    kolo::Request a = allreduce("s"), b = a;
    b.prescale = 2;
    const auto r = single_response({a, b});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains("prescale") && Contains("'s'") &&
                                    Contains("rank 0 gave 1") && Contains("rank 1 gave 2"));
  }
  SECTION("postscale") {
    kolo::Request a = allreduce("ps"), b = a;
    b.postscale = 0.5;
    const auto r = single_response({a, b});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains("postscale") && Contains("'ps'"));
  }
  SECTION("operation type") {
    const auto r = single_response({allreduce("t"), of_type("t", kolo::OpType::Broadcast)});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains("operation") && Contains("allreduce") && Contains("broadcast"));
  }
  SECTION("broadcast shape") {
    const auto r = single_response({of_type("bs", kolo::OpType::Broadcast, {3}),
                                    of_type("bs", kolo::OpType::Broadcast, {3, 1})});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains("shape") && Contains("[3, 1]"));
  }
  SECTION("reducescatter op") {
    kolo::Request a = of_type("rs", kolo::OpType::Reducescatter), b = a;
    b.op = kolo::ReduceOp::Average;
    const auto r = single_response({a, b});
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains("op") && Contains("average"));
  }
}

TEST_CASE("coordinator lets each rank use its own GPU but not mix CPU and GPU", "[coordinator][gpu]") {
  kolo::Request on0 = allreduce("g"), on1 = on0, cpu = on0;
  on0.device = kolo::Device::cuda(0);
  on1.device = kolo::Device::cuda(1);
  const auto ok = single_response({on0, on1});
  CHECK(ok.kind == kolo::Response::Kind::Run);
  CHECK(ok.device == kolo::Device::cuda(0));
  const auto mixed = single_response({on0, cpu});
  CHECK(mixed.error_code == kolo::StatusCode::Mismatch);
  CHECK_THAT(mixed.error_message, Contains("device") && Contains("rank 0 gave cuda") && Contains("rank 1 gave cpu"));
}

TEST_CASE("coordinator reports a compression mismatch and carries the agreed one", "[coordinator][gpu]") {
  kolo::Request a = allreduce("c"), b = a;
  a.compression = b.compression = kolo::Compression::FP16;
  CHECK(single_response({a, b}).compression == kolo::Compression::FP16);
  b.compression = kolo::Compression::BF16;
  const auto r = single_response({a, b});
  CHECK(r.error_code == kolo::StatusCode::Mismatch);
  CHECK_THAT(r.error_message, Contains("compression") && Contains("rank 0 gave fp16") && Contains("rank 1 gave bf16"));
}

TEST_CASE("coordinator lets allgather first dimensions differ but not the rest", "[coordinator]") {
  const auto ok = single_response({of_type("g", kolo::OpType::Allgather, {1, 3}),
                                   of_type("g", kolo::OpType::Allgather, {0, 3}),
                                   of_type("g", kolo::OpType::Allgather, {5, 3})});
  CHECK(ok.kind == kolo::Response::Kind::Run);
  CHECK(ok.rank_first_dims == std::vector<int64_t>{1, 0, 5});

  const auto bad = single_response({of_type("h", kolo::OpType::Allgather, {1, 3}),
                                    of_type("h", kolo::OpType::Allgather, {1, 4})});
  CHECK(bad.error_code == kolo::StatusCode::Mismatch);
  CHECK_THAT(bad.error_message, Contains("'h'") && Contains("[3]") && Contains("[4]"));

  const auto a2a = single_response({of_type("a", kolo::OpType::Alltoall, {2, 2}),
                                    of_type("a", kolo::OpType::Alltoall, {6, 2})});
  CHECK(a2a.kind == kolo::Response::Kind::Run);
}

TEST_CASE("coordinator releases a group's members together", "[coordinator]") {
  auto member = [](std::string name) {
    kolo::Request r = allreduce(std::move(name));
    r.group = "g/0";
    r.group_size = 3;
    return r;
  };
  kolo::Coordinator c(2);
  const auto now = Clock::now();
  c.add(0, list_of({member("g/0"), member("g/1"), member("g/2"), allreduce("solo")}), now);
  c.add(1, list_of({member("g/0"), member("g/2"), allreduce("solo")}), now);
  // g/1 is missing on rank 1: the group waits, the ungrouped tensor does not.
  CHECK(names_of(c.take_ready()) == std::vector<std::string>{"solo"});
  CHECK_FALSE(c.empty());
  CHECK(c.take_ready().empty());
  c.add(1, list_of({member("g/1")}), now);
  const auto ready = c.take_ready();
  CHECK(names_of(ready) == std::vector<std::string>{"g/0", "g/1", "g/2"});
  for (const auto& r : ready) CHECK(r.kind == kolo::Response::Kind::Run);
  CHECK(c.empty());
}

TEST_CASE("coordinator warns once about a stalled tensor naming missing ranks, then fails it",
          "[coordinator]") {
  kolo::Coordinator c(4);
  const auto t0 = Clock::now();
  c.add(0, list_of({allreduce("stuck")}), t0);
  c.add(2, list_of({allreduce("stuck")}), t0);

  auto early = c.inspect_stalls(t0 + 1s, 5s, 20s);
  CHECK(early.warnings.empty());
  CHECK(early.failures.empty());

  auto warn = c.inspect_stalls(t0 + 6s, 5s, 20s);
  REQUIRE(warn.warnings.size() == 1);
  CHECK_THAT(warn.warnings[0], Contains("'stuck'") && Contains("1, 3"));
  CHECK(warn.failures.empty());
  CHECK(c.inspect_stalls(t0 + 7s, 5s, 20s).warnings.empty());  // warned once only

  auto fail = c.inspect_stalls(t0 + 21s, 5s, 20s);
  REQUIRE(fail.failures.size() == 1);
  const kolo::Response& f = fail.failures[0];
  CHECK(f.kind == kolo::Response::Kind::Error);
  CHECK(f.error_code == kolo::StatusCode::Stalled);
  CHECK(f.names == std::vector<std::string>{"stuck"});
  CHECK_THAT(f.error_message, Contains("'stuck'") && Contains("1, 3"));
  CHECK(c.empty());  // failed tensors are forgotten
}

TEST_CASE("coordinator never fails stalled tensors when fail_after is zero", "[coordinator]") {
  kolo::Coordinator c(2);
  const auto t0 = Clock::now();
  c.add(1, list_of({allreduce("late")}), t0);
  auto report = c.inspect_stalls(t0 + 10000s, 1s, 0s);
  REQUIRE(report.warnings.size() == 1);
  CHECK_THAT(report.warnings[0], Contains("'late'") && Contains("rank(s) 0"));
  CHECK(report.failures.empty());
  CHECK_FALSE(c.empty());
  // It still runs when the missing rank turns up.
  c.add(0, list_of({allreduce("late")}), t0 + 10001s);
  CHECK(names_of(c.take_ready()) == std::vector<std::string>{"late"});
}

TEST_CASE("coordinator does not treat a group member waiting for its group as stalled",
          "[coordinator]") {
  kolo::Request a = allreduce("grp/a"), b = allreduce("grp/b");
  a.group = b.group = "grp/a";
  a.group_size = b.group_size = 2;
  kolo::Coordinator c(2);
  const auto t0 = Clock::now();
  c.add(0, list_of({a, b}), t0);
  c.add(1, list_of({a}), t0);
  auto warned = c.inspect_stalls(t0 + 10s, 1s, 50s);
  // grp/b is missing rank 1 and is reported; grp/a is complete and only waits for grp/b.
  REQUIRE(warned.warnings.size() == 1);
  CHECK_THAT(warned.warnings[0], Contains("grp/b") && Contains("rank(s) 1"));
  // When grp/b fails, grp/a fails with it (the group runs, or fails, as one unit), with a
  // message that says why rather than blaming a rank.
  auto report = c.inspect_stalls(t0 + 100s, 1s, 50s);
  REQUIRE(report.failures.size() == 2);
  CHECK(report.failures[0].names == std::vector<std::string>{"grp/b"});
  CHECK_THAT(report.failures[0].error_message, Contains("rank(s) 1"));
  CHECK(report.failures[1].names == std::vector<std::string>{"grp/a"});
  CHECK_THAT(report.failures[1].error_message, Contains("group"));
}

// Rank 0 groups {a, b}, rank 1 groups {a, c}: 'a' is complete but its group never will be.
// Once the stalled members fail, 'a' must fail too instead of waiting forever.
TEST_CASE("coordinator fails every member of a group whose other members stalled",
          "[coordinator]") {
  auto member = [](std::string name) {
    kolo::Request r = allreduce(std::move(name));
    r.group = "mix/a";
    r.group_size = 2;
    return r;
  };
  kolo::Coordinator c(2);
  const auto t0 = Clock::now();
  c.add(0, list_of({member("mix/a"), member("mix/b")}), t0);
  c.add(1, list_of({member("mix/a"), member("mix/c")}), t0);
  CHECK(c.take_ready().empty());
  std::vector<std::string> failed;
  for (auto t = t0 + 11s; t < t0 + 40s; t += 1s) {
    for (const auto& f : c.inspect_stalls(t, 1s, 10s).failures) {
      CHECK(f.error_code == kolo::StatusCode::Stalled);
      failed.push_back(f.names.at(0));
    }
    for (const auto& r : c.take_ready()) {
      CHECK(r.kind == kolo::Response::Kind::Error);
      failed.push_back(r.names.at(0));
    }
  }
  std::sort(failed.begin(), failed.end());
  CHECK(failed == std::vector<std::string>{"mix/a", "mix/b", "mix/c"});
  CHECK(c.empty());
}

// Scale factors that differ in the last bits printed alike at six digits and passed for equal:
// the ranks then scaled, fused and cached differently (a truncated MPI message, or replicas that
// drift apart with every step).
TEST_CASE("coordinator tells scale factors apart to the last bit", "[coordinator]") {
  for (const bool post : {false, true}) {
    kolo::Request a = allreduce("t"), b = allreduce("t");
    (post ? a.postscale : a.prescale) = 0.5;
    (post ? b.postscale : b.prescale) = 0.5000001;
    const kolo::Response r = single_response({a, b});
    CHECK(r.kind == kolo::Response::Kind::Error);
    CHECK(r.error_code == kolo::StatusCode::Mismatch);
    CHECK_THAT(r.error_message, Contains(post ? "postscale" : "prescale") && Contains("0.5000001"));
    b = a;
    CHECK(single_response({a, b}).kind == kolo::Response::Kind::Run);
  }
}

// Ranks that group different numbers of tensors under one name: each shared member fails at once
// as a mismatch on every rank, instead of running early on some or waiting for a member the
// other ranks never submit.
TEST_CASE("coordinator fails the members of a group whose size differs between ranks", "[coordinator]") {
  auto member = [](std::string name, int group_size) {
    kolo::Request r = allreduce(std::move(name));
    r.group = "a";
    r.group_size = group_size;
    return r;
  };
  for (const bool larger_first : {false, true}) {
    kolo::Coordinator c(2);
    const auto now = Clock::now();
    const int first = larger_first ? 3 : 2, second = larger_first ? 2 : 3;
    c.add(0, list_of({member("a", first), member("b", first)}), now);
    c.add(1, list_of({member("a", second), member("b", second)}), now);
    const auto ready = c.take_ready();
    CHECK(names_of(ready) == std::vector<std::string>{"a", "b"});
    for (const auto& r : ready) {
      CHECK(r.kind == kolo::Response::Kind::Error);
      CHECK(r.error_code == kolo::StatusCode::Mismatch);
      CHECK_THAT(r.error_message, Contains("'a' of 2 tensors") && Contains("'a' of 3 tensors"));
    }
    CHECK(c.empty());
  }
}
