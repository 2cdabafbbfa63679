#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kolo/models.h"
#include "models/cpu/thread_pool.h"

using namespace kolo::models;

// Regression: a worker that started after the first parallel loop had begun waited for
// the next one forever. Resizing and using the pool at once, many times, hit it.
TEST_CASE("kernels give the same result with 1 and 2 threads, right after resizing", "[threads]") {
  Conv2d conv({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1});
  for (int64_t i = 0; i < conv.weight().value.numel(); ++i) conv.weight().value[i] = float(i % 7) - 3.0f;
  Tensor x({4, 2, 6, 6});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = float(i % 5) - 2.0f;
  set_num_threads(1);
  const Tensor expected = conv.forward(x).clone();
  for (int round = 0; round < 200; ++round) {
    set_num_threads(2);
    const Tensor y = conv.forward(x);
    bool same = true;
    for (int64_t i = 0; i < y.numel(); ++i) same = same && y[i] == expected[i];
    REQUIRE(same);
  }
  CHECK(num_threads() == 2);
  set_num_threads(1);
}

namespace {

struct ConvResult {
  Tensor y, dx, dw, db;
};

ConvResult conv_pass(int threads, int64_t batch, int64_t size, int64_t kernel, int64_t padding) {
  set_num_threads(threads);
  Conv2d conv({.in_channels = 3, .out_channels = 5, .kernel = kernel, .padding = padding});
  conv.set_needs_input_grad(true);
  for (int64_t i = 0; i < conv.weight().value.numel(); ++i) conv.weight().value[i] = float(i % 11) * 0.1f - 0.5f;
  for (int64_t i = 0; i < conv.bias()->value.numel(); ++i) conv.bias()->value[i] = float(i) * 0.25f;
  Tensor x({batch, 3, size, size});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = float(i % 13) * 0.2f - 1.0f;
  ConvResult r;
  r.y = conv.forward(x).clone();
  Tensor dy(r.y.shape());
  for (int64_t i = 0; i < dy.numel(); ++i) dy[i] = float(i % 7) * 0.3f - 0.9f;
  conv.zero_grad();
  r.dx = conv.backward(dy).clone();
  r.dw = conv.weight().grad.clone();
  r.db = conv.bias()->grad.clone();
  set_num_threads(1);
  return r;
}

void require_close(const Tensor& a, const Tensor& b) {
  REQUIRE(a.numel() == b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) REQUIRE(a[i] == Approx(b[i]).margin(1e-4).epsilon(1e-5));
}

}  // namespace

// Two ways of using threads in a convolution: whole image groups per thread (many small
// maps... or large ones: one image per group), and one group split across the threads
// by channels and rows (few groups: ResNet's 1×1 to 4×4 late-stage maps). Both must give
// the single-thread result, forward and backward.
TEST_CASE("convolution forward and backward agree between 1 and 2 threads in both modes", "[threads]") {
  struct Case {
    const char* what;
    int64_t batch, size, kernel, padding;
  };
  for (const Case c : {Case{"one group split across threads (2x2 maps)", 8, 2, 3, 1},
                       Case{"three groups, split", 3, 16, 3, 1},
                       Case{"pointwise single-image groups, split", 3, 16, 1, 0},
                       Case{"pointwise single-image groups, one thread each", 6, 16, 1, 0},
                       Case{"many groups, one thread each", 8, 20, 5, 2},
                       Case{"taps reading only padding (1x1 maps), split", 3, 1, 3, 1},
                       Case{"taps reading only padding (1x1 maps), one thread each", 512, 1, 3, 1}}) {
    INFO(c.what);
    const ConvResult one = conv_pass(1, c.batch, c.size, c.kernel, c.padding);
    const ConvResult two = conv_pass(2, c.batch, c.size, c.kernel, c.padding);
    require_close(two.y, one.y);
    require_close(two.dx, one.dx);
    require_close(two.dw, one.dw);
    require_close(two.db, one.db);
  }
}

// A kernel that throws (oneDNN creating a primitive, an allocation) on any thread: the
// caller gets the exception once every thread has left the loop, and the pool still works.
TEST_CASE("an exception thrown inside parallel_for reaches the caller after all threads finish", "[threads]") {
  set_num_threads(2);
  for (int thrower : {0, 1}) {
    INFO("thread " << thrower << " throws");
    std::atomic<int> finished{0};
    REQUIRE_THROWS_WITH(cpu::parallel_for(2, [&](int64_t, int64_t, int thread) {
                          if (thread == thrower) throw std::runtime_error("kernel failed");
                          std::this_thread::sleep_for(std::chrono::milliseconds(10));
                          finished.fetch_add(1);
                        }),
                        "kernel failed");
    CHECK(finished.load() == 1);  // the other thread had finished before the rethrow
    std::atomic<int> chunks{0};
    cpu::parallel_for(2, [&](int64_t, int64_t, int) { chunks.fetch_add(1); });
    CHECK(chunks.load() == 2);
  }
  set_num_threads(1);
}

// The pool holds one job's fields: two program threads calling kernels at once overwrote
// each other's job, and a worker ran one thread's loop after that call had returned.
TEST_CASE("two program threads running kernels at once each get their own results", "[threads]") {
  set_num_threads(2);
  constexpr int64_t n = 1 << 16;
  std::atomic<int> wrong{0};
  auto loop = [&](float value) {
    std::vector<float> out(n);
    for (int i = 0; i < 200; ++i) {
      cpu::parallel_for(n, [&](int64_t begin, int64_t end, int) {
        for (int64_t j = begin; j < end; ++j) out[j] = value + float(i);
      });
      for (int64_t j = 0; j < n; j += 4099)
        if (out[j] != value + float(i)) wrong.fetch_add(1);
    }
  };
  std::thread a(loop, 1.0f), b(loop, 1000.0f);
  a.join();
  b.join();
  CHECK(wrong.load() == 0);
  set_num_threads(1);
}
