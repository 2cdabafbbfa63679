// The in-process transport on its own (no runtime): every collective against values
// computed here, at 2, 3, 4 and 8 thread-ranks; bounded waits and the CommFailure of a rank
// that never arrives; ranks that call different collectives; process sets; no GPU path;
// the settings record agreed over its control channel.
#include <catch2/catch.hpp>

#include <future>
#include <numeric>
#include <thread>

#include "ops/adasum.h"
#include "runtime/inprocess_transport.h"
#include "runtime/settings_record.h"
#include "support/adasum_reference.h"
#include "support/status.h"
#include "support/values.h"

using Catch::Matchers::Contains;
using kolo_test::HasCode;
using kolo::DType;
using kolo::ReduceOp;
using kolo_test::Buffer;

namespace {

// Runs body(rank) on one thread per rank and returns what each returned (or the message
// of what it threw, prefixed "threw <status code name>: " for a kolo::Error, "threw: "
// otherwise). Catch's checks are made afterwards, on this thread.
template <typename Body>
std::vector<std::string> on_every_rank(int size, Body body) {
  std::vector<std::future<std::string>> results;
  for (int r = 0; r < size; ++r)
    results.push_back(std::async(std::launch::async, [&body, r]() -> std::string {
      try {
        return body(r);
      } catch (const kolo::Error& e) {
        return std::string("threw ") + kolo::status_code_name(e.code()) + ": " + e.what();
      } catch (const std::exception& e) {
        return std::string("threw: ") + e.what();
      }
    }));
  std::vector<std::string> out;
  for (auto& f : results) out.push_back(f.get());
  return out;
}

// on_every_rank() with each rank's host backend of `world`.
template <typename Body>
std::vector<std::string> on_every_backend(kolo::InProcessWorld& world, Body body) {
  return on_every_rank(world.size(), [&](int r) {
    auto transport = world.transport(r);
    auto backend = transport->make_host_backend({});
    return body(r, *backend);
  });
}

// Element i of rank r's contribution: small values whose reductions over 8 ranks every
// dtype holds exactly (see scenarios' round_value for the reasoning).
double value(DType d, ReduceOp op, int r, int64_t i) {
  if (op == ReduceOp::Product) return (r + i) % 4 == 0 ? 2 : (d == DType::UInt8 || (r + i) % 3 ? 1 : -1);
  const double base = double((r * 7 + i * 3) % 11);
  return d == DType::UInt8 ? base : base - 5;
}

double reduced(DType d, ReduceOp op, int size, int64_t i) {
  double acc = value(d, op, 0, i);
  for (int q = 1; q < size; ++q) {
    const double x = value(d, op, q, i);
    acc = op == ReduceOp::Min ? std::min(acc, x) : op == ReduceOp::Max ? std::max(acc, x)
        : op == ReduceOp::Product ? acc * x : acc + x;
  }
  return acc;
}

std::string first_wrong(const Buffer& b, const std::function<double(int64_t)>& want) {
  for (int64_t i = 0; i < b.count(); ++i)
    if (b.get(i) != want(i))
      return "[" + std::to_string(i) + "] = " + std::to_string(b.get(i)) + ", expected " + std::to_string(want(i));
  return "";
}

// Advances `clock` in steps until `done` is ready (bounded in real time).
template <typename T>
void advance_until(kolo::ManualClock& clock, std::future<T>& done) {
  for (int i = 0; i < 200000 && done.wait_for(std::chrono::microseconds(200)) != std::future_status::ready; ++i)
    clock.advance(std::chrono::milliseconds(10));
}

}  // namespace

