// fuse_responses: packing consecutive compatible allreduces up to the threshold.
#include <catch2/catch.hpp>

#include "kolo/kolo.h"
#include "runtime/fusion.h"

namespace {

kolo::Response ar(std::string name, int64_t elements, kolo::DType dtype = kolo::DType::Float32,
                  kolo::ReduceOp op = kolo::ReduceOp::Sum) {
  kolo::Response r;
  r.type = kolo::OpType::Allreduce;
  r.names = {std::move(name)};
  r.element_counts = {elements};
  r.dtype = dtype;
  r.op = op;
  return r;
}

kolo::FusionOptions options(int64_t threshold, int64_t unfused_min = 1 << 30) {
  kolo::FusionOptions o;
  o.threshold_bytes = threshold;
  o.unfused_min_bytes = unfused_min;
  return o;
}

using Groups = std::vector<std::vector<std::string>>;

Groups groups_of(const std::vector<kolo::Response>& responses) {
  Groups g;
  for (const auto& r : responses) g.push_back(r.names);
  return g;
}

}  // namespace

TEST_CASE("fusion packs compatible tensors up to the threshold, in order", "[fusion]") {
  // 100 float32 = 400 bytes each; 1000 bytes hold two.
  const auto fused = kolo::fuse_responses({ar("a", 100), ar("b", 100), ar("c", 100), ar("d", 100),
                                           ar("e", 100)},
                                          options(1000));
  CHECK(groups_of(fused) == Groups{{"a", "b"}, {"c", "d"}, {"e"}});
  CHECK(fused[0].element_counts == std::vector<int64_t>{100, 100});
  CHECK(fused[2].element_counts == std::vector<int64_t>{100});
  CHECK(kolo::response_bytes(fused[0]) == 800);
}

TEST_CASE("fusion fills a buffer exactly up to the threshold", "[fusion]") {
  const auto fused = kolo::fuse_responses({ar("a", 100), ar("b", 150), ar("c", 1)}, options(1000));
  CHECK(groups_of(fused) == Groups{{"a", "b"}, {"c"}});
}

TEST_CASE("fusion threshold 0 disables fusion", "[fusion]") {
  const auto fused = kolo::fuse_responses({ar("a", 1), ar("b", 1), ar("c", 1)}, options(0));
  CHECK(groups_of(fused) == Groups{{"a"}, {"b"}, {"c"}});
}

TEST_CASE("fusion never mixes dtypes, ops or scale factors", "[fusion]") {
  kolo::Response pre = ar("pre", 4);
  pre.prescale = 2;
  kolo::Response post = ar("post", 4);
  post.postscale = 0.5;
  const auto fused = kolo::fuse_responses(
      {ar("f1", 4), ar("f2", 4), ar("d", 4, kolo::DType::Float64), ar("h", 4, kolo::DType::Float16),
       ar("h2", 4, kolo::DType::Float16), ar("max", 4, kolo::DType::Float16, kolo::ReduceOp::Max),
       pre, post, ar("f3", 4)},
      options(1 << 20));
  CHECK(groups_of(fused) ==
        Groups{{"f1", "f2"}, {"d"}, {"h", "h2"}, {"max"}, {"pre"}, {"post"}, {"f3"}});
}

TEST_CASE("fusion keeps compressions and CPU and GPU tensors apart, and fuses any GPU ordinal",
          "[fusion][gpu]") {
  auto on = [](kolo::Response r, kolo::Device d, kolo::Compression c = kolo::Compression::None) {
    r.device = d;
    r.compression = c;
    return r;
  };
  const auto gpu0 = kolo::Device::cuda(0), gpu1 = kolo::Device::cuda(1);
  const auto fused = kolo::fuse_responses(
      {ar("c1", 4), on(ar("g1", 4), gpu0), on(ar("g2", 4), gpu1), on(ar("h1", 4), gpu0, kolo::Compression::FP16),
       on(ar("h2", 4), gpu0, kolo::Compression::FP16), on(ar("b1", 4), gpu0, kolo::Compression::BF16), ar("c2", 4)},
      options(1 << 20));
  // Ranks agree on the device kind only (each uses its own GPU), so that is what fusion compares.
  CHECK(groups_of(fused) == Groups{{"c1"}, {"g1", "g2"}, {"h1", "h2"}, {"b1"}, {"c2"}});
}

