// Allreduce against closed-form expectations: every dtype x op, in and out of place,
// prescale/postscale, zero-size, large (unfused, chunked) and many tiny (fused, cached)
// tensors, grouped allreduce.
#include <cmath>
#include <cstdlib>
#include <map>
#include <functional>
#include <memory>
#include <thread>

#include "support/mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

// Rank r's element i of a test tensor, chosen so that every reduction is exact in every
// dtype at up to 4 ranks (int8 sums stay within [-20, 20], products within [-16, 16]).
double input_value(DType d, ReduceOp op, int r, int64_t i, int round) {
  const int64_t k = r + 5 * round;
  if (op == ReduceOp::Product) {
    if (d == DType::UInt8) return 1 + (k + i) % 3;
    static const double v[4] = {-2, -1, 1, 2};
    return v[(k + 2 * i) % 4];
  }
  const int64_t base = (k * 7 + i * 3) % 11;
  if (d == DType::UInt8) return double(base);
  return floating(d) ? (base - 5) * 0.5 : double(base - 5);
}

// The reduction over all ranks of (prescale * x), then / size for average, * postscale.
double expected_value(DType d, ReduceOp op, int64_t i, int round, double pre = 1, double post = 1) {
  const int n = size();
  double acc = 0;
  for (int q = 0; q < n; ++q) {
    const double x = pre * input_value(d, op, q, i, round);
    if (q == 0) acc = x;
    else if (op == ReduceOp::Sum || op == ReduceOp::Average) acc += x;
    else if (op == ReduceOp::Min) acc = std::min(acc, x);
    else if (op == ReduceOp::Max) acc = std::max(acc, x);
    else acc *= x;
  }
  if (op == ReduceOp::Average) acc /= n;
  return acc * post;
}

bool result_is_exact(DType d, ReduceOp op, double post) {
  // Averages over 3 ranks and non-power-of-two postscales round; everything else is exact.
  return !(op == ReduceOp::Average && (size() & (size() - 1)) != 0) && post == std::ldexp(1.0, std::ilogb(post));
}

void check_result(const Buffer& out, DType d, ReduceOp op, int round, double pre, double post,
                  const std::string& name) {
  const bool exact = result_is_exact(d, op, post) || !floating(d);
  for (int64_t i = 0; i < out.count(); ++i) {
    const double want = expected_value(d, op, i, round, pre, post);
    const double got = out.get(i);
    if (exact ? got != want : got != Approx(want).epsilon(rounding_tolerance(d)).margin(1e-12)) {
      FAIL(name << "[" << i << "] = " << got << ", expected " << want << " (round " << round << ")");
    }
  }
}

struct Case {
  std::string name;
  DType dtype;
  ReduceOp op;
  bool in_place;
  double pre = 1, post = 1;
  Buffer input, output;
  std::vector<std::byte> input_before;
  kolo::Handle handle;
};

std::unique_ptr<Case> submit_case(const std::string& name, DType d, ReduceOp op, bool in_place,
                                  std::vector<int64_t> shape, int round, double pre = 1, double post = 1) {
  auto c = std::make_unique<Case>();
  c->name = name;
  c->dtype = d;
  c->op = op;
  c->in_place = in_place;
  c->pre = pre;
  c->post = post;
  c->input = Buffer(d, shape);
  for (int64_t i = 0; i < c->input.count(); ++i) c->input.set(i, input_value(d, op, rank(), i, round));
  c->input_before = c->input.bytes();
  const kolo::AllreduceOptions options{op, pre, post};
  if (in_place) {
    c->handle = kolo::allreduce_async(name, c->input.view(), options);
  } else {
    c->output = Buffer(d, shape);
    for (int64_t i = 0; i < c->output.count(); ++i) c->output.set(i, 99);  // must be overwritten
    c->handle = kolo::allreduce_async(name, c->input.view(), c->output.view(), options);
  }
  return c;
}

void wait_cases(const std::vector<std::unique_ptr<Case>>& cases) {
  std::vector<kolo::Handle> handles;
  for (const auto& c : cases) handles.push_back(c->handle);
  require_all_ok(handles, "allreduce");
}