TEST_CASE("in-process transport: allreduce of every dtype and op equals the reduction computed here",
          "[inprocess][transport]") {
  const int size = GENERATE(2, 3, 4, 8);
  INFO(size << " ranks");
  kolo::ManualClock clock;
  kolo::InProcessWorld world(size, clock);
  const auto results = on_every_backend(world, [&](int r, kolo::ops::Backend& backend) {
    std::string wrong;
    for (DType d : kolo_test::all_dtypes())
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product})
        for (bool in_place : {true, false}) {
          Buffer in(d, {37}), out(d, {37});
          for (int64_t i = 0; i < 37; ++i) in.set(i, value(d, op, r, i));
          backend.allreduce(in.data(), in_place ? in.data() : out.data(), 37, d, op);
          const std::string w = first_wrong(in_place ? in : out, [&](int64_t i) { return reduced(d, op, size, i); });
          if (!w.empty()) wrong += std::string(kolo::dtype_name(d)) + " " + kolo::op_name(op) + " " + w + "; ";
        }
    return wrong;
  });
  for (int r = 0; r < size; ++r) CHECK(results[r] == "");
  CHECK(world.completed(0, kolo::InProcessCall::Allreduce) == int64_t(kolo_test::all_dtypes().size()) * 4 * 2);
}

TEST_CASE("in-process transport: sendrecv in pairs, and Adasum over it equals the pairwise tree",
          "[inprocess][transport][adasum]") {
  const int size = GENERATE(2, 4, 8);
  INFO(size << " ranks");
  kolo::ManualClock clock;
  kolo::InProcessWorld world(size, clock);
  const std::vector<int64_t> counts = {3, 1, 40};
  const auto vectors = kolo_test::adasum_vectors(DType::Float32, size, counts, {1.0L, 1e-30L});
  const kolo_test::AdasumTensors want = kolo_test::adasum_tree(vectors, DType::Float32);
  const auto results = on_every_backend(world, [&](int r, kolo::ops::Backend& b) {
    // Rank r sends r + 1 bytes to r ^ 1 and receives (r ^ 1) + 1 from it.
    const int peer = r ^ 1;
    std::vector<char> out(static_cast<std::size_t>(r + 1), char('a' + r)), in(static_cast<std::size_t>(peer + 1));
    b.sendrecv(out.data(), out.size(), in.data(), in.size(), peer);
    if (in != std::vector<char>(in.size(), char('a' + peer))) return std::string("sendrecv: wrong bytes");
    std::vector<float> data;
    for (const auto& tensor : vectors[static_cast<std::size_t>(r)])
      for (long double x : tensor) data.push_back(static_cast<float>(x));
    std::vector<std::byte> scratch;
    kolo::ops::adasum_allreduce(data.data(), counts, DType::Float32, r, size, b, scratch);
    std::string wrong;
    for (std::size_t t = 0, at = 0; t < counts.size(); at += static_cast<std::size_t>(counts[t]), ++t) {
      const std::vector<long double> got(data.begin() + static_cast<std::ptrdiff_t>(at),
                                         data.begin() + static_cast<std::ptrdiff_t>(at) + counts[t]);
      if (kolo_test::relative_error(got, want[t]) > kolo_test::adasum_tolerance(DType::Float32))
        wrong += "tensor " + std::to_string(t) + " differs; ";
    }
    return wrong;
  });
  for (int r = 0; r < size; ++r) CHECK(results[r] == "");
}

