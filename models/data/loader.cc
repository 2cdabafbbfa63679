// DataLoader: worker threads build the batches of an epoch ahead of the consumer, which
// takes them strictly in order. Batch b may be claimed only while b < next_deliver +
// capacity, so at most `capacity` batches exist at a time however slow the consumer is.
// Workers wait only for claimable work or stop; the consumer waits only for its next batch,
// which a live worker always ends up building (or failing, which next() rethrows), unless the
// user's transform never returns: hence the consumer's timeout, and workers that share the
// Impl so that one stuck in a transform can be left behind.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "batch_builder.h"
#include "kolo/kolo.h"

namespace kolo::models {

struct DataLoader::Impl : std::enable_shared_from_this<Impl> {
  // A built batch, or why building it failed.
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };

  Impl(const Dataset& dataset, const DistributedSampler& sampler, const LoaderOptions& options)
      : dataset(dataset),
        sampler(sampler),
        options(with_counted_transform(options)),
        capacity(int64_t{options.workers} * options.prefetch) {}

  void start_workers() {
    for (int i = 0; i < options.workers; ++i) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++running;
      }
      try {
        threads.emplace_back([self = shared_from_this()] { self->worker(); });
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        --running;
        throw;
      }
    }
  }

  // Workers check `stop` between samples, so each is done within one sample's work, unless
  // that work is a transform that does not return. A worker still inside the transform
  // after the grace is detached: when the transform returns, it sees `stop` before it
  // touches the dataset again. (The mutex orders its reads of the dataset before our
  // return, after which the caller may free it.)
  void stop_workers() {
    const auto grace = std::chrono::duration<double>(std::min(options.timeout_seconds, kStopGraceSeconds));
    std::unique_lock<std::mutex> lock(mutex);
    stop = true;
    work_cv.notify_all();
    const bool all_exited = exited_cv.wait_for(lock, grace, [&] { return running == 0; });
    // The others are all in transforms but for moments of kolo's own work, which ends.
    if (!all_exited) exited_cv.wait(lock, [&] { return running == in_transform; });
    lock.unlock();
    for (std::thread& t : threads) {
      if (all_exited) t.join();
      else t.detach();
    }
  }

  int64_t batches_for(int64_t samples) const {
    const int64_t size = options.batch_size;
    return options.drop_last ? samples / size : (samples + size - 1) / size;
  }

  void start_epoch(int64_t new_epoch) {
    auto new_order = std::make_shared<const std::vector<int64_t>>(sampler.indices(new_epoch));
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++generation;  // batches in flight for the old epoch are dropped when they arrive
      epoch = new_epoch;
      order = std::move(new_order);
      batches = batches_for(static_cast<int64_t>(order->size()));
      next_claim = next_deliver = 0;
      for (auto& [b, slot] : ready) recycle(std::move(slot.batch));
      ready.clear();
      started = true;
    }
    work_cv.notify_all();
  }

  bool next(Batch& out) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!started) {
      lock.unlock();
      start_epoch(0);
      lock.lock();
    }
    if (next_deliver >= batches) return false;
    const auto bound = std::chrono::duration<double>(options.timeout_seconds);
    if (!ready_cv.wait_for(lock, bound, [&] { return fatal || ready.count(next_deliver) != 0; })) {
      std::ostringstream message;
      message << "kolo: DataLoader: batch " << next_deliver << " of epoch " << epoch << " not ready after "
              << options.timeout_seconds << " s (LoaderOptions::timeout_seconds): is the transform stuck?";
      throw Error(StatusCode::Stalled, message.str());
    }
    if (fatal) std::rethrow_exception(fatal);
    auto it = ready.find(next_deliver);
    // Left in place: every later call rethrows it too, until start_epoch.
    if (it->second.error) std::rethrow_exception(it->second.error);
    std::swap(out, it->second.batch);
    recycle(std::move(it->second.batch));  // the caller's previous buffers
    ready.erase(it);
    ++next_deliver;
    lock.unlock();
    work_cv.notify_all();  // a place in the window opened
    return true;
  }

  int64_t batches_per_epoch() const { return batches_for(sampler.samples_per_rank()); }

 private:
  static constexpr double kStopGraceSeconds = 5.0;

  // The user's transform, counted in `in_transform` while a worker is inside it.
  LoaderOptions with_counted_transform(LoaderOptions counted) {
    if (!counted.transform) return counted;
    counted.transform = [this, transform = std::move(counted.transform)](float* image, int64_t channels,
                                                                           int64_t height, int64_t width,
                                                                           int64_t index) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++in_transform;
      }
      exited_cv.notify_all();
      struct Leave {
        Impl* impl;
        ~Leave() {
          std::lock_guard<std::mutex> lock(impl->mutex);
          --impl->in_transform;
        }
      } leave{this};  // also when the transform throws
      transform(image, channels, height, width, index);
    };
    return counted;
  }

  bool claimable() const { return started && next_claim < batches && next_claim < next_deliver + capacity; }

  // Spare buffers, so that steady state allocates nothing. Called with the mutex held.
  void recycle(Batch&& batch) {
    if (static_cast<int64_t>(spares.size()) < capacity) spares.push_back(std::move(batch));
  }

  void worker() {
    try {
      work();
    } catch (...) {  // not a batch's failure (those go into its slot): out of memory, say
      {
        std::lock_guard<std::mutex> lock(mutex);
        fatal = std::current_exception();
      }
      ready_cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex);
    --running;
    exited_cv.notify_all();
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || claimable(); });
      if (stop) return;
      const int64_t b = next_claim++;
      const uint64_t my_generation = generation;
      const int64_t my_epoch = epoch;
      const std::shared_ptr<const std::vector<int64_t>> my_order = order;  // start_epoch may replace it
      Slot slot;
      if (!spares.empty()) {
        slot.batch = std::move(spares.back());
        spares.pop_back();
      }
      lock.unlock();

      const int64_t begin = b * options.batch_size;
      const int64_t count = std::min<int64_t>(options.batch_size, static_cast<int64_t>(my_order->size()) - begin);
      try {
        if (!data::build_batch(dataset, options, my_epoch, my_order->data() + begin, count, stop, slot.batch)) return;
      } catch (...) {
        slot.error = std::current_exception();
      }

      lock.lock();
      if (my_generation != generation) {
        recycle(std::move(slot.batch));
        continue;
      }
      const bool wanted_now = b == next_deliver;
      ready.emplace(b, std::move(slot));
      if (wanted_now) ready_cv.notify_one();  // one consumer
    }
  }

  const Dataset& dataset;
  const DistributedSampler sampler;
  const LoaderOptions options;
  const int64_t capacity;  // batches built ahead of the consumer, at most
  std::vector<std::thread> threads;

  std::mutex mutex;
  std::condition_variable work_cv;   // workers: a batch can be claimed, or stop
  std::condition_variable ready_cv;  // consumer: its next batch is ready, or a worker died
  std::condition_variable exited_cv;  // stop_workers: `running` fell, or `in_transform` rose
  int running = 0;                    // workers started and not yet returned
  int in_transform = 0;               // of those, inside the user's transform
  std::atomic<bool> stop{false};     // also read without the mutex, to cancel a batch mid-way
  std::exception_ptr fatal;

  // The current epoch. Batches [0, next_deliver) are delivered, [next_deliver, next_claim)
  // are being built or wait in `ready`.
  bool started = false;
  uint64_t generation = 0;
  int64_t epoch = 0;
  std::shared_ptr<const std::vector<int64_t>> order;
  int64_t batches = 0;
  int64_t next_claim = 0, next_deliver = 0;
  std::map<int64_t, Slot> ready;
  std::vector<Batch> spares;
};

DataLoader::DataLoader(const Dataset& dataset, const DistributedSampler& sampler, const LoaderOptions& options) {
  data::check_loader_setup(dataset, sampler, options);
  impl_ = std::make_shared<Impl>(dataset, sampler, options);
  try {
    impl_->start_workers();
  } catch (...) {  // a thread failed to start: stop those that did
    impl_->stop_workers();
    throw;
  }
}

DataLoader::~DataLoader() { impl_->stop_workers(); }

void DataLoader::start_epoch(int64_t epoch) { impl_->start_epoch(epoch); }

bool DataLoader::next(Batch& batch) { return impl_->next(batch); }

int64_t DataLoader::batches_per_epoch() const { return impl_->batches_per_epoch(); }

}  // namespace kolo::models
