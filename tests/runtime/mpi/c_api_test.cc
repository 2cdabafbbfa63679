// The C API (include/kolo/kolo_c.h): handles, in-place allreduce, broadcast, allgather
// via kolo_wait_output, and failures with their kolo_status and kolo_error_message; the
// process set (_ps) variants on the global set, grouped operations, byte buffers, join's
// last rank, the timeline and the queries; dynamic process sets in their own run
// ([process_sets], with KOLO_DYNAMIC_PROCESS_SETS=1).
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
  CHECK(kolo_wait_output(h, nullptr, int64_t(out.size() * 4), nullptr) == KOLO_INVALID_ARGUMENT);  // once a crash
  CHECK_THAT(std::string(kolo_error_message()), Contains("NULL"));
  REQUIRE(kolo_wait_output(h, out.data(), int64_t(out.size() * 4), nullptr) == KOLO_OK);  // the handle stayed

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

TEST_CASE("C API refuses a name still in flight at once, and the first operation goes on", "[c_api][errors]") {
  if (size() < 2) {
    WARN("skipped: needs at least 2 ranks");
    return;
  }
  // Rank r's own name cannot complete before the other ranks submit it, which they do
  // only after every rank has tried the duplicate.
  const std::string own = "c/inflight/" + std::to_string(rank());
  std::vector<float> first(3, 1.0f), second(3, -1.0f);
  const int64_t shape[1] = {3};
  const kolo_handle h1 =
      kolo_allreduce_async(own.c_str(), first.data(), first.data(), KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1);
  REQUIRE(h1 >= 0);
  const kolo_handle h2 =
      kolo_allreduce_async(own.c_str(), second.data(), second.data(), KOLO_FLOAT32, 1, shape, KOLO_SUM, 1, 1, -1);
  CHECK(h2 == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains(own) && Contains("already in flight"));
  CHECK(second == std::vector<float>(3, -1.0f));
  world_barrier();
  std::vector<std::vector<float>> theirs(size(), std::vector<float>(3, 1.0f));
  std::vector<kolo_handle> handles(size(), -1);
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    const std::string name = "c/inflight/" + std::to_string(r);
    handles[r] = kolo_allreduce_async(name.c_str(), theirs[r].data(), theirs[r].data(), KOLO_FLOAT32, 1, shape, KOLO_SUM,
                                      1, 1, -1);
  }
  CHECK(kolo_wait(h1) == KOLO_OK);
  CHECK(first == std::vector<float>(3, float(size())));
  for (int r = 0; r < size(); ++r)
    if (r != rank()) CHECK(kolo_wait(handles[r]) == KOLO_OK);
}


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
  // Once accepted, and then taken by the coordinator for a damaged message: the job ended.
  const int64_t overflowing[2] = {std::numeric_limits<int64_t>::max() / 2 + 1, 4};
  expect_failure("a shape whose product overflows",
                 kolo_allreduce_async("c/bad/huge", buf.data(), buf.data(), KOLO_FLOAT32, 2, overflowing, KOLO_SUM, 1,
                                      1, -1),
                 "more elements than 64 bits count");
  expect_failure("unknown dtype", c_caller_allreduce("c/bad/dtype", buf.data(), 42, KOLO_SUM), "unknown dtype 42");
  expect_failure("unknown op", c_caller_allreduce("c/bad/op", buf.data(), KOLO_FLOAT32, 9), "unknown reduction op 9");
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

// ---- process sets, grouped operations, byte buffers, join, timeline, queries ----------------

namespace {

// kolo_wait on every handle (bounded), then whether all were KOLO_OK.
bool wait_all(const kolo_handle* handles, int count) {
  bool ok = true;
  for (int i = 0; i < count; ++i) {
    if (handles[i] <= 0 || !poll_until_done(handles[i])) {
      ok = false;
      continue;
    }
    const int status = kolo_wait(handles[i]);
    if (status != KOLO_OK) {
      UNSCOPED_INFO("handle " << i << ": " << kolo_status_name(status) << ": " << kolo_error_message());
      ok = false;
    }
  }
  return ok;
}

// The ranks of a set through the C API, sized first (NULL, 0).
std::vector<int> c_set_ranks(int set) {
  const int n = kolo_process_set_ranks(set, nullptr, 0);
  if (n < 0) return {};
  std::vector<int> ranks(n, -7);
  if (kolo_process_set_ranks(set, ranks.data(), n) != n) return {};
  return ranks;
}

std::vector<int> c_set_ids() {
  const int n = kolo_process_set_ids(nullptr, 0);
  if (n < 0) return {};
  std::vector<int> ids(n, -7);
  if (kolo_process_set_ids(ids.data(), n) != n) return {};
  return ids;
}

// The result of a done handle (kolo_output_bytes, then kolo_wait_output) as T's.
template <typename T>
std::vector<T> c_result(kolo_handle h, int64_t* first_dim = nullptr) {
  REQUIRE(h > 0);
  REQUIRE(poll_until_done(h));
  const int64_t bytes = kolo_output_bytes(h);
  REQUIRE(bytes >= 0);
  std::vector<T> out(static_cast<std::size_t>(bytes) / sizeof(T));
  const int status = kolo_wait_output(h, out.data(), bytes, first_dim);
  INFO(kolo_error_message());
  REQUIRE(status == KOLO_OK);
  return out;
}

std::string c_result_string(kolo_handle h) {
  const std::vector<char> chars = c_result<char>(h);
  return std::string(chars.begin(), chars.end());
}

}  // namespace