TEST_CASE("in-process transport: allgatherv, broadcast, alltoallv, reducescatter and barrier",
          "[inprocess][transport]") {
  const int size = GENERATE(2, 3, 4, 8);
  INFO(size << " ranks");
  kolo::ManualClock clock;
  kolo::InProcessWorld world(size, clock);
  const auto results = on_every_backend(world, [&](int r, kolo::ops::Backend& b) {
    std::string wrong;
    const auto expect = [&](bool ok, const std::string& what) {
      if (!ok) wrong += what + "; ";
    };
    // allgatherv: rank q gives q + 1 int64s, q * 10 + k; in place at its own part.
    std::vector<int64_t> counts(size);
    std::iota(counts.begin(), counts.end(), 1);
    std::vector<int64_t> gathered(static_cast<std::size_t>(size * (size + 1) / 2), -1);
    const int64_t at = r * (r + 1) / 2;
    for (int k = 0; k <= r; ++k) gathered[at + k] = r * 10 + k;
    b.allgatherv(gathered.data() + at, gathered.data(), counts, DType::Int64);
    for (int q = 0, i = 0; q < size; ++q)
      for (int k = 0; k <= q; ++k, ++i) expect(gathered[i] == q * 10 + k, "allgatherv [" + std::to_string(i) + "]");
    // broadcast from the last rank.
    std::vector<float> bcast(6, float(r));
    b.broadcast(bcast.data(), 6, DType::Float32, size - 1);
    expect(bcast == std::vector<float>(6, float(size - 1)), "broadcast");
    // alltoallv: rank r sends q + 1 values r * 100 + q to rank q.
    std::vector<int64_t> send(size), recv(size, r + 1);
    std::iota(send.begin(), send.end(), 1);
    std::vector<int32_t> in, out(static_cast<std::size_t>(size * (r + 1)), -1);
    for (int q = 0; q < size; ++q) in.insert(in.end(), q + 1, r * 100 + q);
    b.alltoallv(in.data(), send, out.data(), recv, DType::Int32);
    for (int q = 0; q < size; ++q)
      for (int k = 0; k <= r; ++k)
        expect(out[q * (r + 1) + k] == q * 100 + r, "alltoallv from rank " + std::to_string(q));
    // reducescatter: rank r keeps r + 1 elements of the sum.
    const int64_t total = size * (size + 1) / 2;
    std::vector<double> contribution(total), mine(static_cast<std::size_t>(r + 1));
    for (int64_t i = 0; i < total; ++i) contribution[i] = double(i * (r + 1));
    b.reducescatter(contribution.data(), mine.data(), counts, DType::Float64, ReduceOp::Sum);
    for (int k = 0; k <= r; ++k)
      expect(mine[k] == double((at + k) * size * (size + 1) / 2), "reducescatter [" + std::to_string(k) + "]");
    b.barrier();
    return wrong;
  });
  for (int r = 0; r < size; ++r) CHECK(results[r] == "");
}

TEST_CASE("in-process transport: control messages AND, gather at a root, and broadcast", "[inprocess][transport]") {
  const int size = GENERATE(2, 3, 8);
  kolo::ManualClock clock;
  kolo::InProcessWorld world(size, clock);
  const auto results = on_every_rank(size, [&](int r) {
    auto transport = world.transport(r);
    kolo::ops::ControlChannel& c = transport->control();
    std::vector<uint64_t> words = {~uint64_t{0} ^ (uint64_t{1} << r), uint64_t{0xff} << r};
    c.allreduce_and(words);
    std::vector<std::string> gathered = c.gather("from " + std::to_string(r), 1);
    std::string message = r == 0 ? "hello" : "";
    c.broadcast(message, 0);
    std::string out = std::to_string(words[0]) + " " + std::to_string(words[1]) + " " + message;
    for (const std::string& g : gathered) out += " " + g;
    return out;
  });
  uint64_t all = ~uint64_t{0}, overlap = ~uint64_t{0};
  for (int r = 0; r < size; ++r) {
    all &= ~uint64_t{0} ^ (uint64_t{1} << r);
    overlap &= uint64_t{0xff} << r;
  }
  std::string gathered;
  for (int r = 0; r < size; ++r) gathered += " from " + std::to_string(r);
  for (int r = 0; r < size; ++r)
    CHECK(results[r] == std::to_string(all) + " " + std::to_string(overlap) + " hello" + (r == 1 ? gathered : ""));
}