TEST_CASE("fusion never fuses tensors at or above unfused_min_bytes", "[fusion]") {
  // unfused_min 4000 bytes = 1000 float32.
  const auto fused = kolo::fuse_responses(
      {ar("s1", 10), ar("big", 1000), ar("s2", 10), ar("s3", 10), ar("just_below", 999), ar("s4", 10)},
      options(1 << 20, 4000));
  CHECK(groups_of(fused) == Groups{{"s1"}, {"big"}, {"s2", "s3", "just_below", "s4"}});
}

TEST_CASE("fusion leaves errors and other collectives alone and keeps their position", "[fusion]") {
  kolo::Response err = ar("err", 4);
  err.kind = kolo::Response::Kind::Error;
  err.error_code = kolo::StatusCode::Mismatch;
  kolo::Response bc = ar("bc", 4);
  bc.type = kolo::OpType::Broadcast;
  kolo::Response gather = ar("gather", 4);
  gather.type = kolo::OpType::Allgather;
  const auto fused = kolo::fuse_responses(
      {ar("a", 4), err, ar("b", 4), ar("c", 4), bc, ar("d", 4), gather, ar("e", 4), ar("f", 4)},
      options(1 << 20));
  CHECK(groups_of(fused) ==
        Groups{{"a"}, {"err"}, {"b", "c"}, {"bc"}, {"d"}, {"gather"}, {"e", "f"}});
  CHECK(fused[1].kind == kolo::Response::Kind::Error);
  CHECK(fused[3].type == kolo::OpType::Broadcast);
}

TEST_CASE("fusion preserves the order of all names", "[fusion]") {
  std::vector<kolo::Response> in;
  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    const auto dtype = (i % 7 == 0) ? kolo::DType::Float64 : kolo::DType::Float32;
    in.push_back(ar("t" + std::to_string(i), 1 + (i * 37) % 300, dtype));
    expected.push_back("t" + std::to_string(i));
  }
  const auto fused = kolo::fuse_responses(in, options(2048, 1000));
  std::vector<std::string> names;
  int64_t elements_in = 0, elements_out = 0;
  for (const auto& r : in) elements_in += r.element_counts[0];
  for (const auto& r : fused) {
    CHECK(r.names.size() == r.element_counts.size());
    if (r.names.size() > 1) CHECK(kolo::response_bytes(r) <= 2048);
    for (std::size_t i = 0; i < r.names.size(); ++i) {
      names.push_back(r.names[i]);
      elements_out += r.element_counts[i];
    }
  }
  CHECK(names == expected);
  CHECK(elements_out == elements_in);
  CHECK(fused.size() < in.size());
}

TEST_CASE("response bytes count every fused tensor", "[fusion]") {
  kolo::Response r = ar("x", 3, kolo::DType::Float64);
  r.names.push_back("y");
  r.element_counts.push_back(5);
  CHECK(kolo::response_bytes(r) == 64);
  CHECK(kolo::response_bytes(ar("h", 7, kolo::DType::BFloat16)) == 14);
}

namespace {

kolo::Request cached_request(std::string name, int64_t elements, kolo::DType dtype = kolo::DType::Float32,
                             kolo::ReduceOp op = kolo::ReduceOp::Sum, kolo::OpType type = kolo::OpType::Allreduce) {
  kolo::Request r;
  r.name = std::move(name);
  r.type = type;
  r.dtype = dtype;
  r.op = op;
  r.shape = {elements};
  return r;
}

}  // namespace

