// The C API (include/kolo/kolo_c.h): handles, in-place allreduce, broadcast, allgather
// via kolo_wait_output, and failures with their kolo_status and kolo_error_message.
#include <cstring>
#include <string>
#include <thread>

#include "c_caller.h"
#include "kolo/kolo_c.h"
#include "support/mpi_util.h"

using namespace kolo_test;
using Catch::Matchers::Contains;

namespace {

// kolo_poll until done, bounded (the job stops if it is not).
bool poll_until_done(kolo_handle h) {
  const auto deadline = std::chrono::steady_clock::now() + kOpTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const int p = kolo_poll(h);
    if (p < 0) return false;
    if (p == 1) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  abort_on_timeout("C API handle " + std::to_string(h));
}

}  // namespace

TEST_CASE("C API reports rank, size and topology like the C++ API", "[c_api]") {
  CHECK(kolo_is_initialized() == 1);
  CHECK(kolo_rank() == kolo::rank());
  CHECK(kolo_size() == kolo::size());
  CHECK(kolo_local_rank() == kolo::local_rank());
  CHECK(kolo_local_size() == kolo::local_size());
  CHECK(kolo_cross_rank() == kolo::cross_rank());
  CHECK(kolo_cross_size() == kolo::cross_size());
}

TEST_CASE("C API allreduce out of place and in place, waited and polled", "[c_api]") {
  const int n = size();
  const int64_t shape[2] = {4, 5};
  std::vector<float> in(20), out(20, -1);
  for (int i = 0; i < 20; ++i) in[i] = float(i + rank());
  kolo_handle h = kolo_allreduce_async("c/allreduce/out", in.data(), out.data(), KOLO_FLOAT32, 2, shape,
                                       KOLO_SUM, 1.0, 1.0, -1);
  INFO(kolo_error_message());
  REQUIRE(h > 0);
  REQUIRE(poll_until_done(h));
  CHECK(kolo_poll(h) == 1);  // still known until waited
  REQUIRE(kolo_wait(h) == 0);
  for (int i = 0; i < 20; ++i) {
    CHECK(out[i] == float(n * i + n * (n - 1) / 2));
    CHECK(in[i] == float(i + rank()));
  }
  CHECK(kolo_poll(h) == KOLO_INVALID_ARGUMENT);  // released by kolo_wait
  CHECK(kolo_wait(h) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("unknown handle"));
  CHECK(kolo_last_error() == kolo_error_message());  // the former name, the same text

  // In place (input == output), with average and scaling.
  std::vector<double> v(7);
  for (int i = 0; i < 7; ++i) v[i] = double(4 * rank() + i);
  const int64_t len = 7;
  h = kolo_allreduce_async("c/allreduce/in", v.data(), v.data(), KOLO_FLOAT64, 1, &len, KOLO_AVERAGE, 2.0,
                           0.5, -1);
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == 0);
  for (int i = 0; i < 7; ++i) CHECK(v[i] == Approx(2.0 * (n - 1) + i).epsilon(1e-12));

  // A 16-bit dtype through the C API: 1.5 is 0x3e00 in float16.
  std::vector<uint16_t> halves(3, 0x3e00);
  const int64_t three = 3;
  h = kolo_allreduce_async("c/allreduce/half", halves.data(), halves.data(), KOLO_FLOAT16, 1, &three, KOLO_MAX,
                           1.0, 1.0, -1);
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == 0);
  CHECK(halves == std::vector<uint16_t>(3, 0x3e00));
}

TEST_CASE("C API broadcast from the last rank", "[c_api]") {
  const int root = size() - 1;
  std::vector<int64_t> b(6);
  for (int i = 0; i < 6; ++i) b[i] = rank() == root ? 100 + i : -1;
  const int64_t shape[1] = {6};
  kolo_handle h = kolo_broadcast_async("c/bcast", b.data(), KOLO_INT64, 1, shape, root, -1);
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == 0);
  for (int i = 0; i < 6; ++i) CHECK(b[i] == 100 + i);
}

