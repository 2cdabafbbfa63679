// Stress: every rank submits the same 300 tensors of mixed sizes and dtypes in its own
// random order, for several rounds, and waits on the handles in another random order.
#include <algorithm>
#include <functional>
#include <numeric>
#include <memory>
#include <random>

#include "support/mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

struct Spec {
  std::string name;
  DType dtype;
  ReduceOp op;
  int64_t elements;
};

std::vector<Spec> specs() {
  std::vector<Spec> s;
  std::mt19937 shared(2024);  // the same on every rank: sizes are part of the contract
  for (int t = 0; t < 300; ++t) {
    int64_t n;
    const int kind = t % 20;
    if (kind == 0) n = 100'000 + int64_t(shared() % 200'001);   // up to 300k elements
    else if (kind < 5) n = 1'000 + int64_t(shared() % 20'000);
    else n = 1 + int64_t(shared() % 500);
    // At np 4 the machine is oversubscribed: keep the biggest ones smaller there.
    if (size() >= 4 && n > 50'000) n /= 3;
    const DType dtype = t % 7 == 3 ? DType::Int32 : t % 11 == 5 ? DType::Float64 : DType::Float32;
    const ReduceOp op = t % 13 == 0 ? ReduceOp::Max : ReduceOp::Sum;
    s.push_back({"stress/" + std::to_string(t), dtype, op, n});
  }
  return s;
}

// Integer-valued, so that sums are exact in float32 (|sum| < 2^24).
double value(int r, int t, int64_t i, int round) { return double((i * 31 + t * 7 + r * 13 + round) % 1000) - 500; }

double expected(const Spec& s, int t, int64_t i, int round) {
  double acc = s.op == ReduceOp::Max ? -1e300 : 0;
  for (int q = 0; q < size(); ++q)
    acc = s.op == ReduceOp::Max ? std::max(acc, value(q, t, i, round)) : acc + value(q, t, i, round);
  return acc;
}

}  // namespace

TEST_CASE("stress: 300 tensors submitted in a different random order on every rank", "[stress]") {
  const std::vector<Spec> all = specs();
  const int rounds = size() >= 4 ? 3 : 4;
  std::mt19937 rng(1000 + rank());  // each rank its own order
  for (int round = 0; round < rounds; ++round) {
    std::vector<int> order(all.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::unique_ptr<Buffer>> buffers(all.size());
    std::vector<kolo::Handle> handles(all.size());
    for (int t : order) {
      const Spec& s = all[t];
      buffers[t] = std::make_unique<Buffer>(s.dtype, std::vector<int64_t>{s.elements});
      for (int64_t i = 0; i < s.elements; ++i) buffers[t]->set(i, value(rank(), t, i, round));
      handles[t] = kolo::allreduce_async(s.name, buffers[t]->view(), {s.op});
    }
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<kolo::Handle> in_wait_order;
    for (int t : order) in_wait_order.push_back(handles[t]);
    require_all_ok(in_wait_order, "stress round " + std::to_string(round));
    for (int t : order) {
      INFO("tensor " << all[t].name << " round " << round);
      int64_t bad = 0, first = -1;
      for (int64_t i = 0; i < all[t].elements; ++i)
        if (buffers[t]->get(i) != expected(all[t], t, i, round)) {
          if (first < 0) first = i;
          ++bad;
        }
      INFO("first wrong element " << first);
      REQUIRE(bad == 0);
    }
  }
}

TEST_CASE("stress: mixed collectives in flight together on every rank", "[stress]") {
  const int n = size();
  std::mt19937 rng(77 + rank());
  for (int round = 0; round < 3; ++round) {
    std::vector<std::vector<float>> ar(40);
    std::vector<std::vector<int32_t>> bc(10);
    std::vector<std::vector<int64_t>> ag(10);
    std::vector<std::function<kolo::Handle()>> submit;
    std::vector<kolo::Handle> ar_h(40), bc_h(10), ag_h(10);
    for (int t = 0; t < 40; ++t)
      submit.push_back([&, t] {
        ar[t].assign(1 + t * 50, float(rank() + t));
        return ar_h[t] = kolo::allreduce_async("mixstress/ar/" + std::to_string(t), kolo::view(ar[t]), {ReduceOp::Sum});
      });
    for (int t = 0; t < 10; ++t) {
      submit.push_back([&, t] {
        bc[t].assign(3 + t, rank() == t % n ? 1000 * t + round : -1);
        return bc_h[t] = kolo::broadcast_async("mixstress/bc/" + std::to_string(t), kolo::view(bc[t]), t % n);
      });
      submit.push_back([&, t] {
        ag[t].assign(2, rank() * 10 + t);
        return ag_h[t] = kolo::allgather_async("mixstress/ag/" + std::to_string(t), kolo::view(ag[t]));
      });
    }
    std::shuffle(submit.begin(), submit.end(), rng);
    std::vector<kolo::Handle> all;
    for (auto& s : submit) all.push_back(s());
    require_all_ok(all, "mixed collectives");
    for (int t = 0; t < 40; ++t) {
      REQUIRE(ar[t].back() == float(n * (n - 1) / 2 + n * t));
    }
    for (int t = 0; t < 10; ++t) {
      REQUIRE(bc[t] == std::vector<int32_t>(3 + t, 1000 * t + round));
      const auto* p = static_cast<const int64_t*>(ag_h[t].output().data);
      REQUIRE(ag_h[t].output().shape == std::vector<int64_t>{2 * n});
      for (int q = 0; q < n; ++q) REQUIRE((p[2 * q] == q * 10 + t && p[2 * q + 1] == q * 10 + t));
    }
  }
}