TEST_CASE("C API build and environment queries", "[c_api]") {
  CHECK(kolo_mpi_built() == 1);
  CHECK(kolo_nccl_built() == (kolo::build_info().nccl ? kolo::build_info().nccl_version_code : 0));
  CHECK((kolo_nccl_built() > 0) == kolo::build_info().nccl);
  CHECK(kolo_cuda_built() == (kolo::build_info().cuda ? 1 : 0));
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  CHECK(kolo_mpi_threads_supported() == (provided == MPI_THREAD_MULTIPLE ? 1 : 0));
  // Homogeneous: every node runs as many ranks as this one (checked over MPI).
  const int local = kolo_local_size();
  int min_local = 0, max_local = 0;
  MPI_Allreduce(&local, &min_local, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local, &max_local, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(kolo_is_homogeneous() == (min_local == max_local ? 1 : 0));
}

TEST_CASE("C API process set queries: the global set 0, unknown sets, and what needs dynamic sets",
          "[c_api][errors]") {
  const int n = size();
  CHECK(c_set_ids() == std::vector<int>{0});  // no other set in this run
  std::vector<int> everyone(n);
  for (int r = 0; r < n; ++r) everyone[r] = r;
  CHECK(c_set_ranks(0) == everyone);
  // capacity smaller than the set: the first ranks written, the full count returned.
  int two[2] = {-7, -7};
  CHECK(kolo_process_set_ranks(0, two, 1) == n);
  CHECK(two[0] == 0);
  CHECK(two[1] == -7);
  CHECK(kolo_process_set_rank(0) == rank());
  CHECK(kolo_process_set_size(0) == n);
  CHECK(kolo_process_set_included(0) == 1);

  auto expect_failure = [](const char* what, int result, const char* part) {
    const std::string message = kolo_error_message();
    INFO(what << ": returned " << result << ", last error '" << message << "'");
    CHECK(result == KOLO_INVALID_ARGUMENT);
    CHECK_THAT(message, Contains(part));
  };
  expect_failure("ranks of an unknown set", kolo_process_set_ranks(999, two, 2), "no process set 999");
  expect_failure("rank in an unknown set", kolo_process_set_rank(998), "no process set 998");
  expect_failure("size of an unknown set", kolo_process_set_size(997), "no process set 997");
  expect_failure("included in an unknown set", kolo_process_set_included(996), "no process set 996");
  expect_failure("negative capacity", kolo_process_set_ids(two, -1), "capacity");
  expect_failure("NULL array with a capacity", kolo_process_set_ranks(0, nullptr, 3), "capacity");
  expect_failure("removing the global set", kolo_remove_process_set(0), "cannot be removed");
  const int zero = 0;
  expect_failure("add with a negative count", kolo_add_process_set(&zero, -1), "count");
  if (n > 1) {
    expect_failure("add without KOLO_DYNAMIC_PROCESS_SETS", kolo_add_process_set(&zero, 1),
                   "KOLO_DYNAMIC_PROCESS_SETS");
    expect_failure("remove without KOLO_DYNAMIC_PROCESS_SETS", kolo_remove_process_set(1),
                   "KOLO_DYNAMIC_PROCESS_SETS");
  }
  // Operations on a set that does not exist fail at once, naming it.
  float x[4] = {1, 2, 3, 4};
  const int64_t four[1] = {4};
  expect_failure("allreduce on an unknown set",
                 int(kolo_allreduce_async_ps("c/ps/unknown", x, x, KOLO_FLOAT32, 1, four, KOLO_SUM, 1, 1, -1, 4242)),
                 "4242");
  expect_failure("barrier on an unknown set", kolo_barrier_ps(4243), "4243");
  CHECK(x[3] == 4.0f);
}

TEST_CASE("C API _ps variants on the global set, with reducescatter's scaling and automatic names", "[c_api]") {
  const int n = size(), me = rank();
  // allreduce: prescale 3, postscale 0.5, sum of (rank + i).
  std::vector<double> v(5);
  for (int i = 0; i < 5; ++i) v[i] = me + i;
  const int64_t five[1] = {5};
  kolo_handle h = kolo_allreduce_async_ps("c/ps/allreduce", v.data(), v.data(), KOLO_FLOAT64, 1, five, KOLO_SUM, 3.0,
                                          0.5, -1, 0);
  INFO(kolo_error_message());
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == KOLO_OK);
  for (int i = 0; i < 5; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += (r + i) * 3.0 * 0.5;
    CHECK(v[i] == Approx(want));
  }
  // broadcast from rank 0.
  int32_t b[3] = {me * 7, me * 7 + 1, me * 7 + 2};
  const int64_t three[1] = {3};
  h = kolo_broadcast_async_ps("c/ps/bcast", b, KOLO_INT32, 1, three, 0, -1, 0);
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == KOLO_OK);
  CHECK((b[0] == 0 && b[1] == 1 && b[2] == 2));
  // allgather: one value, the rank times 11.
  int64_t mine = me * 11;
  const int64_t one[1] = {1};
  int64_t first_dim = -1;
  const std::vector<int64_t> gathered =
      c_result<int64_t>(kolo_allgather_async_ps("c/ps/gather", &mine, KOLO_INT64, 1, one, -1, 0), &first_dim);
  CHECK(first_dim == n);
  REQUIRE(gathered.size() == std::size_t(n));
  for (int r = 0; r < n; ++r) CHECK(gathered[r] == r * 11);
  // alltoall with explicit splits: d + 1 rows to rank d, each 1000 * me + d.
  std::vector<int32_t> rows;
  std::vector<int64_t> splits(n);
  for (int d = 0; d < n; ++d) {
    splits[d] = d + 1;
    for (int k = 0; k <= d; ++k) rows.push_back(1000 * me + d);
  }
  const int64_t rows_shape[1] = {int64_t(rows.size())};
  h = kolo_alltoall_async_ps("c/ps/a2a", rows.data(), KOLO_INT32, 1, rows_shape, splits.data(), -1, 0);
  REQUIRE(h > 0);
  REQUIRE(poll_until_done(h));
  std::vector<int64_t> received(n, -1);
  CHECK(kolo_received_splits(h, nullptr, 0) == n);
  CHECK(kolo_received_splits(h, received.data(), n) == n);
  for (int s = 0; s < n; ++s) CHECK(received[s] == me + 1);
  const std::vector<int32_t> got = c_result<int32_t>(h, &first_dim);
  CHECK(first_dim == int64_t(n) * (me + 1));
  for (int s = 0, at = 0; s < n; ++s)
    for (int k = 0; k <= me; ++k) CHECK(got[at++] == 1000 * s + me);
  // reducescatter: n rows of 2 floats, average, prescale 2, postscale 0.25; rank r gets row r.
  std::vector<float> rs(2 * n);
  for (int i = 0; i < 2 * n; ++i) rs[i] = float(me + i);
  const int64_t rs_shape[2] = {n, 2};
  const std::vector<float> part = c_result<float>(
      kolo_reducescatter_async_ps("c/ps/rs", rs.data(), KOLO_FLOAT32, 2, rs_shape, KOLO_AVERAGE, 2.0, 0.25, -1, 0),
      &first_dim);
  CHECK(first_dim == 1);
  REQUIRE(part.size() == 2);
  for (int c = 0; c < 2; ++c) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += 2.0 * (r + 2 * me + c);
    CHECK(part[c] == Approx(sum / n * 0.25));
  }
  CHECK(rs[0] == float(me));  // the caller's input is not scaled
  // Product tells the prescale (on each rank's input) from the postscale (once): rank r's
  // element is r + 1 + row, prescale 2, postscale 3. Allreduce and reducescatter alike.
  std::vector<double> prod(n);
  for (int i = 0; i < n; ++i) prod[i] = me + 1 + i;
  const int64_t prod_shape[1] = {n};
  std::vector<double> prod_all(n);
  h = kolo_allreduce_async_ps("c/ps/product", prod.data(), prod_all.data(), KOLO_FLOAT64, 1, prod_shape,
                              KOLO_PRODUCT, 2.0, 3.0, -1, 0);
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == KOLO_OK);
  const std::vector<double> prod_part = c_result<double>(kolo_reducescatter_async_ps(
      "c/ps/rs_product", prod.data(), KOLO_FLOAT64, 1, prod_shape, KOLO_PRODUCT, 2.0, 3.0, -1, 0));
  auto product = [&](int row) {
    double p = 3.0;
    for (int r = 0; r < n; ++r) p *= 2.0 * (r + 1 + row);
    return p;
  };
  for (int i = 0; i < n; ++i) CHECK(prod_all[i] == Approx(product(i)));
  REQUIRE(prod_part.size() == 1);
  CHECK(prod_part[0] == Approx(product(me)));
  // Unnamed ("") operations match in submission order: two allreduces, different values.
  float first = float(me + 1), second = float(10 * (me + 1));
  const kolo_handle h1 = kolo_allreduce_async_ps("", &first, &first, KOLO_FLOAT32, 0, nullptr, KOLO_SUM, 1, 1, -1, 0);
  const kolo_handle h2 = kolo_allreduce_async("", &second, &second, KOLO_FLOAT32, 0, nullptr, KOLO_SUM, 1, 1, -1);
  REQUIRE(h1 > 0);
  REQUIRE(h2 > 0);
  REQUIRE(kolo_wait(h1) == KOLO_OK);
  REQUIRE(kolo_wait(h2) == KOLO_OK);
  CHECK(first == float(n * (n + 1) / 2));
  CHECK(second == float(10 * n * (n + 1) / 2));
  CHECK(kolo_barrier_ps(0) == KOLO_OK);
}

