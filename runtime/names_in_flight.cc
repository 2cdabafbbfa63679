#include "names_in_flight.h"

#include <utility>

#include "kolo/check.h"

namespace kolo {

bool NamesInFlight::insert(const std::string* name, std::size_t hash) {
  std::size_t i = home(hash);
  for (; slots_[i].name != nullptr; i = (i + 1) & (slots_.size() - 1))
    if (slots_[i].hash == hash && *slots_[i].name == *name) return false;
  slots_[i] = {name, hash};
  if (++size_ * 2 > slots_.size()) grow();
  return true;
}

void NamesInFlight::erase(const std::string* name, std::size_t hash) {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(hash);
  while (slots_[i].name != name) {
    KOLO_CHECK(slots_[i].name != nullptr, StatusCode::Internal,
               "kolo: tensor name '" + *name + "' left the names in flight twice");
    i = (i + 1) & mask;
  }
  // Backward shift: move later members of the probe run into the hole when the hole lies
  // between their home and where they sit, so that every lookup still finds them.
  for (std::size_t j = (i + 1) & mask; slots_[j].name != nullptr; j = (j + 1) & mask) {
    const std::size_t h = home(slots_[j].hash);
    if (((j - h) & mask) >= ((j - i) & mask)) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Slot{};
  --size_;
}

void NamesInFlight::grow() {
  std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(slots_.size() * 2));
  for (const Slot& s : old) {
    if (s.name == nullptr) continue;
    std::size_t i = home(s.hash);
    while (slots_[i].name != nullptr) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

}  // namespace kolo
