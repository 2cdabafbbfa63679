// The scenarios of tests/runtime/scenarios/ under mpirun: each process is a rank, its Peer
// the public API and real time. The same scenarios run in-process, in simulated time, in
// tests/runtime/inprocess/scenarios_test.cc. The hung-rank scenario needs a rank that
// hangs and a job that carries on, which only the in-process transport can stage
// (kolo_init_modes' hung-rank test does it here, with SIGSTOP).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>

#include "scenarios/collective_scenarios.h"
#include "scenarios/error_scenarios.h"
#include "scenarios/process_set_scenarios.h"
#include "support/mpi_util.h"

namespace {

// Redirects this process's stderr (fd 2), where kolo logs, into a file while alive.
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
  ~StderrCapture() {
    restore();
    std::filesystem::remove(path_);
  }
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

class MpiPeer final : public kolo_scenarios::Peer {
 public:
  MpiPeer() : settings_(kolo::config_from_environment()) {}

  int rank() const override { return kolo::rank(); }
  int size() const override { return kolo::size(); }
  const kolo::Config& settings() const override { return settings_; }

  kolo::Status wait(const kolo::Handle& handle, std::chrono::milliseconds bound) override {
    return kolo_test::finish(handle, bound);
  }
  kolo::Status wait_up_to(const kolo::Handle& handle, std::chrono::milliseconds bound) override {
    return handle.wait_for(bound);
  }

  // kolo::join() blocks until every rank has joined: on a thread of its own, bounded.
  kolo::Status join(int* last) override {
    auto done = std::make_shared<std::promise<std::pair<kolo::Status, int>>>();
    auto result = done->get_future();
    std::thread([done] {
      try {
        const int joined_last = kolo::join();
        done->set_value({kolo::Status::OK(), joined_last});
      } catch (const kolo::Error& e) {
        done->set_value({kolo::Status(e.code(), e.what()), -1});
      }
    }).detach();
    if (result.wait_for(kolo_scenarios::kBound) != std::future_status::ready) kolo_test::abort_on_timeout("join()");
    const auto [status, joined_last] = result.get();
    if (last != nullptr) *last = joined_last;
    return status;
  }

  void blocking(const std::function<void()>& call) override { call(); }

  void sync() override { kolo_test::world_barrier(); }
  void sleep(std::chrono::milliseconds duration) override { std::this_thread::sleep_for(duration); }
  double seconds() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  void capture_log() override { capture_ = std::make_unique<StderrCapture>(); }
  std::string captured_log() override {
    if (!capture_) return "";
    capture_->restore();
    const std::string text = capture_->text();
    capture_.reset();
    std::fprintf(stderr, "%s", text.c_str());  // keep it visible in the test's output
    return text;
  }

  bool can_stop_taking_part() const override { return false; }
  void stop_taking_part() override { FAIL("a rank cannot be made to hang under mpirun"); }

  std::optional<int64_t> named_negotiations() const override { return std::nullopt; }
  std::optional<int64_t> data_allreduces() const override { return std::nullopt; }

  void check(bool ok, const char* expression, const char* file, int line, const std::string& context) override {
    if (ok) SUCCEED();
    else FAIL_CHECK("rank " << kolo::rank() << ": " << file << ":" << line << ": CHECK(" << expression << ") failed: " << context);
  }

 private:
  kolo::Config settings_;
  std::unique_ptr<StderrCapture> capture_;
};

void run(void (*scenario)(kolo_scenarios::Peer&)) {
  MpiPeer peer;
  scenario(peer);
  peer.sync();  // every rank is done with the scenario's names before the next test
}

}  // namespace

TEST_CASE("scenario: allreduce of every dtype and op is exact round after round", "[scenario][allreduce][cache]") {
  run(kolo_scenarios::allreduce_rounds_are_exact_and_cached);
}

TEST_CASE("scenario: many tiny tensors are fused with exact sums", "[scenario][allreduce][fusion]") {
  run(kolo_scenarios::many_tiny_tensors_fuse);
}

TEST_CASE("scenario: tensors submitted in a different order on every rank are exact", "[scenario][allreduce]") {
  run(kolo_scenarios::submission_order_differs_per_rank);
}

TEST_CASE("scenario: allgather, broadcast, alltoall and reducescatter are exact", "[scenario][collectives]") {
  run(kolo_scenarios::other_collectives_are_exact);
}

TEST_CASE("scenario: join reduces over the ranks still active", "[scenario][join]") {
  run(kolo_scenarios::join_reduces_over_the_ranks_still_active);
}

TEST_CASE("scenario: mismatches fail on every rank naming tensor, field and ranks", "[scenario][errors][mismatch]") {
  run(kolo_scenarios::mismatches_fail_on_every_rank);
}

TEST_CASE("scenario: mismatched and good tensors in one burst each get their own result", "[scenario][errors][mismatch]") {
  run(kolo_scenarios::mismatched_and_good_tensors_in_one_burst);
}

TEST_CASE("scenario: a cached tensor that changes shape fails on every rank", "[scenario][errors][cache]") {
  run(kolo_scenarios::cached_tensor_changing_shape_fails_on_every_rank);
}