TEST_CASE("C API allgather, alltoall and reducescatter results via kolo_wait_output", "[c_api]") {
  const int n = size();
  // allgather: rank r sends r + 1 rows of 2 int32s.
  std::vector<int32_t> in((rank() + 1) * 2);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = rank() * 100 + int32_t(i);
  const int64_t shape[2] = {rank() + 1, 2};
  kolo_handle h = kolo_allgather_async("c/gather", in.data(), KOLO_INT32, 2, shape, -1);
  REQUIRE(h > 0);
  REQUIRE(poll_until_done(h));
  const int64_t total_rows = n * (n + 1) / 2;
  CHECK(kolo_output_bytes(h) == total_rows * 2 * 4);
  std::vector<int32_t> out(total_rows * 2, -1);
  int64_t first_dim = -1;
  REQUIRE(kolo_wait_output(h, out.data(), int64_t(out.size() * 4), &first_dim) == 0);
  CHECK(first_dim == total_rows);
  int64_t at = 0;
  for (int q = 0; q < n; ++q)
    for (int i = 0; i < (q + 1) * 2; ++i) CHECK(out[at++] == q * 100 + i);

  // A too-small buffer is an error that says so.
  h = kolo_allgather_async("c/gather", in.data(), KOLO_INT32, 2, shape, -1);
  REQUIRE(h > 0);
  CHECK(kolo_wait_output(h, out.data(), 4, nullptr) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("bytes"));

  // alltoall with the equal split (splits NULL): one row of 3 floats per rank.
  std::vector<float> a2a(n * 3);
  for (int d = 0; d < n; ++d)
    for (int c = 0; c < 3; ++c) a2a[d * 3 + c] = float(rank() * 10 + d + c * 0.25);
  const int64_t a2a_shape[2] = {n, 3};
  h = kolo_alltoall_async("c/a2a", a2a.data(), KOLO_FLOAT32, 2, a2a_shape, nullptr, -1);
  REQUIRE(h > 0);
  std::vector<float> got(n * 3);
  REQUIRE(kolo_wait_output(h, got.data(), int64_t(got.size() * 4), &first_dim) == 0);
  CHECK(first_dim == n);
  for (int s = 0; s < n; ++s)
    for (int c = 0; c < 3; ++c) CHECK(got[s * 3 + c] == float(s * 10 + rank() + c * 0.25));

  // reducescatter: n rows of one int64, summed; rank r gets row r.
  std::vector<int64_t> rs(n);
  for (int i = 0; i < n; ++i) rs[i] = int64_t(i) * 1000 + rank();
  const int64_t rs_shape[1] = {n};
  h = kolo_reducescatter_async("c/rs", rs.data(), KOLO_INT64, 1, rs_shape, KOLO_SUM, -1);
  REQUIRE(h > 0);
  int64_t mine = -1;
  REQUIRE(kolo_wait_output(h, &mine, 8, &first_dim) == 0);
  CHECK(first_dim == 1);
  CHECK(mine == int64_t(rank()) * 1000 * n + n * (n - 1) / 2);
}

TEST_CASE("C API barrier returns 0", "[c_api]") { CHECK(kolo_barrier() == 0); }

