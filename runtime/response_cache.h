// Remembers the parameters of recently run operations, each in a numbered slot, so that
// a steady training loop can negotiate with one bit per tensor instead of its name.
// Every rank's cache sees the same insertions and uses in the same order, so slot
// numbers agree across ranks without ever being exchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "message.h"

namespace kolo {

class ResponseCache {
 public:
  explicit ResponseCache(int capacity);

  int capacity() const { return capacity_; }
  std::optional<uint32_t> find(const std::string& name) const { return find(name, std::hash<std::string>{}(name)); }
  std::optional<uint32_t> find(const std::string& name, std::size_t hash) const;  // hash: std::hash of name
  const Request& at(uint32_t slot) const { return slots_[slot].request; }
  bool occupied(uint32_t slot) const { return slot < slots_.size() && slots_[slot].occupied; }
  // Changes whenever a slot's parameters do (put, erase); touch() leaves it.
  uint64_t version() const { return version_; }

  // Stores (or refreshes) the request and marks it most recently used. Returns the slot
  // of an entry evicted to make room, if any.
  std::optional<uint32_t> put(const Request& request);
  void touch(uint32_t slot);  // mark most recently used
  void erase(uint32_t slot);

 private:
  struct Slot {
    Request request;
    bool occupied = false;
    std::list<uint32_t>::iterator lru_position;
  };
  int capacity_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::list<uint32_t> lru_;  // front: least recently used
  // Looked up by a name with its hash already known (TensorEntry::name_hash).
  struct HashedName {
    const std::string& name;
    std::size_t hash;
  };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(const std::string& name) const { return std::hash<std::string>{}(name); }
    std::size_t operator()(const HashedName& h) const { return h.hash; }
  };
  struct NameEqual {
    using is_transparent = void;
    bool operator()(const std::string& a, const std::string& b) const { return a == b; }
    bool operator()(const HashedName& a, const std::string& b) const { return a.name == b; }
    bool operator()(const std::string& a, const HashedName& b) const { return a == b.name; }
  };
  std::unordered_map<std::string, uint32_t, NameHash, NameEqual> by_name_;
  uint64_t version_ = 0;
};

}  // namespace kolo