// Its own CTest entry, with KOLO_STALL_CHECK_TIME_SECONDS=1 and KOLO_STALL_SHUTDOWN_TIME_SECONDS=3.
TEST_CASE("scenario: a tensor missing on some ranks warns naming them, then fails as Stalled", "[.][stall]") {
  run(kolo_scenarios::stalled_tensor_warns_then_fails);
  kolo_test::restart_kolo_after_stall();
}

// Process sets and the rest of Horovod's surface: their own CTest entries (mpi_np*_process_sets),
// with KOLO_DYNAMIC_PROCESS_SETS=1 and KOLO_TIMELINE=DYNAMIC.
TEST_CASE("scenario: every operation on overlapping, disjoint and singleton process sets is exact",
          "[.][process_sets]") {
  run(kolo_scenarios::every_op_on_overlapping_disjoint_and_singleton_sets);
}

TEST_CASE("scenario: process set errors are clear on every rank and kolo goes on", "[.][process_sets]") {
  run(kolo_scenarios::process_set_errors_are_clear_on_every_rank);
}

TEST_CASE("scenario: a set waiting for a rank does not hold up another set", "[.][process_sets]") {
  run(kolo_scenarios::a_waiting_set_does_not_hold_up_another);
}

TEST_CASE("scenario: grouped allgather and reducescatter run as one unit", "[.][process_sets]") {
  run(kolo_scenarios::grouped_collectives_run_as_one_unit);
}

TEST_CASE("scenario: unnamed operations match in submission order", "[.][process_sets]") {
  run(kolo_scenarios::unnamed_operations_match_in_submission_order);
}

TEST_CASE("scenario: byte buffers of 0 B, 1 B and 10 MB are broadcast and allgathered", "[.][process_sets]") {
  run(kolo_scenarios::byte_buffers_of_any_size);
}

TEST_CASE("scenario: join returns the last rank to join", "[.][process_sets]") {
  run(kolo_scenarios::join_returns_the_last_rank_to_join);
}

TEST_CASE("scenario: a second join after cached allreduces returns its own last rank", "[.][process_sets]") {
  run(kolo_scenarios::a_second_join_after_cached_allreduces_returns_its_own_last_rank);
}

// KOLO_TIMELINE=DYNAMIC: no file until start_timeline(); then rank 0 writes one, each event
// naming its set, and stop_timeline() completes it; a second start writes another file,
// with cycle marks.
TEST_CASE("scenario: the timeline starts and stops while kolo runs, naming each event's set", "[.][process_sets]") {
  MpiPeer peer;
  const int me = peer.rank();
  CHECK_FALSE(std::filesystem::exists("DYNAMIC"));
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string first = dir + "/kolo_dynamic_timeline_1.json", second = dir + "/kolo_dynamic_timeline_2.json";
  kolo::ProcessSet set;
  peer.blocking([&] { set = kolo::add_process_set({0}); });
  std::vector<float> before(4, 1.0f), during(4, 1.0f), in_set(4, 1.0f), after(4, 1.0f);
  kolo::allreduce("timeline/before", kolo::view(before));
  kolo::start_timeline(first);
  kolo::allreduce("timeline/during", kolo::view(during));
  if (set.included()) {
    kolo::AllreduceOptions options;
    options.process_set = set;
    kolo::allreduce("timeline/in_set", kolo::view(in_set), options);
  }
  peer.sync();
  kolo::stop_timeline();
  kolo::allreduce("timeline/after", kolo::view(after));
  kolo::start_timeline(second, /*mark_cycles=*/true);
  kolo::allreduce("timeline/second", kolo::view(after));
  peer.sync();
  kolo::stop_timeline();
  // A path naming {rank}: every rank writes its own, as its own process.
  kolo::start_timeline(dir + "/kolo_per_rank_timeline_{rank}.json");
  kolo::allreduce("timeline/per_rank", kolo::view(after));
  peer.sync();
  kolo::stop_timeline();
  peer.blocking([&] { kolo::remove_process_set(set); });
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string mine = dir + "/kolo_per_rank_timeline_" + std::to_string(me) + ".json";
  const std::string own = read(mine);
  CHECK(own.find("timeline/per_rank") != std::string::npos);
  CHECK(own.find("\"kolo rank " + std::to_string(me) + "\"") != std::string::npos);
  CHECK(own[own.find_last_not_of(" \n")] == ']');
  std::filesystem::remove(mine);
  if (me == 0) {
    const std::string a = read(first), b = read(second);
    INFO(a);
    CHECK(a.find("timeline/during") != std::string::npos);
    const std::string id = std::to_string(set.id());
    CHECK(a.find("timeline/in_set (process set " + id + ")") != std::string::npos);
    CHECK(a.find("\"process_set\":" + id) != std::string::npos);
    CHECK(a.find("timeline/before") == std::string::npos);
    CHECK(a.find("timeline/after") == std::string::npos);
    CHECK(a.find("CYCLE_START") == std::string::npos);
    CHECK(a[a.find_last_not_of(" \n")] == ']');  // a complete JSON array
    CHECK(b.find("timeline/second") != std::string::npos);
    CHECK(b.find("CYCLE_START") != std::string::npos);
    std::filesystem::remove(first);
    std::filesystem::remove(second);
  } else {
    CHECK_FALSE(std::filesystem::exists(first + ".rank" + std::to_string(me)));
  }
  peer.sync();
}