TEST_CASE("C API rejects bad arguments at once with KOLO_INVALID_ARGUMENT and a message", "[c_api][errors]") {
  std::vector<float> buf(4);
  const int64_t shape[1] = {4};
  const int64_t negative[1] = {-4};
  // kolo_error_message() is the message of this thread's last failure: checked right after each.
  auto expect_failure = [](const char* what, kolo_handle h, const char* part, int code = KOLO_INVALID_ARGUMENT) {
    const std::string message = kolo_error_message();
    INFO(what << ": last error '" << message << "'");
    CHECK(h == code);
    CHECK_THAT(message, Contains(part));
  };
  expect_failure("null name",
                 kolo_allreduce_async(nullptr, buf.data(), buf.data(), KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1),
                 "name");
  expect_failure("null data",
                 kolo_allreduce_async("c/bad/null", nullptr, nullptr, KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1),
                 "c/bad/null");
  expect_failure("negative ndim",
                 kolo_allreduce_async("c/bad/ndim", buf.data(), buf.data(), KOLO_FLOAT32, -1, shape, KOLO_SUM, 1, 1, -1),
                 "ndim");
  expect_failure("null shape",
                 kolo_allreduce_async("c/bad/shape", buf.data(), buf.data(), KOLO_FLOAT32, 1, nullptr, KOLO_SUM, 1, 1, -1),
                 "shape");
  expect_failure("negative dimension",
                 kolo_allreduce_async("c/bad/negdim", buf.data(), buf.data(), KOLO_FLOAT32, 1, negative, KOLO_SUM, 1, 1, -1),
                 "negative");
  expect_failure("unknown dtype", c_caller_allreduce("c/bad/dtype", buf.data(), 42, KOLO_SUM), "unknown dtype 42");
  expect_failure("unknown op", c_caller_allreduce("c/bad/op", buf.data(), KOLO_FLOAT32, 9), "unknown reduction op 9");
  expect_failure("average of int",
                 kolo_allreduce_async("c/bad/intavg", buf.data(), buf.data(), KOLO_INT32, 1, shape, KOLO_AVERAGE, 1, 1, -1),
                 "c/bad/intavg");
  // Host memory said to be on cuda:0: a bad tensor where the build has CUDA, and a build
  // without it cannot take GPU tensors at all.
  expect_failure("GPU memory on the MPI backend",
                 kolo_allreduce_async("c/bad/gpu", buf.data(), buf.data(), KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, 0),
                 "c/bad/gpu", kolo::build_info().cuda ? KOLO_INVALID_ARGUMENT : KOLO_UNSUPPORTED);
  expect_failure("broadcast root out of range",
                 kolo_broadcast_async("c/bad/root", buf.data(), KOLO_FLOAT32, 1, shape, size(), -1), "root");
  expect_failure("broadcast negative root",
                 kolo_broadcast_async("c/bad/root2", buf.data(), KOLO_FLOAT32, 1, shape, -1, -1), "root");
  expect_failure("allgather of a scalar",
                 kolo_allgather_async("c/bad/gather", buf.data(), KOLO_FLOAT32, 0, nullptr, -1), "c/bad/gather");
  expect_failure("reducescatter unknown op", c_caller_reducescatter("c/bad/rs", buf.data(), -3),
                 "unknown reduction op -3");
  expect_failure("alltoall splits that do not add up",
                 kolo_alltoall_async("c/bad/a2a", buf.data(), KOLO_FLOAT32, 1, shape,
                                     std::vector<int64_t>(size(), 5).data(), -1),
                 "c/bad/a2a");
  CHECK(kolo_poll(123456789) == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_wait(-5) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("unknown handle"));
  CHECK(kolo_output_bytes(987654321) == KOLO_INVALID_ARGUMENT);
}

TEST_CASE("C API returns KOLO_MISMATCH on every rank when ranks disagree on a shape", "[c_api][errors]") {
  if (size() < 2) {
    WARN("skipped: a mismatch needs at least 2 ranks");
    return;
  }
  std::vector<float> v(rank() == 0 ? 4 : 5, 1.0f);
  const int64_t shape[1] = {int64_t(v.size())};
  const kolo_handle h = kolo_allreduce_async("c/mismatch", v.data(), v.data(), KOLO_FLOAT32, 1, shape, KOLO_SUM,
                                             1, 1, -1);
  REQUIRE(h > 0);
  REQUIRE(poll_until_done(h));
  CHECK(kolo_wait(h) == KOLO_MISMATCH);
  CHECK_THAT(std::string(kolo_error_message()), Contains("c/mismatch") && Contains("shape"));
}

