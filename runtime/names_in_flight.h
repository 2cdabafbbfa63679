// The names a runtime has accepted and not yet finished, checked on every submission in the
// caller's thread (TensorQueue::push). A hash set of pointers to the names, which live in
// their entries as long as they are in flight: open addressing with linear probing and
// backward-shift erase, so that a steady training loop, which claims and frees the same
// names every step, allocates nothing here (a node-based set cost about 0.1 µs per tensor,
// a fifth of a step of 161 tiny tensors).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kolo {

class NamesInFlight {
 public:
  // Claims *name, which must stay where it is until erase(); false, claiming nothing, if an
  // equal name is claimed already. `hash` is std::hash of the name, where the caller has it.
  bool insert(const std::string* name) { return insert(name, std::hash<std::string>{}(*name)); }
  bool insert(const std::string* name, std::size_t hash);
  // Frees a name that insert() claimed, given the same pointer.
  void erase(const std::string* name) { erase(name, std::hash<std::string>{}(*name)); }
  void erase(const std::string* name, std::size_t hash);
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    const std::string* name = nullptr;  // null: empty
    std::size_t hash = 0;
  };
  std::size_t home(std::size_t hash) const { return hash & (slots_.size() - 1); }
  void grow();

  std::vector<Slot> slots_ = std::vector<Slot>(64);  // a power of two, at most half full
  std::size_t size_ = 0;
};

}  // namespace kolo
