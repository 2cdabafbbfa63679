// A request's dimensions, stored inline up to kInline of them (nearly every tensor), on
// the heap beyond. A request is built for every tensor of every step: a heap copy of its
// shape was one of the three allocations, with their frees, that a submission cost.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "kolo/check.h"

namespace kolo {

class Shape {
 public:
  static constexpr std::size_t kInline = 6;

  Shape() = default;
  Shape(std::span<const int64_t> dims) { assign(dims); }
  Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}
  Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

  void assign(std::span<const int64_t> dims) {
    size_ = dims.size();
    if (size_ <= kInline) {
      std::copy(dims.begin(), dims.end(), inline_.begin());
      heap_.clear();
    } else {
      heap_.assign(dims.begin(), dims.end());
    }
  }

  const int64_t* data() const { return size_ <= kInline ? inline_.data() : heap_.data(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t operator[](std::size_t i) const { return data()[i]; }
  int64_t at(std::size_t i) const {
    KOLO_CHECK(i < size_, StatusCode::Internal,
               "kolo::Shape::at(" + std::to_string(i) + ") of a shape of " + std::to_string(size_) + " dimensions");
    return data()[i];
  }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

  friend bool operator==(const Shape& a, const Shape& b) { return std::ranges::equal(a, b); }

 private:
  // The defaulted copies and moves are right: only one of the two stores is in use.
  std::array<int64_t, kInline> inline_{};
  std::size_t size_ = 0;
  std::vector<int64_t> heap_;
};

}  // namespace kolo