void check_case(Case& c, int round) {
  INFO("tensor " << c.name << " round " << round);
  require_ok(c.handle, c.name);
  if (c.in_place) {
    check_result(c.input, c.dtype, c.op, round, c.pre, c.post, c.name);
  } else {
    check_result(c.output, c.dtype, c.op, round, c.pre, c.post, c.name);
    if (c.input.bytes() != c.input_before) FAIL(c.name << ": out-of-place allreduce modified its input");
  }
}

}  // namespace

TEST_CASE("allreduce computes every op for every dtype, in and out of place", "[allreduce]") {
  const std::vector<std::vector<int64_t>> shapes = {{257}, {}, {3, 5}, {2, 1, 4}};
  for (int round = 0; round < 3; ++round) {  // later rounds run from the response cache
    std::vector<std::unique_ptr<Case>> cases;
    for (DType d : all_dtypes())
      for (ReduceOp op : all_ops()) {
        if (op == ReduceOp::Average && !floating(d)) continue;
        for (bool in_place : {true, false})
          for (std::size_t s = 0; s < shapes.size(); ++s) {
            const std::string name = std::string("ar/") + kolo::dtype_name(d) + "/" + kolo::op_name(op) +
                                     (in_place ? "/inplace/" : "/outofplace/") + std::to_string(s);
            cases.push_back(submit_case(name, d, op, in_place, shapes[s], round));
          }
      }
    wait_cases(cases);
    for (auto& c : cases) check_case(*c, round);
  }
}

TEST_CASE("allreduce averages floating dtypes across ranks", "[allreduce]") {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    Buffer b(d, {64});
    for (int64_t i = 0; i < 64; ++i) b.set(i, double(rank() * 4 + i % 8));
    require_ok(kolo::allreduce_async(std::string("avg/") + kolo::dtype_name(d), b.view()));  // default op
    for (int64_t i = 0; i < 64; ++i) {
      // mean over ranks of (4q + i%8) = 4(n-1)/2 + i%8
      const double want = 2.0 * (size() - 1) + double(i % 8);
      INFO(kolo::dtype_name(d) << " element " << i);
      REQUIRE(b.get(i) == Approx(want).epsilon(rounding_tolerance(d)));
    }
  }
}

TEST_CASE("allreduce applies prescale before and postscale after the reduction", "[allreduce]") {
  // (-1, 1) and (3, 1) share a postscale: neighbours that must not be fused together.
  const std::vector<std::pair<double, double>> factors = {{2, 0.25}, {-1, 1}, {3, 1}, {0.5, 3}};
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<Case>> cases;
    for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Max, ReduceOp::Min})
        for (std::size_t f = 0; f < factors.size(); ++f)
          for (bool in_place : {true, false}) {
            const std::string name = std::string("scaled/") + kolo::dtype_name(d) + "/" + kolo::op_name(op) +
                                     "/" + std::to_string(f) + (in_place ? "/in" : "/out");
            cases.push_back(submit_case(name, d, op, in_place, {33}, round, factors[f].first,
                                        factors[f].second));
          }
    wait_cases(cases);
    for (auto& c : cases) check_case(*c, round);
  }
}