TEST_CASE("in-process transport: a rank that never arrives fails the others with CommFailure after the timeout",
          "[inprocess][transport][errors]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(3, clock, {std::chrono::seconds(2), 0});
  auto t0 = world.transport(0), t1 = world.transport(1), t2 = world.transport(2);
  const auto waited = [](kolo::Transport& t) {
    return std::async(std::launch::async, [&t]() -> std::string {
      std::vector<uint64_t> words(3, 1);
      try {
        t.control().allreduce_and(words);
        return "returned";
      } catch (const kolo::Error& e) {
        return std::string(e.code() == kolo::StatusCode::CommFailure ? "CommFailure: " : "other: ") + e.what();
      }
    });
  };
  auto f0 = waited(*t0), f1 = waited(*t1);  // rank 2 never arrives
  // Not before the timeout: a second of simulated time later both still wait.
  clock.advance(std::chrono::seconds(1));
  CHECK(f0.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  advance_until(clock, f0);
  advance_until(clock, f1);
  const std::string expected =
      "CommFailure: no answer from the other ranks for 2 s during negotiation (allreduce of ready bits): "
      "a rank has died, hung, or lost its network link";
  CHECK(f0.get() == expected);
  CHECK(f1.get() == expected);
  // The world has failed: the late rank fails at once, as over a failed communicator.
  auto f2 = waited(*t2);
  CHECK(f2.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(f2.get() == expected);
}

TEST_CASE("in-process transport: a rank that stops taking part hangs, then fails with the others",
          "[inprocess][transport][errors]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(2, clock, {std::chrono::seconds(5), 0});
  world.stop_taking_part(1);
  auto t0 = world.transport(0), t1 = world.transport(1);
  const auto barrier = [](kolo::Transport& t) {
    return std::async(std::launch::async, [&t]() -> std::string {
      try {
        t.make_host_backend({})->barrier();
        return "returned";
      } catch (const kolo::Error& e) {
        return e.what();
      }
    });
  };
  auto f0 = barrier(*t0), f1 = barrier(*t1);
  advance_until(clock, f0);
  advance_until(clock, f1);
  CHECK_THAT(f0.get(), Contains("no answer from the other ranks for 5 s during a barrier"));
  CHECK_THAT(f1.get(), Contains("no answer from the other ranks for 5 s during a barrier"));
}

TEST_CASE("in-process transport: ranks that call different collectives fail alike, naming both",
          "[inprocess][transport][errors]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(2, clock);
  const auto results = on_every_backend(world, [&](int r, kolo::ops::Backend& b) {
    std::vector<float> v(4, 1.0f);
    if (r == 0) b.allreduce(v.data(), v.data(), 4, DType::Float32, ReduceOp::Sum);
    else b.broadcast(v.data(), 4, DType::Float32, 0);
    return std::string("returned");
  });
  for (const std::string& result : results) {
    CHECK_THAT(result, Contains("threw Internal: kolo: in-process ranks called different collectives"));
    CHECK_THAT(result, Contains("rank 0 called an allreduce of 4 float32 (sum)"));
    CHECK_THAT(result, Contains("rank 1 called a broadcast of 4 float32 from rank 0"));
  }
}

TEST_CASE("in-process transport: a process set numbers its ranks from 0 and reduces among them only",
          "[inprocess][transport][subset]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(5, clock);
  const std::vector<int> set = {1, 3, 4};
  const auto results = on_every_rank(5, [&](int r) {
    auto transport = world.transport(r);
    auto sub = transport->subset(set);
    if (!sub) return std::string("none");
    int value = r;
    auto b = sub->make_host_backend({});
    b->allreduce(&value, &value, 1, DType::Int32, ReduceOp::Sum);
    return std::to_string(sub->rank()) + "/" + std::to_string(sub->size()) + " sum " + std::to_string(value);
  });
  CHECK(results == std::vector<std::string>{"none", "0/3 sum 8", "none", "1/3 sum 8", "2/3 sum 8"});
}

TEST_CASE("in-process transport: process sets are refused unless sorted, distinct and in range",
          "[inprocess][transport][subset]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(1, clock);
  auto t = world.transport(0);
  CHECK_THROWS_WITH(t->subset(std::vector<int>{}), Contains("at least one rank"));
  CHECK_THROWS_WITH(t->subset(std::vector<int>{0, 3}), Contains("names rank 3, but ranks run from 0 to 0"));
  CHECK_THROWS_WITH(kolo::check_subset(std::vector<int>{2, 1}, 4), Contains("ascending order without repeats"));
  CHECK_THROWS_WITH(kolo::check_subset(std::vector<int>{1, 1}, 4), Contains("ascending order without repeats"));
  CHECK_NOTHROW(kolo::check_subset(std::vector<int>{0, 2, 3}, 4));
}

TEST_CASE("in-process transport: a forced node layout gives each rank its node and place", "[inprocess][transport]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(6, clock, {std::chrono::seconds(300), 3});
  const kolo::Topology t = world.transport(4)->topology();
  CHECK(t.rank == 4);
  CHECK(t.size == 6);
  CHECK(t.local_rank == 1);
  CHECK(t.local_size == 3);
  CHECK(t.cross_rank == 1);
  CHECK(t.cross_size == 2);
  CHECK_THROWS_WITH(kolo::InProcessWorld(6, clock, {std::chrono::seconds(1), 4}), Contains("does not divide"));
}

TEST_CASE("in-process transport: there is no GPU path, and it says so", "[inprocess][transport][gpu]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(1, clock);
  auto t = world.transport(0);
  CHECK_THROWS_MATCHES(t->make_gpu_parts(true, {}), kolo::Error,
                       HasCode(kolo::StatusCode::Unsupported, "KOLO_TEST_HOST_GPU needs the MPI transport"));
  auto parts = kolo::ops::make_cuda_parts();
  if (parts)
    CHECK_THROWS_MATCHES(t->make_gpu_path(*parts, 0, kolo::ops::GpuOperations::Nccl, {}), kolo::Error,
                         HasCode(kolo::StatusCode::Unsupported, "in-process transport has no GPU path"));
}

TEST_CASE("settings record: every rank ends with rank 0's shared settings", "[inprocess][settings]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(3, clock);
  const auto results = on_every_rank(3, [&](int r) {
    kolo::Config config;
    config.fusion_threshold_bytes = 1000 + r;
    config.cache_capacity = 10 + r;
    config.autotune = r == 0;
    config.cycle_time_ms = 1 + r;  // not shared
    auto transport = world.transport(r);
    kolo::agree_on_settings(config, transport->control());
    return std::to_string(config.fusion_threshold_bytes) + " " + std::to_string(config.cache_capacity) + " " +
           std::to_string(config.autotune) + " " + std::to_string(config.cycle_time_ms);
  });
  CHECK(results == std::vector<std::string>{"1000 10 1 1.000000", "1000 10 1 2.000000", "1000 10 1 3.000000"});
}

namespace {

// A control channel whose broadcasts arrive with the record's version changed (a rank of
// another kolo build reading rank 0's record).
class OtherVersion final : public kolo::ops::ControlChannel {
 public:
  explicit OtherVersion(kolo::ops::ControlChannel& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void allreduce_and(std::span<uint64_t> words) override { inner_.allreduce_and(words); }
  std::vector<std::string> gather(const std::string& m, int root) override { return inner_.gather(m, root); }
  void broadcast(std::string& message, int root) override {
    inner_.broadcast(message, root);
    message.replace(0, std::string(kolo::kSettingsRecordName).size(), "kolo-settings/2");
  }

 private:
  kolo::ops::ControlChannel& inner_;
};

}  // namespace

TEST_CASE("settings record: a rank that cannot read rank 0's record fails start-up on every rank, saying why",
          "[inprocess][settings]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(3, clock);
  const auto results = on_every_rank(3, [&](int r) {
    kolo::Config config;
    auto transport = world.transport(r);
    OtherVersion other(transport->control());
    kolo::agree_on_settings(config, r == 2 ? other : transport->control());
    return std::string("agreed");
  });
  CHECK_THAT(results[2], Contains("threw Unsupported: kolo: cannot read rank 0's settings record (this rank reads "
                                  "kolo-settings/1): it is named 'kolo-settings/2'"));
  CHECK_THAT(results[0], Contains("threw Unsupported: kolo: another rank cannot read rank 0's settings record"));
  CHECK_THAT(results[1], Contains("threw Unsupported: kolo: another rank cannot read rank 0's settings record"));
}
