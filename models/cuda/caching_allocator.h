// A caching allocator for device memory, in the manner of PyTorch's CUDACachingAllocator:
// a training step frees and re-allocates the same activations every step, and cudaMalloc/
// cudaFree synchronise the device, so freed blocks are kept and handed out again. After the
// first steps no request reaches the device.
//
// - Sizes are rounded up to 512 bytes. Requests up to 1 MiB come from 2 MiB segments (the
//   "small" pool), larger ones from segments of 20 MiB (under 10 MiB) or their own size
//   rounded to 2 MiB (the "large" pool). A block bigger than the request is split and the
//   rest stays free; adjacent free blocks of a segment merge again when freed.
// - Blocks belong to the stream they were allocated on and are reused only by it, so work
//   on that stream is already ordered after the previous owner's. A block used on another
//   stream too (record_stream) waits, when freed, for events on those streams.
// - When the device has no room, the allocator returns every whole free segment to the
//   device and retries once; then it throws kolo::Error saying what was asked and held.
//
// The bookkeeping here is plain C++: the device calls go through DeviceMemory, so that the
// tests run it on host memory (models/cuda/cuda_memory.cc is the CUDA implementation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace kolo::models::cuda {

using StreamId = std::uintptr_t;  // a cudaStream_t, opaque here
using EventId = std::uintptr_t;   // a cudaEvent_t

// The device calls the allocator makes.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // nullptr when the device has no room (the allocator then releases its cache and retries).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void free(void* p) = 0;
  // An event reached once the work enqueued on `stream` so far is done.
  virtual EventId record(StreamId stream) = 0;
  virtual bool done(EventId event) = 0;
  virtual void destroy(EventId event) = 0;
  // A few words for error messages, e.g. "GPU 0 (1.2 GiB free of 79.1 GiB)".
  virtual std::string describe() = 0;
};

struct AllocatorStats {
  std::size_t in_use_bytes = 0;         // handed out (rounded sizes)
  std::size_t peak_in_use_bytes = 0;
  std::size_t reserved_bytes = 0;       // held from the device: in use + cached
  std::size_t peak_reserved_bytes = 0;
  std::size_t cached_bytes = 0;         // reserved but free, ready for reuse
  int64_t device_allocations = 0;       // DeviceMemory::allocate calls that succeeded (cudaMalloc)
  int64_t device_frees = 0;
  int64_t requests = 0;                 // allocate() calls served
  int64_t cache_releases = 0;           // times the cache was emptied to make room
};

class CachingAllocator {
 public:
  static constexpr std::size_t kRound = 512;
  static constexpr std::size_t kSmallRequest = std::size_t{1} << 20;     // 1 MiB
  static constexpr std::size_t kSmallSegment = std::size_t{2} << 20;     // 2 MiB
  static constexpr std::size_t kMediumRequest = std::size_t{10} << 20;   // 10 MiB
  static constexpr std::size_t kMediumSegment = std::size_t{20} << 20;   // 20 MiB
  static constexpr std::size_t kLargeRound = std::size_t{2} << 20;       // 2 MiB

  explicit CachingAllocator(DeviceMemory& memory) : memory_(memory) {}
  ~CachingAllocator();  // returns every segment to the device (blocks still out are lost)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // At least `bytes` (0 gives nullptr), for use on `stream`. Throws kolo::Error when the
  // device has no room even after the cache is released.
  void* allocate(std::size_t bytes, StreamId stream);
  // Back to the cache. Throws kolo::Error for a pointer this allocator did not hand out.
  void free(void* p);
  // `p` is also used by work enqueued on `stream`: when freed, it is not reused before that
  // work (as far as it was enqueued at free time) is done.
  void record_stream(void* p, StreamId stream);
  // Returns every whole free segment to the device (torch.cuda.empty_cache()).
  void release_cached();

  AllocatorStats stats() const;
  void reset_peak();

  static std::size_t round_size(std::size_t bytes);
  static std::size_t segment_size(std::size_t rounded);

 private:
  struct Block {
    StreamId stream = 0;
    std::size_t size = 0;
    char* ptr = nullptr;
    bool small = false;        // pool
    bool allocated = false;
    int pending_events = 0;    // events to pass before the block is free again
    Block* prev = nullptr;     // neighbours within the segment
    Block* next = nullptr;
    std::vector<StreamId> other_streams;
  };
  struct BySize {  // stream, then size, then address: best fit on one stream
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;
  struct Pending {
    EventId event;
    Block* block;
  };

  Pool& pool_of(bool small) { return small ? small_free_ : large_free_; }
  Block* find_free(std::size_t size, StreamId stream, bool small);
  Block* new_segment(std::size_t size, StreamId stream, bool small);
  Block* split(Block* block, std::size_t size);
  void release_to_pool(Block* block);  // merges with free neighbours
  void collect_events();               // frees blocks whose events have been reached
  std::size_t release_whole_segments();
  [[noreturn]] void out_of_memory(std::size_t requested);

  DeviceMemory& memory_;
  mutable std::mutex mutex_;
  Pool small_free_, large_free_;
  std::unordered_map<void*, Block*> allocated_;
  std::vector<Pending> pending_;
  AllocatorStats stats_;
};

}  // namespace kolo::models::cuda