TEST_CASE("C API grouped allreduce (from C), allgather and reducescatter", "[c_api]") {
  const int n = size(), me = rank();
  float a[3], b[4];
  for (int i = 0; i < 3; ++i) a[i] = float(me + i);
  for (int i = 0; i < 4; ++i) b[i] = float(100 * me + i);
  kolo_handle handles[3] = {0, 0, 0};
  REQUIRE(c_caller_grouped_allreduce("c/group/a", a, "c/group/b", b, 0, handles) == KOLO_OK);
  CHECK(handles[2] == 0);  // two members: two handles written
  REQUIRE(wait_all(handles, 2));
  for (int i = 0; i < 3; ++i) CHECK(a[i] == float(n * (n - 1) / 2 + n * i));
  for (int i = 0; i < 4; ++i) CHECK(b[i] == float(100 * n * (n - 1) / 2 + n * i));

  // grouped allgather (one dtype per group): member 0 has me + 1 rows, each me; member 1
  // two rows, each -me.
  std::vector<int32_t> g0(me + 1, me);
  int32_t g1[2] = {-me, -me};
  const int64_t g0_shape[1] = {me + 1}, g1_shape[1] = {2};
  const char* names[2] = {"c/group/gather0", "c/group/gather1"};
  const void* inputs[2] = {g0.data(), g1};
  const int ndims[2] = {1, 1};
  const int64_t* shapes[2] = {g0_shape, g1_shape};
  REQUIRE(kolo_grouped_allgather_async(2, names, inputs, KOLO_INT32, ndims, shapes, -1, 0, handles) == KOLO_OK);
  int64_t first_dim = -1;
  const std::vector<int32_t> all0 = c_result<int32_t>(handles[0], &first_dim);
  CHECK(first_dim == int64_t(n) * (n + 1) / 2);
  for (int r = 0, at = 0; r < n; ++r)
    for (int k = 0; k <= r; ++k) CHECK(all0.at(at++) == r);
  const std::vector<int32_t> all1 = c_result<int32_t>(handles[1], &first_dim);
  CHECK(first_dim == 2 * n);
  for (int r = 0; r < n; ++r) CHECK((all1.at(2 * r) == -r && all1.at(2 * r + 1) == -r));

  // grouped reducescatter: two float64 members of n and 2n rows, sum with prescale 3.
  std::vector<double> r0(n), r1(2 * n);
  for (int i = 0; i < n; ++i) r0[i] = me + i;
  for (int i = 0; i < 2 * n; ++i) r1[i] = me * i;
  const int64_t r0_shape[1] = {n}, r1_shape[1] = {2 * n};
  const char* rs_names[2] = {"c/group/rs0", "c/group/rs1"};
  const void* rs_inputs[2] = {r0.data(), r1.data()};
  const int64_t* rs_shapes[2] = {r0_shape, r1_shape};
  REQUIRE(kolo_grouped_reducescatter_async(2, rs_names, rs_inputs, KOLO_FLOAT64, ndims, rs_shapes, KOLO_SUM, 3.0, 1.0,
                                           -1, 0, handles) == KOLO_OK);
  const std::vector<double> mine0 = c_result<double>(handles[0], &first_dim);
  CHECK(first_dim == 1);
  CHECK(mine0.at(0) == Approx(3.0 * (n * (n - 1) / 2 + n * me)));
  const std::vector<double> mine1 = c_result<double>(handles[1], &first_dim);
  CHECK(first_dim == 2);
  for (int k = 0; k < 2; ++k) CHECK(mine1.at(k) == Approx(3.0 * (n * (n - 1) / 2) * (2 * me + k)));
}

