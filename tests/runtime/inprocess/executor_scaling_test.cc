// The executor's scaling (average, prescale, postscale) on ranks as threads over the
// in-process transport, with responses made here: the public API cannot yet ask a
// reducescatter for a prescale or postscale, which the executor already honours. Results
// are compared exactly with a reference computed here: each element's contributions
// average to a small integer on every number of ranks, so that every scaled result is
// exact in every floating dtype.
#include <catch2/catch.hpp>

#include <future>

#include "runtime/devices.h"
#include "runtime/executor.h"
#include "runtime/inprocess_transport.h"
#include "runtime/message.h"
#include "runtime/timeline.h"
#include "support/values.h"

using kolo::DType;
using kolo::ReduceOp;
using kolo_test::Buffer;

namespace {

// Rank q's element i: m(i) plus an offset; the offsets of all ranks add up to zero, so the
// sum over `size` ranks is size * m(i), and the average m(i), exactly.
double contribution(int q, int size, int64_t i) {
  const double mean = double(i % 13) - 6;
  const auto offset = [](int r, int64_t k) { return double((r + k) % 5) - 2; };
  if (q < size - 1) return mean + offset(q, i);
  double rest = 0;
  for (int r = 0; r < size - 1; ++r) rest -= offset(r, i);
  return mean + rest;
}

struct Scaling {
  ReduceOp op;
  double prescale, postscale;
};

// The reduction over all ranks of prescale * x, / size for an average, * postscale.
double expected(const Scaling& s, int size, int64_t i) {
  double acc = s.prescale * contribution(0, size, i);
  for (int q = 1; q < size; ++q) {
    const double x = s.prescale * contribution(q, size, i);
    acc = s.op == ReduceOp::Max ? std::max(acc, x) : acc + x;
  }
  if (s.op == ReduceOp::Average) acc /= size;
  return acc * s.postscale;
}

const std::vector<Scaling>& scalings() {
  static const std::vector<Scaling> all = {{ReduceOp::Average, 1, 1},
                                           {ReduceOp::Sum, 1, 0.375},
                                           {ReduceOp::Average, 2, 3},
                                           {ReduceOp::Average, -0.5, 0.375},
                                           {ReduceOp::Max, 2, -0.5}};
  return all;
}

std::string describe(const Scaling& s) {
  return std::string(kolo::op_name(s.op)) + " prescale " + std::to_string(s.prescale) + " postscale " +
         std::to_string(s.postscale);
}

// One rank's executor, over its transport of `world`.
struct Rank {
  std::unique_ptr<kolo::Transport> transport;
  kolo::Devices devices;
  kolo::Timeline timeline;  // off
  kolo::Executor executor;

  Rank(kolo::InProcessWorld& world, int rank, const kolo::Config& config)
      : transport(world.transport(rank)),
        devices(*transport, config),
        executor(devices, rank, world.size(), timeline, kolo::steady_clock()) {}
};

// Runs body(rank, executor) on one thread per rank; returns what each returned, or what
// it threw.
template <typename Body>
std::vector<std::string> on_every_rank(kolo::InProcessWorld& world, const kolo::Config& config, Body body) {
  std::vector<std::future<std::string>> results;
  for (int r = 0; r < world.size(); ++r)
    results.push_back(std::async(std::launch::async, [&, r]() -> std::string {
      try {
        Rank rank(world, r, config);
        return body(r, rank.executor);
      } catch (const std::exception& e) {
        return std::string("threw: ") + e.what();
      }
    }));
  std::vector<std::string> out;
  for (auto& f : results) out.push_back(f.get());
  return out;
}

std::unique_ptr<kolo::TensorEntry> entry(const std::string& name, kolo::OpType type, Buffer& in, void* out) {
  auto e = std::make_unique<kolo::TensorEntry>();
  e->request.name = name;
  e->request.type = type;
  e->request.dtype = in.dtype();
  e->request.shape = in.shape();
  e->input = in.data();
  e->output = out;
  return e;
}

std::string first_wrong(const Buffer& got, int64_t first, const std::function<double(int64_t)>& want) {
  for (int64_t k = 0; k < got.count(); ++k)
    if (got.get(k) != want(first + k))
      return "[" + std::to_string(first + k) + "] = " + std::to_string(got.get(k)) + ", expected " +
             std::to_string(want(first + k));
  return "";
}

}  // namespace

