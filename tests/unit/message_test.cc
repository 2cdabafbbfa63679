// Negotiation messages survive serialize/parse unchanged; truncated bytes are an error.
#include <catch2/catch.hpp>

#include "kolo/kolo.h"
#include "runtime/message.h"

namespace {

kolo::Request request(std::string name, kolo::OpType type, kolo::DType dtype,
                      std::vector<int64_t> shape) {
  kolo::Request r;
  r.name = std::move(name);
  r.type = type;
  r.dtype = dtype;
  r.shape = std::move(shape);
  return r;
}

}  // namespace

TEST_CASE("request list round-trips through serialize and parse", "[message]") {
  kolo::RequestList list;
  list.requests.push_back(request("grad/w", kolo::OpType::Allreduce, kolo::DType::Float16, {3, 4, 5}));
  list.requests.back().op = kolo::ReduceOp::Max;
  list.requests.back().prescale = 0.25;
  list.requests.back().postscale = -3.5;
  list.requests.back().group = "grad/w";
  list.requests.back().group_size = 2;
  list.requests.back().compression = kolo::Compression::BF16;
  list.requests.push_back(request("bcast \"quoted\"\nname", kolo::OpType::Broadcast, kolo::DType::Int64, {}));
  list.requests.back().root = 3;
  list.requests.back().device = kolo::Device::cuda(1);
  list.requests.push_back(request(std::string("nul\0byte", 8), kolo::OpType::Allgather, kolo::DType::UInt8, {0, 7}));
  list.requests.push_back(request("a2a", kolo::OpType::Alltoall, kolo::DType::BFloat16, {-1}));
  list.invalidate_slots = {0, 5, 4294967295u};
  list.joined = true;

  const kolo::RequestList back = kolo::parse_request_list(kolo::serialize(list));
  REQUIRE(back.requests.size() == list.requests.size());
  for (std::size_t i = 0; i < list.requests.size(); ++i) {
    INFO("request " << i);
    CHECK(back.requests[i] == list.requests[i]);
  }
  CHECK(back.requests[2].name.size() == 8);
  CHECK(back.invalidate_slots == list.invalidate_slots);
  CHECK(back.joined);
}

TEST_CASE("empty request list round-trips and keeps joined false", "[message]") {
  const kolo::RequestList back = kolo::parse_request_list(kolo::serialize(kolo::RequestList{}));
  CHECK(back.requests.empty());
  CHECK(back.invalidate_slots.empty());
  CHECK_FALSE(back.joined);
}

TEST_CASE("response list round-trips through serialize and parse", "[message]") {
  kolo::ResponseList list;
  list.invalidate_slots = {7, 3};
  kolo::Response fused;
  fused.type = kolo::OpType::Allreduce;
  fused.names = {"a", "b", "c"};
  fused.element_counts = {1, 0, 123456789012};
  fused.dtype = kolo::DType::Float64;
  fused.op = kolo::ReduceOp::Average;
  fused.prescale = 1.0 / 3;
  fused.postscale = 1e-300;
  fused.compression = kolo::Compression::FP16;
  fused.device = kolo::Device::cuda(3);
  list.responses.push_back(fused);
  kolo::Response gather;
  gather.type = kolo::OpType::Allgather;
  gather.names = {"g"};
  gather.element_counts = {6};
  gather.rank_first_dims = {1, 2, 3, 0};
  gather.root = 2;
  list.responses.push_back(gather);
  kolo::Response error;
  error.kind = kolo::Response::Kind::Error;
  error.type = kolo::OpType::Broadcast;
  error.names = {"bad"};
  error.error_code = kolo::StatusCode::Mismatch;
  error.error_message = "kolo: ranks disagree on the root of tensor 'bad'";
  list.responses.push_back(error);

  const kolo::ResponseList back = kolo::parse_response_list(kolo::serialize(list));
  CHECK(back.invalidate_slots == list.invalidate_slots);
  REQUIRE(back.responses.size() == 3);
  CHECK(back.responses[0] == fused);
  CHECK(back.responses[1] == gather);
  CHECK(back.responses[2] == error);
  CHECK(back.responses[0].prescale == 1.0 / 3);  // bit-exact doubles
}

TEST_CASE("truncated negotiation messages are rejected, not misread", "[message]") {
  kolo::RequestList list;
  list.requests.push_back(request("grad/weight", kolo::OpType::Allreduce, kolo::DType::Float32, {10, 10}));
  const std::string bytes = kolo::serialize(list);
  for (std::size_t cut : {std::size_t{0}, std::size_t{3}, bytes.size() / 2, bytes.size() - 1}) {
    INFO("cut at " << cut << " of " << bytes.size());
    try {
      kolo::parse_request_list(bytes.substr(0, cut));
      FAIL("parsed a truncated message");
    } catch (const kolo::Error& e) {
      CHECK(e.code() == kolo::StatusCode::CommFailure);
    }
  }
  kolo::ResponseList responses;
  responses.responses.push_back(kolo::Response{});
  responses.responses.back().names = {"x"};
  const std::string rbytes = kolo::serialize(responses);
  CHECK_THROWS_AS(kolo::parse_response_list(rbytes.substr(0, rbytes.size() - 1)), kolo::Error);
}

TEST_CASE("shape_string prints shapes as bracketed lists", "[message]") {
  CHECK(kolo::shape_string({}) == "[]");
  CHECK(kolo::shape_string({5}) == "[5]");
  CHECK(kolo::shape_string({2, 3, 0}) == "[2, 3, 0]");
}

TEST_CASE("request element count is the product of its shape", "[message]") {
  CHECK(request("s", kolo::OpType::Allreduce, kolo::DType::Float32, {}).num_elements() == 1);
  CHECK(request("v", kolo::OpType::Allreduce, kolo::DType::Float32, {2, 3, 4}).num_elements() == 24);
  CHECK(request("z", kolo::OpType::Allreduce, kolo::DType::Float32, {5, 0}).num_elements() == 0);
}
