// DataLoader: worker threads build the batches of an epoch ahead of the consumer, which
// takes them strictly in order. Batch b may be claimed only while b < next_deliver +
// capacity, so at most `capacity` batches exist at a time however slow the consumer is.
// Workers wait only for claimable work or stop; the consumer waits only for its next batch,
// which a live worker always ends up building (or failing, which next() rethrows).
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "batch_builder.h"

namespace kolo::models {

struct DataLoader::Impl {
  // A built batch, or why building it failed.
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };

  Impl(const Dataset& dataset, const DistributedSampler& sampler, const LoaderOptions& options)
      : dataset(dataset), sampler(sampler), options(options), capacity(int64_t{options.workers} * options.prefetch) {}
  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    work_cv.notify_all();
    for (std::thread& t : threads) t.join();
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
    ready_cv.wait(lock, [&] { return fatal || ready.count(next_deliver) != 0; });
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

  void start_workers() {
    for (int i = 0; i < options.workers; ++i) threads.emplace_back([this] { worker(); });
  }

 private:
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
  impl_ = std::make_unique<Impl>(dataset, sampler, options);
  // If a thread fails to start, impl_'s destructor stops and joins those that did.
  impl_->start_workers();
}

DataLoader::~DataLoader() = default;

void DataLoader::start_epoch(int64_t epoch) { impl_->start_epoch(epoch); }

bool DataLoader::next(Batch& batch) { return impl_->next(batch); }

int64_t DataLoader::batches_per_epoch() const { return impl_->batches_per_epoch(); }

}  // namespace kolo::models