TEST_CASE("executor: reducescatter prescales a copy of the input and scales each rank's part once",
          "[executor][scaling]") {
  const int size = GENERATE(2, 3, 4);
  INFO(size << " ranks");
  const int64_t rows = 2 * size + 1, width = 3;  // rows that do not divide by the size
  kolo::InProcessWorld world(size, kolo::steady_clock());
  const auto results = on_every_rank(world, kolo::Config{}, [&](int r, kolo::Executor& executor) {
    std::string wrong;
    int64_t first_row = 0;
    for (int q = 0; q < r; ++q) first_row += rows / size + (q < rows % size ? 1 : 0);
    for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
      for (const Scaling& s : scalings()) {
        const std::string name = std::string("rs/") + kolo::dtype_name(d) + "/" + describe(s);
        Buffer in(d, {rows, width});
        for (int64_t i = 0; i < in.count(); ++i) in.set(i, contribution(r, size, i));
        const std::vector<std::byte> before = in.bytes();
        auto e = entry(name, kolo::OpType::Reducescatter, in, nullptr);
        kolo::Response response = kolo::response_for(e->request, name);
        response.op = s.op;
        response.prescale = s.prescale;
        response.postscale = s.postscale;
        executor.run(response, {e.get()}, kolo::steady_clock().now());
        const kolo::TensorView result = e->handle.output;
        Buffer got(d, result.shape);
        if (got.count() > 0) std::memcpy(got.data(), result.data, result.num_bytes());
        const std::string w = first_wrong(got, first_row * width, [&](int64_t i) { return expected(s, size, i); });
        if (!w.empty()) wrong += name + " " + w + "; ";
        if (in.bytes() != before) wrong += name + ": the input changed; ";
      }
    return wrong;
  });
  for (int r = 0; r < size; ++r) CHECK(results[r] == "");
}

TEST_CASE("executor: a lone allreduce and a fused one are scaled once, flat and hierarchical",
          "[executor][scaling]") {
  const bool hierarchical = GENERATE(false, true);
  const int size = hierarchical ? 4 : GENERATE(2, 3);
  INFO(size << " ranks" << (hierarchical ? ", hierarchical on 2 nodes of 2" : ""));
  kolo::InProcessWorld world(size, kolo::steady_clock(), {.local_size = hierarchical ? 2 : 0});
  kolo::Config config;
  config.hierarchical_allreduce = hierarchical;
  const auto results = on_every_rank(world, config, [&](int r, kolo::Executor& executor) {
    std::string wrong;
    for (DType d : {DType::Float32, DType::Float64, DType::Float16})
      for (const Scaling& s : scalings()) {
        const std::string name = std::string("ar/") + kolo::dtype_name(d) + "/" + describe(s);
        Buffer a(d, {1001}), b(d, {7}), out(d, {7});
        for (int64_t i = 0; i < a.count(); ++i) a.set(i, contribution(r, size, i));
        for (int64_t i = 0; i < b.count(); ++i) b.set(i, contribution(r, size, i + 5));
        const std::vector<std::byte> b_before = b.bytes();
        // `a` alone, in place; then `a` and `b` fused, `b` out of place.
        auto lone = entry(name, kolo::OpType::Allreduce, a, a.data());
        kolo::Response response = kolo::response_for(lone->request, name);
        response.op = s.op;
        response.prescale = s.prescale;
        response.postscale = s.postscale;
        executor.run(response, {lone.get()}, kolo::steady_clock().now());
        std::string w = first_wrong(a, 0, [&](int64_t i) { return expected(s, size, i); });
        if (!w.empty()) wrong += name + " alone " + w + "; ";

        for (int64_t i = 0; i < a.count(); ++i) a.set(i, contribution(r, size, i));
        auto fused_b = entry(name + "/b", kolo::OpType::Allreduce, b, out.data());
        response.names.push_back(name + "/b");
        response.element_counts.push_back(b.count());
        executor.run(response, {lone.get(), fused_b.get()}, kolo::steady_clock().now());
        w = first_wrong(a, 0, [&](int64_t i) { return expected(s, size, i); }) +
            first_wrong(out, 5, [&](int64_t i) { return expected(s, size, i); });
        if (!w.empty()) wrong += name + " fused " + w + "; ";
        if (b.bytes() != b_before) wrong += name + ": the fused out-of-place input changed; ";
      }
    return wrong;
  });
  for (int r = 0; r < size; ++r) CHECK(results[r] == "");
}

TEST_CASE("executor: a joined rank passes the same scale, so the slice it reduces for its node is scaled",
          "[executor][scaling][join]") {
  // Hierarchical on 2 nodes of 2: rank 1 has joined (no entry, zeros), yet its slice of
  // the result reaches rank 0 through the node's allgather.
  kolo::InProcessWorld world(4, kolo::steady_clock(), {.local_size = 2});
  kolo::Config config;
  config.hierarchical_allreduce = true;
  const auto results = on_every_rank(world, config, [&](int r, kolo::Executor& executor) {
    Buffer a(DType::Float32, {64});
    for (int64_t i = 0; i < a.count(); ++i) a.set(i, r == 1 ? 0.0 : double(i % 7 + 1));
    auto e = entry("joined/average", kolo::OpType::Allreduce, a, a.data());
    kolo::Response response = kolo::response_for(e->request, "joined/average");
    response.op = ReduceOp::Average;
    executor.run(response, {r == 1 ? nullptr : e.get()}, kolo::steady_clock().now());
    if (r == 1) return std::string();
    // Three ranks give i % 7 + 1; the average is over all four.
    return first_wrong(a, 0, [](int64_t i) { return 3.0 * double(i % 7 + 1) / 4.0; });
  });
  for (int r = 0; r < 4; ++r) CHECK(results[r] == "");
}