// Horovod's rule for integers: scaled in double, truncated toward zero. Rank r's element i
// is r * 7 - i - 3, so sums are negative, positive and odd at any number of ranks.
TEST_CASE("allreduce averages and scales integers in double, truncating toward zero", "[allreduce][scale]") {
  const int n = size();
  struct Scaling {
    const char* what;
    ReduceOp op;
    double pre, post;
  };
  const Scaling scalings[] = {{"average", ReduceOp::Average, 1, 1},
                              {"prescale", ReduceOp::Sum, 0.37, 1},
                              {"postscale", ReduceOp::Sum, 1, 0.37},
                              {"average-postscale", ReduceOp::Average, 1, 2.5}};
  for (DType d : {DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64})
    for (const Scaling& s : scalings) {
      const std::string name = std::string("intscale/") + kolo::dtype_name(d) + "/" + s.what;
      INFO(name);
      auto value = [&](int r, int64_t i) { return d == DType::UInt8 ? double(r * 7 + i) : double(r * 7 - i - 3); };
      Buffer b(d, {6});
      for (int64_t i = 0; i < 6; ++i) b.set(i, value(rank(), i));
      REQUIRE(kolo::allreduce_async(name, b.view(), {s.op, s.pre, s.post}).wait().ok());
      for (int64_t i = 0; i < 6; ++i) {
        double sum = 0;
        for (int r = 0; r < n; ++r) sum += std::trunc(value(r, i) * s.pre);  // each rank prescales its own
        // One factor, as Horovod folds the average into the postscale: sum * (post / n).
        const double want = std::trunc(sum * (s.post / (s.op == ReduceOp::Average ? n : 1)));
        CHECK(b.get(i) == want);
      }
    }
}

TEST_CASE("allreduce of zero-size tensors completes, alone and among others", "[allreduce]") {
  for (int round = 0; round < 2; ++round) {
    std::vector<kolo::Handle> handles;
    std::vector<std::unique_ptr<Case>> cases;
    for (DType d : all_dtypes()) {
      const std::string dn = kolo::dtype_name(d);
      // Null data is fine when there is nothing to read.
      handles.push_back(kolo::allreduce_async("zero/null/" + dn, kolo::TensorView{nullptr, d, {0}},
                                              {ReduceOp::Sum}));
      cases.push_back(submit_case("zero/empty2d/" + dn, d, ReduceOp::Max, false, {4, 0}, round));
      cases.push_back(submit_case("zero/neighbour/" + dn, d, ReduceOp::Sum, true, {5}, round));
    }
    require_all_ok(handles, "zero-size allreduce");
    wait_cases(cases);
    for (auto& c : cases) check_case(*c, round);
  }
}

TEST_CASE("allreduce of large tensors runs unfused and chunked with exact results", "[allreduce][large]") {
  // Big enough to span many pipeline chunks; smaller at np 4, where 4 ranks share 2 cores.
  const int64_t n = size() <= 2 ? 20'000'000 : size() == 3 ? 8'000'000 : 4'000'000;
  const int ranks = size();
  std::vector<float> inout(n), in(n), out(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) {
    inout[i] = float(i % 1024) * float(rank() + 1);
    in[i] = float((i * 7) % 1000);
  }
  kolo::Handle h1 = kolo::allreduce_async("large/sum_inplace", kolo::view(inout), {ReduceOp::Sum});
  kolo::Handle h2 = kolo::allreduce_async("large/avg_outofplace", kolo::view(in), kolo::view(out), {ReduceOp::Average});
  require_all_ok({h1, h2}, "large sum and average");
  const float triangle = float(ranks * (ranks + 1) / 2);
  int64_t bad = 0, first_bad = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (inout[i] != float(i % 1024) * triangle || out[i] != Approx(float((i * 7) % 1000)).epsilon(1e-6) ||
        in[i] != float((i * 7) % 1000)) {
      if (first_bad < 0) first_bad = i;
      ++bad;
    }
  }
  INFO("first wrong element " << first_bad << ": sum " << (first_bad >= 0 ? inout[first_bad] : 0)
                              << " average " << (first_bad >= 0 ? out[first_bad] : 0));
  CHECK(bad == 0);

  // A large 16-bit tensor goes through kolo's own MPI reduction operator in chunks.
  Buffer half(DType::Float16, {1'000'003});
  for (int64_t i = 0; i < half.count(); ++i) half.set(i, double((i % 16) * (rank() + 1)));
  require_ok(kolo::allreduce_async("large/float16", half.view(), {ReduceOp::Sum}));
  bad = 0;
  for (int64_t i = 0; i < half.count(); ++i)
    if (half.get(i) != double((i % 16) * ranks * (ranks + 1) / 2)) ++bad;
  CHECK(bad == 0);
}

