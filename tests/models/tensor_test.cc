#include <catch2/catch.hpp>

#include "kolo/models.h"

using kolo::models::Tensor;

TEST_CASE("tensor copies share storage and clone does not", "[tensor]") {
  Tensor a = Tensor::full({2, 3}, 1.5f);
  Tensor b = a;
  b[0] = 7.0f;
  CHECK(a[0] == 7.0f);
  Tensor c = a.clone();
  c[1] = -1.0f;
  CHECK(a[1] == 1.5f);
  CHECK(a.reshape({3, 2}).dim(0) == 3);
  CHECK_THROWS_AS(a.reshape({4, 2}), kolo::Error);
}

TEST_CASE("a shape whose element count overflows is an error, not an empty tensor", "[tensor]") {
  CHECK_THROWS_WITH(Tensor({int64_t{1} << 40, int64_t{1} << 40}), Catch::Contains("has too many elements"));
  CHECK_THROWS_WITH(Tensor({int64_t{1} << 40, int64_t{1} << 40, 0}), Catch::Contains("has too many elements"));
  CHECK_THROWS_WITH(Tensor({2, -1}), Catch::Contains("negative dimension"));
  CHECK(Tensor({0, 1 << 20}).numel() == 0);
  CHECK(Tensor(std::vector<int64_t>{}).numel() == 1);
}