// The cached path plans from Requests, the negotiated path from Responses: both must pack
// a sequence identically, or ranks would disagree on the fused buffers.
TEST_CASE("fusion plan packs cached requests exactly as negotiated responses", "[fusion]") {
  std::vector<kolo::Request> requests;
  for (int i = 0; i < 60; ++i) {
    const auto dtype = i % 9 == 4 ? kolo::DType::Float16 : kolo::DType::Float32;
    const auto op = i % 13 == 7 ? kolo::ReduceOp::Max : kolo::ReduceOp::Sum;
    const auto type = i % 17 == 5 ? kolo::OpType::Broadcast : kolo::OpType::Allreduce;
    kolo::Request r = cached_request("c" + std::to_string(i), 1 + (i * 53) % 700, dtype, op, type);
    if (i % 11 == 3) r.prescale = 0.5;
    requests.push_back(r);
  }
  for (int64_t threshold : {int64_t{0}, int64_t{1000}, int64_t{4096}, int64_t{1} << 20}) {
    INFO("threshold " << threshold);
    const kolo::FusionOptions o = options(threshold, 2000);
    kolo::FusionPlan from_requests(o), from_responses(o);
    std::vector<std::size_t> idx_req, idx_resp;
    for (const auto& q : requests) {
      idx_req.push_back(from_requests.add(q, q.name));
      kolo::Response r;
      r.type = q.type;
      r.names = {q.name};
      r.element_counts = {q.num_elements()};
      r.dtype = q.dtype;
      r.op = q.op;
      r.prescale = q.prescale;
      r.postscale = q.postscale;
      idx_resp.push_back(from_responses.add(r));
    }
    CHECK(idx_req == idx_resp);
    const auto a = from_requests.take(), b = from_responses.take();
    CHECK(groups_of(a) == groups_of(b));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].element_counts == b[i].element_counts);
      CHECK(a[i].dtype == b[i].dtype);
      CHECK(a[i].op == b[i].op);
      CHECK(a[i].prescale == b[i].prescale);
      CHECK(a[i].type == b[i].type);
    }
    if (threshold == 0) CHECK(a.size() == requests.size());
    else CHECK(a.size() < requests.size());
  }
}

TEST_CASE("fusion plan returns the index of the response holding each tensor", "[fusion]") {
  kolo::FusionPlan plan(options(1000));
  CHECK(plan.add(cached_request("a", 100), "a") == 0u);
  CHECK(plan.add(cached_request("b", 100), "b") == 0u);
  CHECK(plan.add(cached_request("c", 200), "c") == 1u);  // 400 + 400 + 800 > 1000
  CHECK(plan.add(cached_request("d", 10, kolo::DType::Float64), "d") == 2u);
  CHECK(plan.add(cached_request("e", 10, kolo::DType::Float64), "e") == 2u);
  const auto fused = plan.take();
  CHECK(groups_of(fused) == Groups{{"a", "b"}, {"c"}, {"d", "e"}});
  CHECK(fused[2].element_counts == std::vector<int64_t>{10, 10});
}

TEST_CASE("the default pipeline piece is 1 MiB a rank, and a tensor of 256 KiB a rank, or of one smaller piece, runs unfused",
          "[fusion]") {
  constexpr int64_t KiB = 1024, MiB = 1024 * 1024;
  // Default (KOLO_ALLREDUCE_CHUNK_BYTES = 0): the pieces and the cutoff are set apart.
  CHECK(kolo::allreduce_piece_bytes(0, 2) == 2 * MiB);
  CHECK(kolo::allreduce_piece_bytes(0, 4) == 4 * MiB);
  CHECK(kolo::fusion_options(64 * MiB, 0, 2) == kolo::FusionOptions{64 * MiB, 512 * KiB});
  CHECK(kolo::fusion_options(64 * MiB, 0, 4) == kolo::FusionOptions{64 * MiB, 1 * MiB});
  // A setting of small pieces lowers the cutoff to one piece; large pieces leave it.
  CHECK(kolo::allreduce_piece_bytes(64 * KiB, 2) == 64 * KiB);
  CHECK(kolo::fusion_options(4 * MiB, 64 * KiB, 2) == kolo::FusionOptions{4 * MiB, 64 * KiB});
  CHECK(kolo::allreduce_piece_bytes(8 * MiB, 2) == 8 * MiB);
  CHECK(kolo::fusion_options(4 * MiB, 8 * MiB, 2) == kolo::FusionOptions{4 * MiB, 512 * KiB});
}