TEST_CASE("C API grouped calls reject bad groups at once, on every member's handle", "[c_api][errors]") {
  float a[3] = {1, 2, 3}, b[4] = {1, 2, 3, 4};
  kolo_handle handles[2] = {77, 77};
  CHECK(c_caller_grouped_allreduce("c/group/bad", a, nullptr, b, 0, handles) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("name is NULL"));
  CHECK((handles[0] == KOLO_INVALID_ARGUMENT && handles[1] == KOLO_INVALID_ARGUMENT));
  const int ndims[1] = {1};
  const int64_t shape[1] = {3};
  const int64_t* shapes[1] = {shape};
  const char* names[1] = {"c/group/bad2"};
  const void* inputs[1] = {a};
  handles[0] = 77;
  CHECK(kolo_grouped_allgather_async(0, names, inputs, KOLO_FLOAT32, ndims, shapes, -1, 0, handles) ==
        KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("at least one"));
  CHECK(handles[0] == 77);  // count 0: nothing written
  CHECK(kolo_grouped_reducescatter_async(1, names, inputs, KOLO_FLOAT32, nullptr, shapes, KOLO_SUM, 1, 1, -1, 0,
                                         handles) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("non-null"));
  CHECK(handles[0] == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_grouped_allreduce_async(1, names, inputs, nullptr, KOLO_FLOAT32, ndims, shapes, KOLO_SUM, 1, 1, -1, 0,
                                     handles) == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_grouped_reducescatter_async(1, names, inputs, KOLO_FLOAT32, ndims, shapes, KOLO_SUM, 1, 1, -1, 31337,
                                         handles) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("31337"));
  CHECK(a[0] == 1.0f);
}

