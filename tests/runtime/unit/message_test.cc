// Negotiation messages survive serialize/parse unchanged; truncated, damaged or hostile
// bytes are an error (CommFailure) found before anything is allocated for them.
#include <catch2/catch.hpp>

#include "kolo/kolo.h"
#include "runtime/message.h"
#include "support/status.h"

namespace {

using kolo::StatusCode;
using kolo_test::HasCode;

kolo::Request request(std::string name, kolo::OpType type, kolo::DType dtype,
                      std::vector<int64_t> shape) {
  kolo::Request r;
  r.name = std::move(name);
  r.type = type;
  r.dtype = dtype;
  r.shape = std::move(shape);
  return r;
}

// Little-endian 32-bit words, as the messages carry their counts.
std::string u32(uint32_t value) {
  std::string bytes(4, '\0');
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// `bytes` with the 32-bit word at `at` replaced.
std::string with_u32_at(std::string bytes, std::size_t at, uint32_t value) {
  return bytes.replace(at, 4, u32(value));
}

kolo::ResponseList one_response(kolo::Response r) {
  kolo::ResponseList list;
  list.responses.push_back(std::move(r));
  return list;
}

kolo::Response run_response(std::string name, int64_t elements) {
  kolo::Response r;
  r.names = {std::move(name)};
  r.element_counts = {elements};
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
  list.requests.push_back(request("a2a", kolo::OpType::Alltoall, kolo::DType::BFloat16, {0}));
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

// 2^31 entries of a Request would be hundreds of gigabytes: the count is checked against
// the bytes that remain before the vector is sized.
TEST_CASE("a negotiation message whose count claims more entries than its bytes hold is rejected before allocating",
          "[message]") {
  constexpr uint32_t kHuge = 1u << 31;
  SECTION("requests: a 21-byte message that claims 2^31 of them") {
    const std::string bytes = u32(kHuge) + std::string(17, '\0');
    REQUIRE(bytes.size() == 21);
    CHECK_THROWS_MATCHES(kolo::parse_request_list(bytes), kolo::Error,
                         HasCode(StatusCode::CommFailure, "(request list of 21 bytes): claims 2147483648 requests"));
  }
  SECTION("invalidated slots of a request list") {
    const std::string bytes = u32(0) + u32(kHuge) + std::string(13, '\0');
    CHECK_THROWS_MATCHES(kolo::parse_request_list(bytes), kolo::Error,
                         HasCode(StatusCode::CommFailure, "claims 2147483648 invalidated slots of at least 4 bytes"));
  }
  SECTION("a request's shape") {
    kolo::RequestList list;
    list.requests.push_back(request("w", kolo::OpType::Allreduce, kolo::DType::Float32, {2, 3}));
    const std::string bytes = kolo::serialize(list);
    // The shape's count follows the 5-byte name, 1 + 4 + 4 + 4 + 8 + 8 + 4 bytes of fields
    // and the 8-byte device, after the 4-byte request count.
    const std::size_t at = 4 + 5 + 33 + 8;
    REQUIRE(with_u32_at(bytes, at, 2) == bytes);
    CHECK_THROWS_MATCHES(kolo::parse_request_list(with_u32_at(bytes, at, kHuge)), kolo::Error,
                         HasCode(StatusCode::CommFailure, "claims 2147483648 shape dimensions"));
  }
  SECTION("responses") {
    const std::string bytes = u32(0) + u32(kHuge) + std::string(13, '\0');
    CHECK_THROWS_MATCHES(kolo::parse_response_list(bytes), kolo::Error,
                         HasCode(StatusCode::CommFailure, "(response list of 21 bytes): claims 2147483648 responses"));
  }
  SECTION("invalidated slots of a response list") {
    const std::string bytes = u32(0xffffffffu) + std::string(17, '\0');
    CHECK_THROWS_MATCHES(kolo::parse_response_list(bytes), kolo::Error,
                         HasCode(StatusCode::CommFailure, "claims 4294967295 invalidated slots"));
  }
  SECTION("a response's names and element counts") {
    const std::string bytes = kolo::serialize(one_response(run_response("x", 6)));
    // After the slot count, the response count, the kind and the type.
    const std::size_t names_at = 4 + 4 + 1 + 1, counts_at = names_at + 4 + 4 + 1;
    REQUIRE(with_u32_at(bytes, names_at, 1) == bytes);
    REQUIRE(with_u32_at(bytes, counts_at, 1) == bytes);
    CHECK_THROWS_MATCHES(kolo::parse_response_list(with_u32_at(bytes, names_at, kHuge)), kolo::Error,
                         HasCode(StatusCode::CommFailure, "claims 2147483648 tensor names"));
    CHECK_THROWS_MATCHES(kolo::parse_response_list(with_u32_at(bytes, counts_at, kHuge)), kolo::Error,
                         HasCode(StatusCode::CommFailure, "claims 2147483648 element counts"));
  }
}

TEST_CASE("a negotiation message with a value no rank writes is rejected", "[message]") {
  SECTION("an enum value this build does not know") {
    kolo::RequestList list;
    list.requests.push_back(request("w", kolo::OpType::Allreduce, kolo::DType::Float32, {2}));
    std::string bytes = kolo::serialize(list);
    const std::size_t type_at = 4 + 5, dtype_at = type_at + 1;
    bytes[type_at] = 42;
    CHECK_THROWS_MATCHES(kolo::parse_request_list(bytes), kolo::Error,
                         HasCode(StatusCode::CommFailure, "operation type 42 is not one this build knows"));
    bytes = with_u32_at(kolo::serialize(list), dtype_at, 99);
    CHECK_THROWS_MATCHES(kolo::parse_request_list(bytes), kolo::Error,
                         HasCode(StatusCode::CommFailure, "dtype 99 is not one this build knows"));
  }
  SECTION("a response to run without an element count per tensor") {
    kolo::Response r = run_response("a", 4);
    r.names.push_back("b");
    CHECK_THROWS_MATCHES(kolo::parse_response_list(kolo::serialize(one_response(r))), kolo::Error,
                         HasCode(StatusCode::CommFailure, "names 2 tensors but gives 1 element counts"));
  }
  SECTION("a negative element count") {
    CHECK_THROWS_MATCHES(kolo::parse_response_list(kolo::serialize(one_response(run_response("a", -5)))),
                         kolo::Error, HasCode(StatusCode::CommFailure, "negative size, -5"));
  }
  SECTION("a shape with a negative dimension, or more elements than 64 bits count") {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, -1}, std::vector<int64_t>{1 << 30, 1 << 30, 1 << 30}}) {
      kolo::RequestList list;
      list.requests.push_back(request("s", kolo::OpType::Allreduce, kolo::DType::Float32, shape));
      CHECK_THROWS_MATCHES(kolo::parse_request_list(kolo::serialize(list)), kolo::Error,
                           HasCode(StatusCode::CommFailure, "tensor 's' has the shape " + kolo::shape_string(shape)));
    }
  }
  SECTION("bytes after the end") {
    CHECK_THROWS_MATCHES(kolo::parse_request_list(kolo::serialize(kolo::RequestList{}) + "x"), kolo::Error,
                         HasCode(StatusCode::CommFailure, "1 bytes left over after the end"));
  }
}

