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
  kolo::Status join() override {
    auto done = std::make_shared<std::promise<kolo::Status>>();
    std::future<kolo::Status> result = done->get_future();
    std::thread([done] {
      try {
        kolo::join();
        done->set_value(kolo::Status::OK());
      } catch (const kolo::Error& e) {
        done->set_value(kolo::Status(e.code(), e.what()));
      }
    }).detach();
    if (result.wait_for(kolo_scenarios::kBound) != std::future_status::ready) kolo_test::abort_on_timeout("join()");
    return result.get();
  }

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
}
