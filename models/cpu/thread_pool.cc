#include "thread_pool.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "kolo/models.h"

namespace kolo::models {
namespace {

class ThreadPool {
 public:
  ~ThreadPool() { resize(1); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int threads) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      ++generation_;
    }
    start_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_ = false;
    // The generation a worker starts from is taken here, not by the worker: a worker
    // that read it after the first run() had already begun would wait for the next one.
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, g = generation_] { work(i, g); });
  }

  void run(int64_t count, const std::function<void(int64_t, int64_t, int)>& body) {
    const int threads = static_cast<int>(std::min<int64_t>(size(), count));
    if (threads <= 1) {
      if (count > 0) body(0, count, 0);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      count_ = count;
      active_ = threads;
      pending_ = threads - 1;
      ++generation_;
    }
    start_.notify_all();
    chunk(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void chunk(int t) {
    const int64_t begin = count_ * t / active_, end = count_ * (t + 1) / active_;
    if (begin < end) (*body_)(begin, end, t);
  }

  void work(int index, uint64_t seen) {
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (stop_) return;
      if (index >= active_) continue;
      lock.unlock();
      chunk(index);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t, int)>* body_ = nullptr;
  int64_t count_ = 0;
  int active_ = 1;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

}  // namespace

void set_num_threads(int threads) { pool().resize(std::max(1, threads)); }
int num_threads() { return pool().size(); }

namespace cpu {
void parallel_for(int64_t count, const std::function<void(int64_t, int64_t, int)>& body) {
  pool().run(count, body);
}
}  // namespace cpu

}  // namespace kolo::models
