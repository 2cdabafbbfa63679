#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "kolo/models.h"

namespace kolo::models {
namespace {

// Fork-join with a short spin on both sides before sleeping: a training step runs dozens
// of parallel_for calls microseconds apart, and a futex wake-up costs 5-50 us here, more
// than many of the loops themselves. The spin yields, so a busy machine loses little.
class ThreadPool {
 public:
  ~ThreadPool() { resize(1); }

  int threads() {
    std::lock_guard<std::mutex> one_job(job_mutex_);
    return size();
  }

  void resize(int threads) {
    std::lock_guard<std::mutex> one_job(job_mutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    start_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_ = false;
    // The generation a worker starts from is taken here, not by the worker: a worker
    // that read it after the first run() had already begun would wait for the next one.
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, g = generation_.load()] { work(i, g); });
  }

  void run(int64_t count, const std::function<void(int64_t, int64_t, int)>& body) {
    // One job at a time: the job's fields below are the pool's only set, so program threads
    // that call kernels at once take turns (each chunk's scratch is its thread's own).
    std::unique_lock<std::mutex> one_job(job_mutex_);
    const int threads = static_cast<int>(std::min<int64_t>(size(), count));
    if (threads <= 1) {
      one_job.unlock();
      if (count > 0) body(0, count, 0);
      return;
    }
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      count_ = count;
      active_ = threads;
      pending_.store(threads - 1);
      generation_.fetch_add(1);
      wake = sleepers_ > 0;
    }
    if (wake) start_.notify_all();
    chunk(0);
    if (!spin_until([this] { return pending_.load() == 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_.load() == 0; });
    }
    // Every chunk has finished (the body and what it captured outlive them all); now the
    // caller gets the first exception any of them threw.
    if (std::exception_ptr error = std::exchange(error_, nullptr)) std::rethrow_exception(error);
  }

 private:
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  template <typename Ready>
  static bool spin_until(Ready&& ready) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    while (!ready()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::yield();
    }
    return true;
  }

  void chunk(int t) {
    const int64_t begin = count_ * t / active_, end = count_ * (t + 1) / active_;
    if (begin >= end) return;
    try {
      (*body_)(begin, end, t);
    } catch (...) {  // kept for run() to rethrow once all chunks are done
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }

  void work(int index, uint64_t seen) {
    for (;;) {
      if (!spin_until([&] { return generation_.load() != seen; })) {
        std::unique_lock<std::mutex> lock(mutex_);
        ++sleepers_;
        start_.wait(lock, [&] { return generation_.load() != seen; });
        --sleepers_;
      }
      std::unique_lock<std::mutex> lock(mutex_);  // orders the reads of the job below
      seen = generation_.load();
      if (stop_) return;
      if (index >= active_) continue;
      lock.unlock();
      chunk(index);
      if (pending_.fetch_sub(1) == 1) {
        lock.lock();  // a caller past its spin sleeps on done_ under the mutex
        done_.notify_one();
      }
    }
  }

  std::mutex job_mutex_;  // held by run() and resize() throughout
  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t, int)>* body_ = nullptr;
  int64_t count_ = 0;
  int active_ = 1;
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  int sleepers_ = 0;  // workers waiting on start_ (guarded by mutex_)
  std::mutex error_mutex_;
  std::exception_ptr error_;  // the first exception a chunk threw (guarded by error_mutex_)
  bool stop_ = false;
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

}  // namespace

void set_num_threads(int threads) { pool().resize(std::max(1, threads)); }
int num_threads() { return pool().threads(); }

namespace cpu {
void parallel_for(int64_t count, const std::function<void(int64_t, int64_t, int)>& body) {
  pool().run(count, body);
}

void parallel_for_elements(int64_t count, const std::function<void(int64_t, int64_t)>& body) {
  constexpr int64_t kParallelElements = 1 << 15;  // below this, waking the other threads costs more
  if (count < kParallelElements) {
    body(0, count);
    return;
  }
  parallel_for(count, [&](int64_t begin, int64_t end, int) { body(begin, end); });
}
}  // namespace cpu

}  // namespace kolo::models
