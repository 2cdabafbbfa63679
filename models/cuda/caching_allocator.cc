#include "models/cuda/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "kolo/check.h"
#include "kolo/kolo.h"

namespace kolo::models::cuda {
namespace {
std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(1 << 20));
  return text;
}
}  // namespace

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max() - kLargeRound)
    throw Error(StatusCode::InvalidArgument, "kolo: device allocation of " + std::to_string(bytes) + " bytes is impossible");
  return (bytes + kRound - 1) / kRound * kRound;
}

std::size_t CachingAllocator::segment_size(std::size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kMediumRequest) return kMediumSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Pending& p : pending_) memory_.destroy(p.event);
  // Every segment's blocks are a chain from its head (the block with no prev); the heads
  // are found through the free pools, the blocks still out and the pending ones.
  std::set<Block*> heads;
  auto head_of = [](Block* b) {
    while (b->prev) b = b->prev;
    return b;
  };
  for (Block* b : small_free_) heads.insert(head_of(b));
  for (Block* b : large_free_) heads.insert(head_of(b));
  for (auto& [ptr, b] : allocated_) heads.insert(head_of(b));
  for (const Pending& p : pending_) heads.insert(head_of(p.block));
  for (Block* head : heads) {
    memory_.free(head->ptr);
    for (Block* b = head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

CachingAllocator::Block* CachingAllocator::find_free(std::size_t size, StreamId stream, bool small) {
  Pool& pool = pool_of(small);
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

CachingAllocator::Block* CachingAllocator::new_segment(std::size_t size, StreamId stream, bool small) {
  const std::size_t bytes = segment_size(size);
  void* ptr = memory_.allocate(bytes);
  if (ptr == nullptr) {
    // Make room: whole free segments back to the device, then one more try.
    collect_events();
    release_whole_segments();
    ++stats_.cache_releases;
    ptr = memory_.allocate(bytes);
    if (ptr == nullptr) return nullptr;
  }
  ++stats_.device_allocations;
  stats_.reserved_bytes += bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  Block* block = new Block;
  block->stream = stream;
  block->size = bytes;
  block->ptr = static_cast<char*>(ptr);
  block->small = small;
  return block;
}

CachingAllocator::Block* CachingAllocator::split(Block* block, std::size_t size) {
  const std::size_t rest = block->size - size;
  // A small-pool remainder is worth keeping from one rounding unit; a large one only above
  // the small-request limit (smaller requests never come to the large pool).
  const bool worth = block->small ? rest >= kRound : rest > kSmallRequest;
  if (!worth) return block;
  Block* remainder = new Block;
  remainder->stream = block->stream;
  remainder->size = rest;
  remainder->ptr = block->ptr + size;
  remainder->small = block->small;
  remainder->prev = block;
  remainder->next = block->next;
  if (block->next) block->next->prev = remainder;
  block->next = remainder;
  block->size = size;
  pool_of(remainder->small).insert(remainder);
  return block;
}

void* CachingAllocator::allocate(std::size_t bytes, StreamId stream) {
  if (bytes == 0) return nullptr;
  const std::size_t size = round_size(bytes);
  const bool small = size <= kSmallRequest;
  std::lock_guard<std::mutex> lock(mutex_);
  collect_events();
  Block* block = find_free(size, stream, small);
  if (block == nullptr) block = new_segment(size, stream, small);
  if (block == nullptr) out_of_memory(size);
  block = split(block, size);
  block->allocated = true;
  allocated_[block->ptr] = block;
  ++stats_.requests;
  stats_.in_use_bytes += block->size;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return block->ptr;
}

void CachingAllocator::free(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(p);
  KOLO_CHECK(it != allocated_.end(), StatusCode::Internal,
             "kolo: internal error: device pointer was not allocated by kolo's caching allocator");
  Block* block = it->second;
  allocated_.erase(it);
  block->allocated = false;
  stats_.in_use_bytes -= block->size;
  if (block->other_streams.empty()) {
    release_to_pool(block);
    return;
  }
  for (StreamId s : block->other_streams) pending_.push_back({memory_.record(s), block});
  block->pending_events = static_cast<int>(block->other_streams.size());
  block->other_streams.clear();
}

void CachingAllocator::record_stream(void* p, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(p);
  KOLO_CHECK(it != allocated_.end(), StatusCode::Internal,
             "kolo: internal error: record_stream on a pointer kolo's caching allocator did not hand out");
  Block* block = it->second;
  if (stream == block->stream) return;  // its own stream orders the reuse already
  if (std::find(block->other_streams.begin(), block->other_streams.end(), stream) == block->other_streams.end())
    block->other_streams.push_back(stream);
}

void CachingAllocator::release_to_pool(Block* block) {
  Pool& pool = pool_of(block->small);
  auto is_free = [](const Block* b) { return b && !b->allocated && b->pending_events == 0; };
  // The lower block absorbs the higher one, so a segment's head block never changes.
  auto absorb = [](Block* lower, Block* higher) {
    lower->size += higher->size;
    lower->next = higher->next;
    if (higher->next) higher->next->prev = lower;
    delete higher;
  };
  if (is_free(block->prev)) {
    Block* prev = block->prev;
    pool.erase(prev);
    absorb(prev, block);
    block = prev;
  }
  if (is_free(block->next)) {
    pool.erase(block->next);
    absorb(block, block->next);
  }
  pool.insert(block);
}

void CachingAllocator::collect_events() {
  std::vector<Pending> still;
  for (const Pending& p : pending_) {
    if (!memory_.done(p.event)) {
      still.push_back(p);
      continue;
    }
    memory_.destroy(p.event);
    if (--p.block->pending_events == 0) release_to_pool(p.block);
  }
  pending_.swap(still);
}

std::size_t CachingAllocator::release_whole_segments() {
  std::size_t released = 0;
  for (Pool* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev != nullptr || b->next != nullptr) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      memory_.free(b->ptr);
      ++stats_.device_frees;
      stats_.reserved_bytes -= b->size;
      released += b->size;
      delete b;
    }
  }
  return released;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  collect_events();
  release_whole_segments();
}

void CachingAllocator::out_of_memory(std::size_t requested) {
  throw Error(StatusCode::DeviceError,
              "kolo: out of device memory: cannot allocate " + mib(requested) + " (a segment of " +
                  mib(segment_size(requested)) + ") on " + memory_.describe() + "; kolo holds " +
                  mib(stats_.in_use_bytes) + " in use and " + mib(stats_.reserved_bytes - stats_.in_use_bytes) +
                  " cached (its free segments were released and the allocation retried)");
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  AllocatorStats s = stats_;
  s.cached_bytes = s.reserved_bytes - s.in_use_bytes;
  return s;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace kolo::models::cuda
