#include "response_cache.h"

namespace kolo {

ResponseCache::ResponseCache(int capacity) : capacity_(capacity), slots_(capacity) {
  // Lowest slot first, so that allocation order is the same on every rank.
  for (int slot = capacity - 1; slot >= 0; --slot) free_slots_.push_back(static_cast<uint32_t>(slot));
}

std::optional<uint32_t> ResponseCache::find(const std::string& name, std::size_t hash) const {
  auto it = by_name_.find(HashedName{name, hash});
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<uint32_t> ResponseCache::put(const Request& request) {
  if (capacity_ == 0) return std::nullopt;
  ++version_;
  if (auto slot = find(request.name)) {
    slots_[*slot].request = request;
    touch(*slot);
    return std::nullopt;
  }
  std::optional<uint32_t> evicted;
  if (free_slots_.empty()) {
    evicted = lru_.front();
    erase(*evicted);
  }
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  Slot& s = slots_[slot];
  s.request = request;
  s.occupied = true;
  s.lru_position = lru_.insert(lru_.end(), slot);
  by_name_[request.name] = slot;
  return evicted;
}

void ResponseCache::touch(uint32_t slot) {
  Slot& s = slots_[slot];
  lru_.splice(lru_.end(), lru_, s.lru_position);
}

void ResponseCache::erase(uint32_t slot) {
  Slot& s = slots_[slot];
  if (!s.occupied) return;
  ++version_;
  by_name_.erase(s.request.name);
  lru_.erase(s.lru_position);
  s.occupied = false;
  free_slots_.push_back(slot);
}

}  // namespace kolo
