#include "inprocess/job.h"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>

#include "runtime/logging.h"
#include "runtime/runtime.h"

namespace kolo_inprocess {
namespace {

// No scenario thread waits longer than this in real time: a bug that keeps simulated time
// from passing fails the test instead of hanging it.
constexpr std::chrono::seconds kRealLimit{120};

// An operation still running cannot be left behind (its buffers are about to be freed),
// and the ranks are out of step: the test process stops, saying why.
[[noreturn]] void abort_job(const std::string& why) {
  std::fprintf(stderr, "kolo_inprocess_tests: FAILED: %s (test case '%s'); aborting\n", why.c_str(),
               Catch::getResultCapture().getCurrentTestName().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

kolo::Config scenario_config() {
  kolo::Config config;
  config.log_level = kolo::LogLevel::Warning;
  return config;
}

// ---- a rank's Peer ---------------------------------------------------------------------

class Job::Peer final : public kolo_scenarios::Peer {
 public:
  Peer(Job& job, int rank, kolo::ProcessSets& sets) : job_(job), rank_(rank), runtime_(sets.global()) {}

  int rank() const override { return rank_; }
  int size() const override { return job_.options_.size; }
  const kolo::Config& settings() const override { return runtime_.config(); }

  kolo::Status wait(const kolo::Handle& handle, std::chrono::milliseconds bound) override {
    const kolo::Status s = wait_up_to(handle, bound);
    if (s.code() == kolo::StatusCode::Pending)
      abort_job("rank " + std::to_string(rank_) + ": an operation did not finish within " +
                std::to_string(bound.count()) + " ms of kolo's time");
    return s;
  }

  kolo::Status wait_up_to(const kolo::Handle& handle, std::chrono::milliseconds bound) override {
    Waiting waiting(job_);
    const auto deadline = job_.clock_.now() + bound;
    const auto real_limit = std::chrono::steady_clock::now() + kRealLimit;
    for (;;) {
      // Also tells this rank's runtime that a caller waits (the thread is bound to it).
      const kolo::Status s = handle.wait_for(std::chrono::milliseconds(1));
      if (s.code() != kolo::StatusCode::Pending) return s;
      if (job_.clock_.now() >= deadline || std::chrono::steady_clock::now() > real_limit) return s;
    }
  }

  kolo::Status join(int* last) override {
    const std::shared_ptr<kolo::detail::HandleState> state = runtime_.join();
    const kolo::Status s = wait(kolo::Handle(state), kolo_scenarios::kBound);
    if (last != nullptr) *last = static_cast<int>(state->value);
    return s;
  }

  void blocking(const std::function<void()>& call) override {
    Waiting waiting(job_);
    call();
  }

  void sync() override {
    Waiting waiting(job_);
    job_.sync(rank_);
  }

  void sleep(std::chrono::milliseconds duration) override {
    Waiting waiting(job_);
    const auto until = job_.clock_.now() + duration;
    const auto real_limit = std::chrono::steady_clock::now() + kRealLimit;
    while (job_.clock_.now() < until) {
      if (std::chrono::steady_clock::now() > real_limit) abort_job("simulated time stopped passing during sleep()");
      std::this_thread::sleep_for(job_.options_.tick);
    }
  }

  double seconds() const override {
    return std::chrono::duration<double>(job_.clock_.now().time_since_epoch()).count();
  }

  void capture_log() override { job_.start_capture(); }
  std::string captured_log() override { return job_.end_capture(); }

  bool can_stop_taking_part() const override { return true; }
  void stop_taking_part() override { job_.world_.stop_taking_part(rank_); }

  std::optional<int64_t> named_negotiations() const override {
    return job_.world_.completed(rank_, kolo::InProcessCall::ControlGather);
  }
  std::optional<int64_t> data_allreduces() const override {
    return job_.world_.completed(rank_, kolo::InProcessCall::Allreduce);
  }

  void check(bool ok, const char* expression, const char* file, int line, const std::string& context) override {
    std::lock_guard<std::mutex> lock(job_.mutex_);
    ++job_.checks_;
    if (!ok)
      job_.failures_.push_back("rank " + std::to_string(rank_) + ": " + file + ":" + std::to_string(line) +
                               ": CHECK(" + expression + ") failed: " + context);
  }

 private:
  // This rank's scenario thread waits in a Peer call: time may pass.
  struct Waiting {
    explicit Waiting(Job& job) : job(job) { ++job.waiting_; }
    ~Waiting() { --job.waiting_; }
    Job& job;
  };

  Job& job_;
  int rank_;
  kolo::Runtime& runtime_;
};

// ---- the job ---------------------------------------------------------------------------

Job::Job(JobOptions options)
    : options_(std::move(options)),
      world_(options_.size, clock_, kolo::InProcessOptions{options_.config.control_timeout(), options_.local_size}) {
  keeper_ = std::thread(&Job::keep_time, this);
}

Job::~Job() {
  stop_ = true;
  keeper_.join();
  kolo::set_log_sink({});
}

void Job::keep_time() {
  while (!stop_) {
    if (waiting_.load() == options_.size) clock_.advance(options_.step);
    std::this_thread::sleep_for(options_.tick);
  }
}

int64_t Job::run(const std::function<void(kolo_scenarios::Peer&)>& body) {
  waiting_ = options_.size;  // every rank "waits" while its runtime starts
  std::vector<std::thread> threads;
  for (int r = 0; r < options_.size; ++r) {
    threads.emplace_back([this, r, &body] {
      kolo::set_thread_log_rank(r);
      kolo::Config config = options_.config;
      if (options_.adjust) options_.adjust(r, config);
      std::unique_ptr<kolo::ProcessSets> sets;
      try {
        sets = std::make_unique<kolo::ProcessSets>(world_.transport(r), config, clock_, options_.process_sets);
      } catch (const std::exception& e) {
        record_failure("rank " + std::to_string(r) + ": the runtime did not start: " + e.what());
        sync(r);
        return;
      }
      kolo::bind_thread_to(sets.get());
      Peer peer(*this, r, *sets);
      --waiting_;
      try {
        body(peer);
      } catch (const std::exception& e) {
        record_failure("rank " + std::to_string(r) + ": the scenario threw: " + e.what());
      }
      ++waiting_;  // finished: time may pass for the others
      sync(r);     // nobody shuts down while another rank still runs its scenario
      kolo::bind_thread_to(nullptr);
      sets.reset();
    });
  }
  for (std::thread& t : threads) t.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& failure : failures_) FAIL_CHECK(failure);
  CHECK(failures_.empty());
  const int64_t checks = checks_;
  failures_.clear();
  checks_ = 0;
  return checks;
}

void Job::record_failure(std::string failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_.push_back(std::move(failure));
}

void Job::sync(int rank) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = sync_generation_;
  if (++sync_arrived_ == options_.size) {
    sync_arrived_ = 0;
    ++sync_generation_;
    sync_cv_.notify_all();
    return;
  }
  if (!sync_cv_.wait_for(lock, kRealLimit, [&] { return sync_generation_ != generation; }))
    abort_job("rank " + std::to_string(rank) + ": the other ranks did not reach sync()");
}

void Job::start_capture() {
  kolo::set_log_sink([this](kolo::LogLevel, const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    log_ += line + "\n";
  });
}

std::string Job::end_capture() {
  kolo::set_log_sink({});
  std::lock_guard<std::mutex> lock(mutex_);
  std::string log;
  log.swap(log_);
  return log;
}

}  // namespace kolo_inprocess