TEST_CASE("a process set change travels as a typed payload: its action, ranks and id", "[message]") {
  kolo::RequestList list;
  kolo::Request add = request("kolo.process_set_change.0", kolo::OpType::ProcessSet, kolo::DType::Float32, {});
  add.process_set_change = {kolo::ProcessSetChange::Action::Add, {0, 2, 3}, 0};
  kolo::Request remove = request("kolo.process_set_change.1", kolo::OpType::ProcessSet, kolo::DType::Float32, {});
  remove.process_set_change = {kolo::ProcessSetChange::Action::Remove, {}, 7};
  list.requests = {add, remove};
  const std::string bytes = kolo::serialize(list);
  const kolo::RequestList back = kolo::parse_request_list(bytes);
  REQUIRE(back.requests.size() == 2);
  CHECK(back.requests[0].process_set_change == add.process_set_change);
  CHECK(back.requests[1].process_set_change == remove.process_set_change);
  CHECK(back.requests[0].shape.empty());  // nothing borrowed from the tensor fields
  CHECK(back.requests[1].root == 0);

  // The last request's action byte, counted from the end: after it come the ranks' count (4
  // bytes, no ranks), the id (4), the list's count of invalidated slots (4) and joined (1).
  std::string damaged = bytes;
  const std::size_t action_at = damaged.size() - (1 + 4 + 4 + 4 + 1);
  REQUIRE(damaged[action_at] == static_cast<char>(kolo::ProcessSetChange::Action::Remove));
  damaged[action_at] = 9;
  CHECK_THROWS_MATCHES(kolo::parse_request_list(damaged), kolo::Error,
                       HasCode(StatusCode::CommFailure, "process set change 9 is not one this build knows"));
}

TEST_CASE("a status travels with its code as a checked field", "[message]") {
  const kolo::Status io(StatusCode::IoError, "kolo: cannot open the timeline '/nope/t.json'");
  const kolo::Status back = kolo::parse_status(kolo::serialize(io));
  CHECK(back.code() == StatusCode::IoError);
  CHECK(back.message() == io.message());
  CHECK(kolo::parse_status(kolo::serialize(kolo::Status::OK())).ok());
  std::string damaged = kolo::serialize(io);
  damaged[0] = 120;  // the code's byte
  CHECK_THROWS_MATCHES(kolo::parse_status(damaged), kolo::Error,
                       HasCode(StatusCode::CommFailure, "status code 120 is not one this build knows"));
  CHECK_THROWS_MATCHES(kolo::parse_status(kolo::serialize(io).substr(0, 3)), kolo::Error,
                       HasCode(StatusCode::CommFailure, "truncated"));
}
