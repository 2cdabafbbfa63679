// Errors never hang: mismatches fail on every rank with a message naming the tensor, the
// field and the ranks; names in flight, bad local arguments; the stall inspector ([stall],
// run by its own CTest entry with short stall settings).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;
using Catch::Matchers::Contains;

namespace {

bool need_two_ranks() {
  if (size() >= 2) return true;
  WARN("skipped: a mismatch needs at least 2 ranks");
  return false;
}

// "ranks 1, 2, 3" (or "rank 1") as the coordinator names the ranks other than 0.
std::string others_phrase() {
  std::string s = size() == 2 ? "rank " : "ranks ";
  for (int r = 1; r < size(); ++r) s += (r > 1 ? ", " : "") + std::to_string(r);
  return s;
}

void require_mismatch(const kolo::Handle& h, const std::string& name, const std::string& field,
                      const std::string& rank0_gave, const std::string& others_gave) {
  const kolo::Status s = finish(h);
  INFO("rank " << rank() << " got " << code_name(s.code()) << ": " << s.message());
  CHECK(s.code() == kolo::StatusCode::Mismatch);
  CHECK_THAT(s.message(), Contains("'" + name + "'"));
  CHECK_THAT(s.message(), Contains(field));
  CHECK_THAT(s.message(), Contains("rank 0 gave " + rank0_gave));
  CHECK_THAT(s.message(), Contains(others_phrase() + " gave " + others_gave));
}

// After an error the name is free again: a consistent submission succeeds everywhere.
void require_name_reusable(const std::string& name) {
  std::vector<float> v(3, 1.0f);
  require_ok(kolo::allreduce_async(name, kolo::view(v), {ReduceOp::Sum}), name + " after its error");
  CHECK(v == std::vector<float>(3, float(size())));
}

}  // namespace

TEST_CASE("shape mismatch fails on every rank naming tensor, shape and ranks", "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<float> v(rank() == 0 ? 4 : 5, 1.0f);
  require_mismatch(kolo::allreduce_async("err/shape", kolo::view(v), {ReduceOp::Sum}), "err/shape", "shape",
                   "[4]", "[5]");
  require_name_reusable("err/shape");
}

TEST_CASE("dtype mismatch fails on every rank naming tensor, dtype and ranks", "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<float> f(4, 1.0f);
  std::vector<double> d(4, 1.0);
  kolo::Handle h = rank() == 0 ? kolo::allreduce_async("err/dtype", kolo::view(f), {ReduceOp::Sum})
                               : kolo::allreduce_async("err/dtype", kolo::view(d), {ReduceOp::Sum});
  require_mismatch(h, "err/dtype", "dtype", "float32", "float64");
  require_name_reusable("err/dtype");
}

TEST_CASE("op mismatch fails on every rank naming tensor, op and ranks", "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<float> v(4, 1.0f);
  const ReduceOp op = rank() == 0 ? ReduceOp::Sum : ReduceOp::Min;
  require_mismatch(kolo::allreduce_async("err/op", kolo::view(v), {op}), "err/op", "op", "sum", "min");
  require_name_reusable("err/op");
}

TEST_CASE("prescale mismatch fails on every rank", "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<float> v(4, 1.0f);
  const double pre = rank() == 0 ? 1.0 : 2.0;
  require_mismatch(kolo::allreduce_async("err/prescale", kolo::view(v), {ReduceOp::Sum, pre, 1.0}), "err/prescale",
                   "prescale", "1", "2");
}

TEST_CASE("broadcast root mismatch fails on every rank naming tensor, root and ranks",
          "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<int32_t> v(4, rank());
  const int root = rank() == 0 ? 0 : 1;
  require_mismatch(kolo::broadcast_async("err/root", kolo::view(v), root), "err/root", "root", "0", "1");
  CHECK(v == std::vector<int32_t>(4, rank()));  // nothing was written
}

TEST_CASE("allgather with different trailing dimensions fails on every rank", "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<float> v(rank() == 0 ? 2 : 3);
  const int64_t cols = rank() == 0 ? 2 : 3;
  require_mismatch(kolo::allgather_async("err/gather", kolo::view(v, {1, cols})), "err/gather", "shape", "[2]", "[3]");
}