TEST_CASE("C API byte buffers: broadcast and allgather of any size", "[c_api]") {
  const int n = size(), me = rank();
  const int root = n - 1;
  // Root's text reaches every rank; the others' text is ignored.
  const std::string text = me == root ? "root " + std::to_string(root) + " says hello" : "ignored";
  char out[64];
  std::memset(out, '#', sizeof out);
  const int64_t got = c_caller_broadcast_string("c/bytes/bcast", text.c_str(), root, 0, out, sizeof out);
  INFO(kolo_error_message());
  const std::string want = "root " + std::to_string(root) + " says hello";
  REQUIRE(got == int64_t(want.size()));
  CHECK(std::string(out, std::size_t(got)) == want);
  CHECK(out[got] == '#');
  // 0 bytes, and an automatic name ("").
  kolo_handle h = kolo_broadcast_bytes("", nullptr, 0, 0, 0);
  REQUIRE(h > 0);
  CHECK(kolo_output_bytes(h) == 0);
  CHECK(c_result_string(h).empty());
  // A buffer too small for root's bytes: the call says so (the handle is then released).
  CHECK(c_caller_broadcast_string("c/bytes/small", text.c_str(), root, 0, out, 3) == KOLO_INVALID_ARGUMENT);

  // allgather: rank r sends r bytes, each 'a' + r (rank 0 sends none).
  const std::string mine(std::size_t(me), char('a' + me));
  h = kolo_allgather_bytes("c/bytes/gather", mine.data(), int64_t(mine.size()), 0);
  REQUIRE(h > 0);
  std::vector<int64_t> sizes(n + 1, -1);
  CHECK(kolo_received_splits(h, sizes.data(), n + 1) == n);
  std::string expected;
  for (int r = 0; r < n; ++r) {
    CHECK(sizes[r] == r);
    expected += std::string(std::size_t(r), char('a' + r));
  }
  CHECK(sizes[n] == -1);
  CHECK(kolo_output_bytes(h) == int64_t(expected.size()));
  CHECK(c_result_string(h) == expected);

  CHECK(kolo_broadcast_bytes(nullptr, "x", 1, 0, 0) == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_allgather_bytes("c/bytes/bad", nullptr, 5, 0) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("nbytes"));
  CHECK(kolo_broadcast_bytes("c/bytes/badroot", "x", 1, n, 0) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("root"));
  CHECK(kolo_received_splits(-3, nullptr, 0) == KOLO_INVALID_ARGUMENT);
}

TEST_CASE("C API kolo_join_ps returns the last rank to join", "[c_api]") {
  // Every rank but 0 joins; rank 0's allreduce then runs with their zeros (which shows that
  // they have joined), and rank 0 joins last.
  int last = -7;
  if (rank() != 0) {
    REQUIRE(kolo_join_ps(0, &last) == KOLO_OK);
  } else {
    float x = 7.0f;
    const kolo_handle h = kolo_allreduce_async("c/join/allreduce", &x, &x, KOLO_FLOAT32, 0, nullptr, KOLO_SUM, 1, 1, -1);
    REQUIRE(h > 0);
    REQUIRE(kolo_wait(h) == KOLO_OK);
    CHECK(x == 7.0f);
    REQUIRE(kolo_join_ps(0, &last) == KOLO_OK);
  }
  CHECK(last == 0);
  CHECK(kolo_join_ps(0, nullptr) == KOLO_OK);  // NULL: the rank is not stored
  CHECK(kolo_join_ps(5150, &last) == KOLO_INVALID_ARGUMENT);
  CHECK_THAT(std::string(kolo_error_message()), Contains("5150"));
}