TEST_CASE("C API kolo_output_bytes is KOLO_PENDING until every rank has submitted", "[c_api]") {
  // Rank 0 submits first and asks; the others submit only after it has asked.
  int32_t mine = rank();
  const int64_t one[1] = {1};
  kolo_handle h = 0;
  if (rank() == 0) {
    h = kolo_allgather_async("c/pending", &mine, KOLO_INT32, 1, one, -1);
    REQUIRE(h > 0);
    if (size() > 1) CHECK(kolo_output_bytes(h) == KOLO_PENDING);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() != 0) h = kolo_allgather_async("c/pending", &mine, KOLO_INT32, 1, one, -1);
  REQUIRE(h > 0);
  REQUIRE(poll_until_done(h));
  CHECK(kolo_output_bytes(h) == int64_t(size()) * 4);
  std::vector<int32_t> all(size(), -1);
  REQUIRE(kolo_wait_output(h, all.data(), int64_t(all.size() * 4), nullptr) == KOLO_OK);
  for (int q = 0; q < size(); ++q) CHECK(all[q] == q);
}

TEST_CASE("C API status names are kolo::StatusCode's", "[c_api][errors]") {
  const std::pair<int, const char*> names[] = {
      {KOLO_OK, "Ok"},           {KOLO_PENDING, "Pending"},       {KOLO_INVALID_ARGUMENT, "InvalidArgument"},
      {KOLO_MISMATCH, "Mismatch"}, {KOLO_STALLED, "Stalled"},     {KOLO_ABORTED, "Aborted"},
      {KOLO_COMM_FAILURE, "CommFailure"}, {KOLO_IO_ERROR, "IoError"}, {KOLO_DEVICE_ERROR, "DeviceError"},
      {KOLO_INTERNAL, "Internal"}, {KOLO_UNSUPPORTED, "Unsupported"}};
  for (const auto& [status, name] : names) CHECK(std::string(kolo_status_name(status)) == name);
  CHECK(std::string(kolo_status_name(1)) == "unknown");
  CHECK(std::string(kolo_status_name(KOLO_UNSUPPORTED - 1)) == "unknown");
}

TEST_CASE("C API last error is per thread", "[c_api][errors]") {
  std::vector<float> buf(4);
  const int64_t shape[1] = {4};
  CHECK(kolo_allreduce_async(nullptr, buf.data(), buf.data(), KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1) < 0);
  const std::string mine = kolo_error_message();
  std::string theirs;
  std::thread other([&] {
    kolo_wait(-77);
    theirs = kolo_error_message();
  });
  other.join();
  CHECK_THAT(theirs, Contains("unknown handle"));
  CHECK(std::string(kolo_error_message()) == mine);
}

// kolo_output_bytes is for results owned by the handle (allgather, alltoall,
// reducescatter); an allreduce handle has none and must not report a size.
TEST_CASE("C API has no output for an allreduce handle", "[c_api]") {
  float x[3] = {1, 2, 3};
  const int64_t shape[1] = {3};
  const kolo_handle h = kolo_allreduce_async("c/nooutput", x, x, KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1);
  REQUIRE(h > 0);
  REQUIRE(poll_until_done(h));
  const int64_t bytes = kolo_output_bytes(h);
  REQUIRE(kolo_wait(h) == 0);
  CHECK(bytes <= 0);
  // kolo_wait_output on such a handle is an error with a message, not a crash.
  const kolo_handle h2 = kolo_allreduce_async("c/nooutput", x, x, KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1);
  REQUIRE(h2 > 0);
  float out[4] = {-1, -1, -1, -1};
  CHECK(kolo_wait_output(h2, out, sizeof out, nullptr) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("no result"));
  CHECK(out[0] == -1);
  CHECK(x[2] == 3.0f * size() * size());  // both allreduces ran
}