TEST_CASE("different collectives under one name fail on every rank", "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<float> v(4, 1.0f);
  kolo::Handle h = rank() == 0 ? kolo::allreduce_async("err/kind", kolo::view(v), {ReduceOp::Sum})
                               : kolo::broadcast_async("err/kind", kolo::view(v), 0);
  require_mismatch(h, "err/kind", "operation", "allreduce", "broadcast");
  require_name_reusable("err/kind");
}

TEST_CASE("shape change of a cached tensor on some ranks fails on every rank", "[errors][mismatch][cache]") {
  if (!need_two_ranks()) return;
  for (int round = 0; round < 3; ++round) {  // now in every rank's response cache
    std::vector<float> v(4, 2.0f);
    require_ok(kolo::allreduce_async("err/cached", kolo::view(v), {ReduceOp::Sum}));
    REQUIRE(v[0] == 2.0f * size());
  }
  std::vector<float> v(rank() == 0 ? 4 : 5, 1.0f);
  require_mismatch(kolo::allreduce_async("err/cached", kolo::view(v), {ReduceOp::Sum}), "err/cached", "shape",
                   "[4]", "[5]");
  require_name_reusable("err/cached");
}

TEST_CASE("mismatches of several tensors in one burst each fail with their own name",
          "[errors][mismatch]") {
  if (!need_two_ranks()) return;
  std::vector<std::vector<float>> bad(5), good(5);
  std::vector<kolo::Handle> hb, hg;
  for (int t = 0; t < 5; ++t) {
    bad[t].assign(rank() == 0 ? 2 + t : 3 + t, 1.0f);
    good[t].assign(10, float(t));
    hb.push_back(kolo::allreduce_async("err/burst/bad" + std::to_string(t), kolo::view(bad[t]), {ReduceOp::Sum}));
    hg.push_back(kolo::allreduce_async("err/burst/good" + std::to_string(t), kolo::view(good[t]), {ReduceOp::Sum}));
  }
  for (const kolo::Handle& h : hb) h.wait_for(kOpTimeout);
  require_all_ok(hg, "good tensors of the burst");
  for (int t = 0; t < 5; ++t) {
    require_mismatch(hb[t], "err/burst/bad" + std::to_string(t), "shape", "[" + std::to_string(2 + t) + "]",
                     "[" + std::to_string(3 + t) + "]");
    CHECK(good[t] == std::vector<float>(10, float(t * size())));
  }
}