TEST_CASE("C API timeline started and stopped while kolo runs", "[c_api]") {
  // Rank 0 writes the file; the other ranks' calls do nothing (and must not fail).
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kolo_c_api_timeline." + std::to_string(::getpid()) + ".json"))
                               .string();
  REQUIRE(kolo_start_timeline(path.c_str(), 1) == KOLO_OK);
  float x = 1.0f;
  const kolo_handle h = kolo_allreduce_async("c/timeline/op", &x, &x, KOLO_FLOAT32, 0, nullptr, KOLO_SUM, 1, 1, -1);
  REQUIRE(h > 0);
  REQUIRE(kolo_wait(h) == KOLO_OK);
  REQUIRE(kolo_stop_timeline() == KOLO_OK);
  if (rank() == 0) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    CHECK_THAT(text.str(), Contains("c/timeline/op") && Contains("kolo rank 0"));
    std::filesystem::remove(path);
  }
  const int bad = kolo_start_timeline("/nonexistent-kolo-dir/timeline.json", 0);
  CHECK(bad == (rank() == 0 ? KOLO_IO_ERROR : KOLO_OK));
  CHECK(kolo_start_timeline(nullptr, 0) == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_stop_timeline() == KOLO_OK);
}

// Its own CTest entries (mpi_np{2,3,4}_process_sets), with KOLO_DYNAMIC_PROCESS_SETS=1.
// Set A: every rank but the last; set B: the odd ranks. Each operation on each set, checked
// against sums over the set's ranks; a rank outside a set gets KOLO_INVALID_ARGUMENT.
TEST_CASE("C API dynamic process sets: add, query, every operation, join, remove", "[.][process_sets]") {
  const int n = size(), me = rank();
  REQUIRE(n >= 2);
  std::vector<int> a_ranks, b_ranks;
  for (int r = 0; r < n - 1; ++r) a_ranks.push_back(r);
  for (int r = 1; r < n; r += 2) b_ranks.push_back(r);
  const std::vector<int> ids_before = c_set_ids();
  REQUIRE(!ids_before.empty());
  // Ranks in any order: A given in reverse.
  const std::vector<int> a_reversed(a_ranks.rbegin(), a_ranks.rend());
  const int a = kolo_add_process_set(a_reversed.data(), int(a_reversed.size()));
  INFO(kolo_error_message());
  REQUIRE(a > 0);
  const int b = kolo_add_process_set(b_ranks.data(), int(b_ranks.size()));
  REQUIRE(b > 0);
  CHECK(a != b);
  std::vector<int> ids_want = ids_before;
  ids_want.push_back(a);
  ids_want.push_back(b);
  std::sort(ids_want.begin(), ids_want.end());
  CHECK(c_set_ids() == ids_want);
  CHECK(c_set_ranks(a) == a_ranks);
  CHECK(c_set_ranks(b) == b_ranks);
  auto index_in = [&](const std::vector<int>& ranks) {
    const auto it = std::find(ranks.begin(), ranks.end(), me);
    return it == ranks.end() ? -1 : int(it - ranks.begin());
  };
  const int in_a = index_in(a_ranks), in_b = index_in(b_ranks);
  CHECK(kolo_process_set_rank(a) == in_a);
  CHECK(kolo_process_set_rank(b) == in_b);
  CHECK(kolo_process_set_size(a) == n - 1);
  CHECK(kolo_process_set_size(b) == int(b_ranks.size()));
  CHECK(kolo_process_set_included(a) == (in_a >= 0 ? 1 : 0));
  CHECK(kolo_process_set_included(b) == (in_b >= 0 ? 1 : 0));
  // Adding a set that exists: an error on every rank.
  CHECK(kolo_add_process_set(b_ranks.data(), int(b_ranks.size())) == KOLO_INVALID_ARGUMENT);

  // allreduce over A: sum of (r + 1) and of (r + 1) * 10 in a group, both in place.
  float x = float(me + 1);
  const int64_t one[1] = {1};
  const kolo_handle hx = kolo_allreduce_async_ps("c/dyn/sum", &x, &x, KOLO_FLOAT32, 0, one, KOLO_SUM, 1, 1, -1, a);
  if (in_a < 0) {
    CHECK(hx == KOLO_INVALID_ARGUMENT);
    CHECK_THAT(std::string(kolo_error_message()), Contains("process set " + std::to_string(a)));
    CHECK(x == float(me + 1));
  } else {
    REQUIRE(hx > 0);
    REQUIRE(kolo_wait(hx) == KOLO_OK);
    float want = 0;
    for (int r : a_ranks) want += float(r + 1);
    CHECK(x == want);
  }
  // broadcast over A from its last rank; root outside A (the last rank) is an error.
  int64_t value = me == n - 2 ? 4242 : -1;
  kolo_handle h = kolo_broadcast_async_ps("c/dyn/bcast", &value, KOLO_INT64, 0, nullptr, n - 2, -1, a);
  if (in_a >= 0) {
    REQUIRE(h > 0);
    REQUIRE(kolo_wait(h) == KOLO_OK);
    CHECK(value == 4242);
    CHECK(kolo_broadcast_async_ps("c/dyn/badroot", &value, KOLO_INT64, 0, nullptr, n - 1, -1, a) ==
          KOLO_INVALID_ARGUMENT);
    CHECK_THAT(std::string(kolo_error_message()), Contains("root"));
  } else {
    CHECK(h == KOLO_INVALID_ARGUMENT);
  }
  // allgather over B: each member's rank.
  int32_t mine = me;
  h = kolo_allgather_async_ps("c/dyn/gather", &mine, KOLO_INT32, 1, one, -1, b);
  if (in_b >= 0) {
    const std::vector<int32_t> all = c_result<int32_t>(h);
    CHECK(std::vector<int>(all.begin(), all.end()) == b_ranks);
  } else {
    CHECK(h == KOLO_INVALID_ARGUMENT);
  }
  // alltoall over A, splits by set rank: j + 1 rows to the set's rank j, each 100 * me + j.
  const int m = n - 1;
  if (in_a >= 0) {
    std::vector<int64_t> splits(m);
    std::vector<int32_t> rows;
    for (int j = 0; j < m; ++j) {
      splits[j] = j + 1;
      for (int k = 0; k <= j; ++k) rows.push_back(100 * me + j);
    }
    const int64_t shape[1] = {int64_t(rows.size())};
    h = kolo_alltoall_async_ps("c/dyn/a2a", rows.data(), KOLO_INT32, 1, shape, splits.data(), -1, a);
    REQUIRE(h > 0);
    REQUIRE(poll_until_done(h));
    std::vector<int64_t> received(m, -1);
    CHECK(kolo_received_splits(h, received.data(), m) == m);
    for (int j = 0; j < m; ++j) CHECK(received[j] == in_a + 1);
    const std::vector<int32_t> got = c_result<int32_t>(h);
    REQUIRE(got.size() == std::size_t(m * (in_a + 1)));
    for (int j = 0, at = 0; j < m; ++j)
      for (int k = 0; k <= in_a; ++k) CHECK(got[at++] == 100 * a_ranks[j] + in_a);
  }
  // reducescatter over A: m rows, average with prescale 2 and postscale 0.25.
  if (in_a >= 0) {
    std::vector<double> in(m);
    for (int i = 0; i < m; ++i) in[i] = me * 3 + i;
    const int64_t shape[1] = {m};
    const std::vector<double> part = c_result<double>(
        kolo_reducescatter_async_ps("c/dyn/rs", in.data(), KOLO_FLOAT64, 1, shape, KOLO_AVERAGE, 2.0, 0.25, -1, a));
    double sum = 0;
    for (int r : a_ranks) sum += 2.0 * (r * 3 + in_a);
    REQUIRE(part.size() == 1);
    CHECK(part[0] == Approx(sum / m * 0.25));
  }
  // Grouped over B: allreduce (from C), allgather and reducescatter.
  float ga[3] = {float(me), float(me), float(me)}, gb[4] = {1, 1, 1, float(me)};
  kolo_handle handles[2] = {0, 0};
  const int grouped = c_caller_grouped_allreduce("c/dyn/ga", ga, "c/dyn/gb", gb, b, handles);
  if (in_b >= 0) {
    REQUIRE(grouped == KOLO_OK);
    REQUIRE(wait_all(handles, 2));
    float sum = 0;
    for (int r : b_ranks) sum += float(r);
    CHECK((ga[0] == sum && ga[2] == sum && gb[0] == float(b_ranks.size()) && gb[3] == sum));
  } else {
    CHECK(grouped == KOLO_INVALID_ARGUMENT);
    CHECK(handles[1] == KOLO_INVALID_ARGUMENT);
  }
  const int bs = int(b_ranks.size());
  std::vector<int64_t> g0(1, me), g1(std::size_t(2 * bs), me);
  const int64_t g0_shape[1] = {1}, g1_shape[1] = {2 * bs};
  const char* names[2] = {"c/dyn/g0", "c/dyn/g1"};
  const void* inputs[2] = {g0.data(), g1.data()};
  const int ndims[2] = {1, 1};
  const int64_t* shapes[2] = {g0_shape, g1_shape};
  const int gathered = kolo_grouped_allgather_async(2, names, inputs, KOLO_INT64, ndims, shapes, -1, b, handles);
  if (in_b >= 0) {
    REQUIRE(gathered == KOLO_OK);
    const std::vector<int64_t> all0 = c_result<int64_t>(handles[0]);
    CHECK(std::vector<int>(all0.begin(), all0.end()) == b_ranks);
    CHECK(c_result<int64_t>(handles[1]).size() == std::size_t(2 * bs * bs));
  } else {
    CHECK(gathered == KOLO_INVALID_ARGUMENT);
  }
  const char* rs_names[2] = {"c/dyn/rs0", "c/dyn/rs1"};
  const int scattered = kolo_grouped_reducescatter_async(1, rs_names + 1, inputs + 1, KOLO_INT64, ndims, shapes + 1,
                                                         KOLO_SUM, 1, 1, -1, b, handles);
  if (in_b >= 0) {
    REQUIRE(scattered == KOLO_OK);
    const std::vector<int64_t> part = c_result<int64_t>(handles[0]);
    int64_t sum = 0;
    for (int r : b_ranks) sum += r;
    CHECK(part == std::vector<int64_t>(2, sum));  // 2 * |B| rows: two each
  } else {
    CHECK(scattered == KOLO_INVALID_ARGUMENT);
  }
  // Byte buffers: broadcast over B from its last rank, allgather over A.
  char out[32];
  const std::string text = "set B, rank " + std::to_string(me);
  const int64_t got = c_caller_broadcast_string("c/dyn/bytes", text.c_str(), b_ranks.back(), b, out, sizeof out);
  if (in_b >= 0) {
    CHECK(std::string(out, std::size_t(std::max<int64_t>(got, 0))) == "set B, rank " + std::to_string(b_ranks.back()));
  } else {
    CHECK(got == KOLO_INVALID_ARGUMENT);
  }
  const std::string word(std::size_t(me + 1), char('A' + me));
  h = kolo_allgather_bytes("c/dyn/gbytes", word.data(), int64_t(word.size()), a);
  if (in_a >= 0) {
    REQUIRE(h > 0);
    std::vector<int64_t> sizes(m, -1);
    CHECK(kolo_received_splits(h, sizes.data(), m) == m);
    std::string want;
    for (int j = 0; j < m; ++j) {
      CHECK(sizes[j] == a_ranks[j] + 1);
      want += std::string(std::size_t(a_ranks[j] + 1), char('A' + a_ranks[j]));
    }
    CHECK(c_result_string(h) == want);
  } else {
    CHECK(h == KOLO_INVALID_ARGUMENT);
  }
  // Barriers, then join on B: its first rank joins last (after an allreduce over B that runs
  // with the others' zeros).
  CHECK(kolo_barrier_ps(a) == (in_a >= 0 ? KOLO_OK : KOLO_INVALID_ARGUMENT));
  CHECK(kolo_barrier_ps(b) == (in_b >= 0 ? KOLO_OK : KOLO_INVALID_ARGUMENT));
  int last = -7;
  if (in_b > 0) {
    REQUIRE(kolo_join_ps(b, &last) == KOLO_OK);
    CHECK(last == b_ranks.front());
  } else if (in_b == 0) {
    float y = 5.0f;
    h = kolo_allreduce_async_ps("c/dyn/join", &y, &y, KOLO_FLOAT32, 0, nullptr, KOLO_SUM, 1, 1, -1, b);
    REQUIRE(h > 0);
    REQUIRE(kolo_wait(h) == KOLO_OK);
    CHECK(y == 5.0f);
    REQUIRE(kolo_join_ps(b, &last) == KOLO_OK);
    CHECK(last == me);
  } else {
    CHECK(kolo_join_ps(b, &last) == KOLO_INVALID_ARGUMENT);
    CHECK(last == -7);
  }

  // Removal: set 0 cannot go; A and B go (collective), then are unknown.
  CHECK(kolo_remove_process_set(0) == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_remove_process_set(a) == KOLO_OK);
  CHECK(kolo_remove_process_set(b) == KOLO_OK);
  CHECK(c_set_ids() == ids_before);
  CHECK(kolo_process_set_size(a) == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_remove_process_set(a) == KOLO_INVALID_ARGUMENT);
  CHECK(kolo_allreduce_async_ps("c/dyn/gone", &x, &x, KOLO_FLOAT32, 0, nullptr, KOLO_SUM, 1, 1, -1, b) ==
        KOLO_INVALID_ARGUMENT);
}