// A result must not depend on the path a tensor takes: MPI's call for a small tensor, kolo's
// ring for a large one. Open MPI's vectorised 8- and 16-bit integer sums saturated (127) in
// the blocks it vectorised and wrapped in the rest; its float min and max dropped a NaN that
// some ranks held. kolo's rule on every path: integers wrap, a NaN wins.
TEST_CASE("8- and 16-bit integer sums wrap and NaN wins min and max in small tensors and large", "[allreduce][wrap-nan]") {
  const int n = size();
  for (const int64_t count : {int64_t{1000}, int64_t{200'001}}) {
    INFO(count << " elements");
    const std::vector<std::pair<DType, double>> wrapping = {
        {DType::Int8, 100}, {DType::UInt8, 200}, {DType::Int16, 20000}};
    for (const auto& [dtype, value] : wrapping) {
      Buffer b(dtype, {count});
      for (int64_t i = 0; i < count; ++i) b.set(i, value);
      require_ok(kolo::allreduce_async("wrap/" + std::to_string(count) + "/" + kolo::dtype_name(dtype), b.view(),
                                       {ReduceOp::Sum}));
      // Two's complement of value * n in the dtype's width.
      const int bits = dtype == DType::Int16 ? 16 : 8;
      const int64_t modulus = int64_t{1} << bits, total = static_cast<int64_t>(value) * n;
      int64_t expected = total % modulus;
      if (dtype != DType::UInt8 && expected >= modulus / 2) expected -= modulus;
      int64_t wrong = 0;
      for (int64_t i = 0; i < count; ++i) wrong += b.get(i) != double(expected);
      INFO(kolo::dtype_name(dtype) << ": expected " << expected << ", element 0 " << b.get(0) << ", last "
                                   << b.get(count - 1));
      CHECK(wrong == 0);
    }
    if (n < 2) continue;
    for (const ReduceOp op : {ReduceOp::Min, ReduceOp::Max})
      for (const int holder : {0, n - 1}) {
        std::vector<float> v(count, float(rank()));
        if (rank() == holder)
          for (int64_t i = 0; i < count; i += 3) v[i] = std::nanf("");
        require_ok(kolo::allreduce_async("nan/" + std::to_string(count) + "/" + kolo::op_name(op) + "/" +
                                             std::to_string(holder),
                                         kolo::view(v), {op}));
        int64_t wrong = 0;
        const float other = op == ReduceOp::Min ? 0.0f : float(n - 1);
        for (int64_t i = 0; i < count; ++i) wrong += i % 3 == 0 ? !std::isnan(v[i]) : v[i] != other;
        INFO(kolo::op_name(op) << ", NaN on rank " << holder);
        CHECK(wrong == 0);
      }
  }
}

// The MPI backend scales an average over 2, 4, ... ranks before the reduction (ops/
// mpi_backend.cc), other averages after it: either way the result must have the bits of the
// sum divided by n, correctly rounded, also for values whose sum rounds (mixed magnitudes).
TEST_CASE("a large average has the bits of the same sum divided by the number of ranks", "[allreduce][large]") {
  const int64_t n = 600'000;  // unfused, several pieces
  const int ranks = size();
  std::vector<float> sum(n), average(n), in(n), out(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) {
    // A different mantissa and a spread of exponents per rank and element.
    const float v = std::ldexp(1.0f + float((i * 2654435761u + unsigned(rank()) * 40503u) % 8388608u) / 8388608.0f,
                               int((i + 3 * rank()) % 41) - 20);
    sum[i] = average[i] = in[i] = (i + rank()) % 3 == 0 ? -v : v;
  }
  require_all_ok({kolo::allreduce_async("exact/sum", kolo::view(sum), {ReduceOp::Sum}),
                  kolo::allreduce_async("exact/average_inplace", kolo::view(average), {ReduceOp::Average}),
                  kolo::allreduce_async("exact/average", kolo::view(in), kolo::view(out), {ReduceOp::Average})},
                 "sum and averages");
  int64_t bad = 0, first_bad = -1;
  for (int64_t i = 0; i < n; ++i) {
    const float want = static_cast<float>(static_cast<double>(sum[i]) / ranks);
    if (average[i] != want || out[i] != want) {
      if (first_bad < 0) first_bad = i;
      ++bad;
    }
  }
  INFO("first wrong element " << first_bad << ": sum " << (first_bad >= 0 ? sum[first_bad] : 0) << ", averages "
                              << (first_bad >= 0 ? average[first_bad] : 0) << " and "
                              << (first_bad >= 0 ? out[first_bad] : 0));
  CHECK(bad == 0);
}

TEST_CASE("allreduce of large and small tensors submitted together is exact", "[allreduce][large]") {
  // Tensors above and below the unfused size in one burst, so that fused groups form
  // around the unfused ones (and split at a small KOLO_FUSION_THRESHOLD).
  for (int round = 0; round < 3; ++round) {
    std::vector<std::vector<int32_t>> tensors;
    for (int t = 0; t < 40; ++t) {
      const int64_t n = (t % 10 == 3) ? 400'000 + t : 100 + 37 * t;
      tensors.emplace_back(n);
      for (int64_t i = 0; i < n; ++i) tensors.back()[i] = int32_t((i + t + round) % 100) * (rank() + 1);
    }
    std::vector<kolo::Handle> handles;
    for (int t = 0; t < 40; ++t)
      handles.push_back(kolo::allreduce_async("mixed/" + std::to_string(t), kolo::view(tensors[t]), {ReduceOp::Sum}));
    const int32_t triangle = size() * (size() + 1) / 2;
    require_all_ok(std::vector<kolo::Handle>(handles.rbegin(), handles.rend()), "mixed");  // reverse order
    for (int t = 39; t >= 0; --t) {
      require_ok(handles[t], "mixed/" + std::to_string(t));
      int64_t bad = 0;
      for (std::size_t i = 0; i < tensors[t].size(); ++i)
        if (tensors[t][i] != int32_t((i + t + round) % 100) * triangle) ++bad;
      INFO("tensor mixed/" << t << " round " << round);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("allreduce of many tiny tensors fuses them with exact results, round after round",
          "[allreduce][fusion]") {
  const int count = 500;
  const DType dtypes[4] = {DType::Float32, DType::Int32, DType::Float16, DType::Float64};
  for (int round = 0; round < 4; ++round) {
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<kolo::Handle> handles;
    for (int t = 0; t < count; ++t) {
      const int64_t n = 1 + (t * 13) % 64;
      auto b = std::make_unique<Buffer>(dtypes[t % 4], std::vector<int64_t>{n});
      for (int64_t i = 0; i < n; ++i) b->set(i, double((t + i + round) % 9 + rank()));
      handles.push_back(kolo::allreduce_async("tiny/" + std::to_string(t), b->view(), {ReduceOp::Sum}));
      buffers.push_back(std::move(b));
    }
    const double rank_sum = size() * (size() - 1) / 2.0;
    require_all_ok(handles, "tiny");
    for (int t = 0; t < count; ++t) {
      require_ok(handles[t], "tiny/" + std::to_string(t));
      for (int64_t i = 0; i < buffers[t]->count(); ++i) {
        const double want = size() * double((t + i + round) % 9) + rank_sum;
        if (buffers[t]->get(i) != want)
          FAIL("tiny/" << t << "[" << i << "] = " << buffers[t]->get(i) << ", expected " << want
                       << " in round " << round);
      }
    }
  }
}

// The background thread reuses the fused plan of cached tensors while the set of ready
// tensors stays the same; a round with another subset must get a plan of its own.
TEST_CASE("cached tensors submitted in a different subset each round stay exact", "[allreduce][fusion][cache]") {
  const int count = 40;
  const std::vector<std::function<bool(int)>> subsets = {
      [](int) { return true; },          [](int t) { return t % 2 == 0; }, [](int t) { return t < 20; },
      [](int) { return true; },          [](int t) { return t >= 20; },    [](int t) { return t % 3 != 1; },
      [](int t) { return t % 2 == 0; },  [](int) { return true; }};
  for (int round = 0; round < static_cast<int>(subsets.size()); ++round) {
    std::vector<int> ids;
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<kolo::Handle> handles;
    for (int t = 0; t < count; ++t) {
      if (!subsets[static_cast<std::size_t>(round)](t)) continue;
      const int64_t n = 1 + (t * 7) % 23;
      auto b = std::make_unique<Buffer>(DType::Float32, std::vector<int64_t>{n});
      for (int64_t i = 0; i < n; ++i) b->set(i, double(t + i + round + rank()));
      handles.push_back(kolo::allreduce_async("subset/" + std::to_string(t), b->view(), {ReduceOp::Sum}));
      buffers.push_back(std::move(b));
      ids.push_back(t);
    }
    require_all_ok(handles, "subset");
    const double rank_sum = size() * (size() - 1) / 2.0;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      for (int64_t i = 0; i < buffers[k]->count(); ++i) {
        const double want = size() * double(ids[k] + i + round) + rank_sum;
        if (buffers[k]->get(i) != want)
          FAIL("subset/" << ids[k] << "[" << i << "] = " << buffers[k]->get(i) << ", expected " << want
                         << " in round " << round);
      }
    }
  }
}

TEST_CASE("allreduce with a changed dtype or shape under a cached name is renegotiated",
          "[allreduce][cache]") {
  // Same name, parameters change on every rank alike: the cache entry is replaced.
  std::vector<float> f(10, float(rank() + 1));
  require_ok(kolo::allreduce_async("recache/x", kolo::view(f), {ReduceOp::Sum}));
  require_ok(kolo::allreduce_async("recache/x", kolo::view(f), {ReduceOp::Sum}));
  const float tri = float(size() * (size() + 1) / 2);
  CHECK(f[9] == tri * size());  // (r+1) summed, then that total summed again
  std::vector<double> d(7, double(rank() + 1));
  require_ok(kolo::allreduce_async("recache/x", kolo::view(d), {ReduceOp::Max}));
  CHECK(d[6] == double(size()));
  std::vector<double> d2(3, double(rank() + 2));
  require_ok(kolo::allreduce_async("recache/x", kolo::view(d2), {ReduceOp::Product}));
  double prod = 1;
  for (int q = 0; q < size(); ++q) prod *= q + 2;
  CHECK(d2[2] == prod);
}

TEST_CASE("grouped allreduce completes every member with exact results", "[allreduce][grouped]") {
  const std::vector<int64_t> sizes = {1, 17, 300'001, 0, 1000, 5};
  for (int round = 0; round < 3; ++round) {
    std::vector<std::vector<float>> in(sizes.size()), out(sizes.size());
    std::vector<std::string> names;
    std::vector<kolo::TensorView> inputs, outputs;
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      in[t].resize(sizes[t]);
      out[t].assign(sizes[t], -7.0f);
      for (int64_t i = 0; i < sizes[t]; ++i) in[t][i] = float((i + t + round) % 50 + 4 * rank());
      names.push_back("group/" + std::to_string(t));
      inputs.push_back(kolo::view(in[t]));
      outputs.push_back(kolo::view(out[t]));
    }
    const auto handles = kolo::grouped_allreduce_async(names, inputs, outputs, {ReduceOp::Average, 1.0, 2.0});
    REQUIRE(handles.size() == sizes.size());
    require_all_ok(handles, "group");
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      require_ok(handles[t], names[t]);
      for (int64_t i = 0; i < sizes[t]; ++i) {
        // 2 * mean over ranks of (v + 4q) = 2v + 4(n-1)
        const double want = 2.0 * ((i + t + round) % 50) + 4.0 * (size() - 1);
        if (out[t][i] != Approx(want).epsilon(1e-6))
          FAIL(names[t] << "[" << i << "] = " << out[t][i] << ", expected " << want);
      }
    }
  }
}

TEST_CASE("grouped allreduce in place, several groups in flight at once", "[allreduce][grouped]") {
  std::vector<std::vector<int64_t>> data(6);
  std::vector<std::vector<kolo::Handle>> groups;
  for (int g = 0; g < 3; ++g) {
    std::vector<std::string> names;
    std::vector<kolo::TensorView> views;
    for (int m = 0; m < 2; ++m) {
      auto& v = data[g * 2 + m];
      v.assign(10 + g + m, int64_t(1000) * (rank() + 1) + g * 10 + m);
      names.push_back("igroup/" + std::to_string(g) + "/" + std::to_string(m));
      views.push_back(kolo::view(v));
    }
    groups.push_back(kolo::grouped_allreduce_async(names, views, views, {ReduceOp::Sum}));
  }
  std::vector<kolo::Handle> all;
  for (int g = 2; g >= 0; --g) all.insert(all.end(), groups[g].begin(), groups[g].end());
  require_all_ok(all, "groups");
  for (int g = 2; g >= 0; --g)
    for (int m = 0; m < 2; ++m) {
      const int64_t want = int64_t(1000) * size() * (size() + 1) / 2 + size() * (g * 10 + m);
      for (int64_t x : data[g * 2 + m]) REQUIRE(x == want);
    }
}

TEST_CASE("grouped allreduce rejects inconsistent arguments on every handle", "[allreduce][grouped][errors]") {
  std::vector<float> a(3), b(3);
  auto handles = kolo::grouped_allreduce_async({"badgroup/a", "badgroup/b"}, {kolo::view(a)},
                                               {kolo::view(a), kolo::view(b)});
  REQUIRE(handles.size() == 2);
  for (auto& h : handles) CHECK(immediate_failure(h).code() == kolo::StatusCode::InvalidArgument);
  handles = kolo::grouped_allreduce_async({}, {}, {});
  REQUIRE(handles.size() == 1);
  CHECK(immediate_failure(handles[0]).code() == kolo::StatusCode::InvalidArgument);
  std::vector<int32_t> ints(3);
  kolo::AllreduceOptions fp16;  // compression needs floating-point tensors
  fp16.compression = kolo::Compression::FP16;
  handles = kolo::grouped_allreduce_async({"badgroup/f", "badgroup/i"}, {kolo::view(a), kolo::view(ints)},
                                          {kolo::view(a), kolo::view(ints)}, fp16);
  REQUIRE(handles.size() == 2);
  for (auto& h : handles) {
    const kolo::Status s = immediate_failure(h);
    CHECK(s.code() == kolo::StatusCode::InvalidArgument);
    CHECK_THAT(s.message(), Catch::Matchers::Contains("badgroup/i"));
  }
}

namespace {

// The "KOLO_X = value" line of a describe_configuration() text.
std::string setting_line(const std::string& described, const std::string& variable) {
  const auto at = described.find(variable + " = ");
  if (at == std::string::npos) return "";
  return described.substr(at, described.find('\n', at) - at);
}

}  // namespace

TEST_CASE("configuration in effect is rank 0's environment, on every rank", "[config]") {
  const std::string mine = kolo::describe_configuration();
  // Rank 0's description, sent to everybody.
  std::string root = mine;
  int length = static_cast<int>(root.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  root.resize(length);
  MPI_Bcast(root.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  // Settings that change what ranks send must be the same everywhere.
  for (const char* variable : {"KOLO_FUSION_THRESHOLD", "KOLO_CACHE_CAPACITY", "KOLO_ALLREDUCE_CHUNK_BYTES",
                               "KOLO_AUTOTUNE"}) {
    INFO("rank " << rank() << "'s configuration:\n" << mine);
    CHECK(setting_line(mine, variable) == setting_line(root, variable));
    CHECK_FALSE(setting_line(mine, variable).empty());
  }
  if (rank() == 0) {  // and they are what rank 0's environment says
    for (const char* name : {"FUSION_THRESHOLD", "CACHE_CAPACITY", "ALLREDUCE_CHUNK_BYTES", "STALL_CHECK_TIME_SECONDS"}) {
      const char* v = std::getenv((std::string("KOLO_") + name).c_str());
      if (v == nullptr) v = std::getenv((std::string("HOROVOD_") + name).c_str());
      if (v == nullptr) continue;
      INFO(mine);
      CHECK(setting_line(mine, std::string("KOLO_") + name) == std::string("KOLO_") + name + " = " + v);
    }
  }
}

TEST_CASE("allreduce from several caller threads at once", "[allreduce][threads]") {
  const int threads = 4, per_thread = 40;
  std::vector<std::vector<float>> data(threads * per_thread);
  std::vector<kolo::Status> status(threads * per_thread);
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&, w] {
      std::vector<kolo::Handle> handles;
      for (int k = 0; k < per_thread; ++k) {
        const int t = w * per_thread + k;
        data[t].assign(1 + t % 50, float(rank() * 3 + t));
        handles.push_back(kolo::allreduce_async("threads/" + std::to_string(t), kolo::view(data[t]), {ReduceOp::Sum}));
      }
      for (int k = 0; k < per_thread; ++k) status[w * per_thread + k] = handles[k].wait_for(kOpTimeout);
    });
  for (auto& t : workers) t.join();
  for (int t = 0; t < threads * per_thread; ++t)
    if (status[t].code() == kolo::StatusCode::Pending) abort_on_timeout("threads/" + std::to_string(t));
  for (int t = 0; t < threads * per_thread; ++t) {
    INFO("threads/" << t << ": " << status[t].message());
    REQUIRE(status[t].ok());
    REQUIRE(data[t] == std::vector<float>(1 + t % 50, float(3 * size() * (size() - 1) / 2 + size() * t)));
  }
}

TEST_CASE("allreduce accepts names with any characters, and long names", "[allreduce]") {
  const std::vector<std::string> names = {"odd/\"quoted\"", "odd/new\nline", "odd/tab\there", "odd/ünïcødé",
                                          "odd/" + std::string(5000, 'x'), std::string("odd/nul\0byte", 12)};
  for (int round = 0; round < 2; ++round) {
    std::vector<std::vector<int64_t>> data(names.size());
    std::vector<kolo::Handle> handles;
    for (std::size_t t = 0; t < names.size(); ++t) {
      data[t].assign(3, rank() + int64_t(t));
      handles.push_back(kolo::allreduce_async(names[t], kolo::view(data[t]), {ReduceOp::Sum}));
    }
    require_all_ok(handles, "odd names");
    for (std::size_t t = 0; t < names.size(); ++t) {
      CHECK(data[t][2] == int64_t(size() * (size() - 1) / 2 + size() * t));
    }
  }
}

TEST_CASE("a cached tensor that one rank submits much later still completes", "[allreduce][cache]") {
  // Warm the cache everywhere, then let rank 0 wait alone for longer than the time after
  // which a partially ready cached tensor is renegotiated by name.
  std::vector<float> v(6);
  for (int round = 0; round < 2; ++round) {
    std::fill(v.begin(), v.end(), float(rank() + 1));
    require_ok(kolo::allreduce_async("late/cached", kolo::view(v), {ReduceOp::Sum}));
  }
  std::fill(v.begin(), v.end(), float(rank() + 1));
  kolo::Handle h;
  if (rank() == 0) {
    h = kolo::allreduce_async("late/cached", kolo::view(v), {ReduceOp::Sum});
    if (size() > 1) CHECK(h.wait_for(std::chrono::milliseconds(1500)).code() == kolo::StatusCode::Pending);
  }
  world_barrier();
  if (rank() != 0) h = kolo::allreduce_async("late/cached", kolo::view(v), {ReduceOp::Sum});
  require_ok(h);
  CHECK(v == std::vector<float>(6, float(size() * (size() + 1) / 2)));
  // And it is cached again afterwards.
  std::fill(v.begin(), v.end(), 1.0f);
  require_ok(kolo::allreduce_async("late/cached", kolo::view(v), {ReduceOp::Sum}));
  CHECK(v[0] == float(size()));
}