TEST_CASE("submitting a name that is still in flight is an error", "[errors][inflight]") {
  if (!need_two_ranks()) return;
  // Rank r's own name cannot complete before the other ranks submit it, which they do
  // only after everybody has tried the duplicate.
  const std::string own = "err/inflight/" + std::to_string(rank());
  std::vector<float> first(3, float(rank())), second(3, -1.0f);
  kolo::Handle h1 = kolo::allreduce_async(own, kolo::view(first), {ReduceOp::Sum});
  kolo::Handle h2 = kolo::allreduce_async(own, kolo::view(second), {ReduceOp::Sum});
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

TEST_CASE("bad local arguments fail at once with InvalidArgument", "[errors][local]") {
  std::vector<float> f(4);
  std::vector<int32_t> i32(4);
  std::vector<double> d(4);
  std::vector<float> f5(5);
  struct Bad {
    const char* what;
    kolo::Handle h;
    std::string part;
  };
  std::vector<Bad> bad;
  bad.push_back({"null data", kolo::allreduce_async("bad/null", kolo::TensorView{nullptr, DType::Float32, {4}}),
                 "bad/null"});
  bad.push_back({"negative dimension",
                 kolo::allreduce_async("bad/negative", kolo::TensorView{f.data(), DType::Float32, {2, -2}}),
                 "negative"});
  bad.push_back({"average on int32", kolo::allreduce_async("bad/intavg", kolo::view(i32), {ReduceOp::Average}),
                 "bad/intavg"});
  bad.push_back({"input and output dtypes differ",
                 kolo::allreduce_async("bad/dtypes", kolo::view(f), kolo::view(d), {ReduceOp::Sum}), "float64"});
  bad.push_back({"input and output sizes differ",
                 kolo::allreduce_async("bad/sizes", kolo::view(f), kolo::view(f5), {ReduceOp::Sum}), "bad/sizes"});
  bad.push_back({"empty name", kolo::allreduce_async("", kolo::view(f), {ReduceOp::Sum}), "name"});
  bad.push_back({"GPU memory on the MPI backend",
                 kolo::allreduce_async("bad/gpu", kolo::TensorView{f.data(), DType::Float32, {4}, kolo::Device::cuda(0)}),
                 "bad/gpu"});
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
    CHECK(s.code() == kolo::StatusCode::InvalidArgument);
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

// ---- stall inspector (its own CTest entry: KOLO_STALL_CHECK_TIME_SECONDS=1,
// KOLO_STALL_SHUTDOWN_TIME_SECONDS=3) ---------------------------------------------------

namespace {

// Redirects this process's stderr (fd 2) into a file while alive; text() reads it back.
class StderrCapture {
 public:
  StderrCapture() {
    path_ = (std::filesystem::temp_directory_path() / ("kolo_stderr." + std::to_string(::getpid()))).string();
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(path_.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() { restore(); std::filesystem::remove(path_); }
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

}  // namespace

// The first line of `text` that contains both parts ("" if none).
std::string line_with(const std::string& text, const std::string& a, const std::string& b) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return line;
  return "";
}

double stall_fail_after() {
  const char* check = std::getenv("KOLO_STALL_CHECK_TIME_SECONDS");
  const char* shutdown = std::getenv("KOLO_STALL_SHUTDOWN_TIME_SECONDS");
  REQUIRE(check != nullptr);
  REQUIRE(shutdown != nullptr);
  return std::atof(shutdown);
}

TEST_CASE("stall: tensors missing on one rank warn naming that rank, then fail as Stalled",
          "[.][stall]") {
  REQUIRE(size() >= 2);
  const double fail_after = stall_fail_after();
  // Rank 0 submits a tensor rank 1 never does, and rank 1 one that rank 0 never does.
  std::vector<float> v(8, 1.0f);
  std::unique_ptr<StderrCapture> capture;
  if (rank() == 0) capture = std::make_unique<StderrCapture>();  // the coordinator logs
  const std::string mine = rank() == 0 ? "stall/only_rank0" : rank() == 1 ? "stall/only_rank1" : "";
  const std::string missing = rank() == 0 ? "rank(s) 1" : "rank(s) 0";
  const auto start = std::chrono::steady_clock::now();
  kolo::Handle h;
  if (!mine.empty()) h = kolo::allreduce_async(mine, kolo::view(v), {ReduceOp::Sum});
  if (h.valid()) {
    const kolo::Status s = h.wait_for(std::chrono::seconds(30));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("rank " << rank() << ": " << code_name(s.code()) << " after " << took << " s: " << s.message());
    CHECK(s.code() == kolo::StatusCode::Stalled);
    CHECK_THAT(s.message(), Contains(mine) && Contains(missing));
    CHECK(took >= fail_after - 0.5);  // not failed before the configured time
    CHECK(took <= fail_after + 7);
    CHECK(v == std::vector<float>(8, 1.0f));
  }
  if (capture) {
    capture->restore();
    const std::string err = capture->text();
    std::fprintf(stderr, "%s", err.c_str());  // keep it visible in the test log
    INFO("captured stderr of rank 0:\n" << err);
    // Warnings first, naming each tensor and the rank that has not submitted it.
    CHECK_THAT(line_with(err, "WARNING", "'stall/only_rank0'"), Contains("rank(s) 1"));
    CHECK_THAT(line_with(err, "WARNING", "'stall/only_rank1'"), Contains("rank(s) 0"));
    CHECK(err.find("WARNING") < err.find("failing it"));
  }
  world_barrier();
  // The names are usable again by everybody.
  for (const char* name : {"stall/only_rank0", "stall/only_rank1"}) {
    std::vector<float> w(8, 1.0f);
    require_ok(kolo::allreduce_async(name, kolo::view(w), {ReduceOp::Sum}));
    CHECK(w == std::vector<float>(8, float(size())));
  }
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
    INFO(code_name(s.code()) << " after " << took << " s: " << s.message());
    CHECK(s.code() == kolo::StatusCode::Stalled);
    CHECK_THAT(s.message(), Contains("stall/cached") && Contains("rank(s) 1"));
    CHECK(took <= fail_after + 9);
  }
  world_barrier();
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
    INFO("rank " << rank() << " member " << i << ": " << code_name(s.code()) << " " << s.message());
    CHECK(s.code() != kolo::StatusCode::Pending);
    CHECK_FALSE(s.ok());
  }
  world_barrier();
}
