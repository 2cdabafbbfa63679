// kolo_fuzz_seeds DIR: writes the seed corpus of every harness, DIR/<harness>/<seed>, with
// kolo's own writers (serialize, save_checkpoint, zlib), so that the seeds are the formats
// as they are. A few small valid inputs per harness and a few near-valid ones (truncated,
// one field wrong) that reach the checks. Replaces what DIR/<harness>/ held.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "kolo/models.h"
#include "models/checkpoint/format.h"
#include "rendezvous/protocol.h"
#include "runtime/message.h"

namespace fs = std::filesystem;

namespace {

fs::path g_root;

void seed(const std::string& harness, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_root / harness;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string gzip(const std::string& bytes) {
  const fs::path path = fs::temp_directory_path() / ("kolo-fuzz-seed-" + std::to_string(::getpid()) + ".gz");
  gzFile out = gzopen(path.c_str(), "wb9");
  gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(out);
  std::stringstream text;
  text << std::ifstream(path, std::ios::binary).rdbuf();
  fs::remove(path);
  return text.str();
}

std::string big_endian32(uint32_t value) {
  return {static_cast<char>(value >> 24), static_cast<char>(value >> 16), static_cast<char>(value >> 8),
          static_cast<char>(value)};
}

std::string little_endian32(uint32_t value) {
  std::string bytes(4, '\0');
  kolo::models::checkpoint_format::store_le(reinterpret_cast<uint8_t*>(bytes.data()), value, 4);
  return bytes;
}

// idx_fuzzer's and the like's two files in one input (fuzz_support.h: split_in_two).
std::string two_files(const std::string& first, const std::string& second) {
  return std::string{static_cast<char>(first.size() & 0xff), static_cast<char>(first.size() >> 8)} + first + second;
}

std::string cut(const std::string& bytes, std::size_t keep) { return bytes.substr(0, keep); }

// ---- negotiation messages ------------------------------------------------------------------

kolo::Request request(std::string name, kolo::OpType type, std::vector<int64_t> shape) {
  kolo::Request r;
  r.name = std::move(name);
  r.type = type;
  r.shape = std::move(shape);
  return r;
}

void request_list_seeds() {
  const std::string h = "request_list_fuzzer";
  seed(h, "empty", kolo::serialize(kolo::RequestList{}));
  kolo::RequestList one;
  one.requests.push_back(request("grad/fc.weight", kolo::OpType::Allreduce, {10, 10}));
  seed(h, "one_allreduce", kolo::serialize(one));
  kolo::RequestList mixed;
  for (const char* name : {"grad/a", "grad/b"}) {
    mixed.requests.push_back(request(name, kolo::OpType::Allreduce, {4}));
    mixed.requests.back().group = "grad/a";
    mixed.requests.back().group_size = 2;
    mixed.requests.back().op = kolo::ReduceOp::Average;
    mixed.requests.back().compression = kolo::Compression::FP16;
  }
  mixed.requests.push_back(request("init/w", kolo::OpType::Broadcast, {2, 3}));
  mixed.requests.back().root = 1;
  mixed.requests.back().device = kolo::Device::cuda(0);
  mixed.requests.push_back(request("gather", kolo::OpType::Allgather, {3, 1, 1, 1, 1, 1, 1, 2}));
  mixed.requests.back().dtype = kolo::DType::Int64;
  mixed.requests.push_back(request("barrier", kolo::OpType::Barrier, {}));
  mixed.invalidate_slots = {1, 5};
  mixed.joined = true;
  const std::string bytes = kolo::serialize(mixed);
  seed(h, "mixed_joined", bytes);
  seed(h, "mixed_truncated", cut(bytes, bytes.size() / 2));
  seed(h, "count_past_the_end", little_endian32(1u << 31) + std::string(17, '\0'));
}

void response_list_seeds() {
  const std::string h = "response_list_fuzzer";
  seed(h, "empty", kolo::serialize(kolo::ResponseList{}));
  kolo::ResponseList list;
  list.invalidate_slots = {3};
  kolo::Response fused;
  fused.names = {"a", "b", "c"};
  fused.element_counts = {1, 0, 1000};
  fused.op = kolo::ReduceOp::Average;
  fused.compression = kolo::Compression::BF16;
  list.responses.push_back(fused);
  kolo::Response gather;
  gather.type = kolo::OpType::Allgather;
  gather.names = {"g"};
  gather.element_counts = {6};
  gather.rank_first_dims = {1, 2};
  list.responses.push_back(gather);
  kolo::Response error;
  error.kind = kolo::Response::Kind::Error;
  error.type = kolo::OpType::Broadcast;
  error.names = {"bad"};
  error.error_code = kolo::StatusCode::Mismatch;
  error.error_message = "kolo: ranks disagree on the root of tensor 'bad'";
  list.responses.push_back(error);
  const std::string bytes = kolo::serialize(list);
  seed(h, "fused_gather_error", bytes);
  seed(h, "truncated", cut(bytes, bytes.size() - 3));
  seed(h, "count_past_the_end", little_endian32(0) + little_endian32(1u << 31) + std::string(13, '\0'));
}

// The local state (response_checks_fuzzer.cc: size, rank, capacity, flags, d0, d1, root),
// then a response list that fits it, or misses by one field.
void response_checks_seeds() {
  const std::string h = "response_checks_fuzzer";
  const auto state = [](int size, int rank, int capacity, int flags, int d0, int d1, int root) {
    return std::string{static_cast<char>(size - 1), static_cast<char>(rank), static_cast<char>(capacity),
                       static_cast<char>(flags),    static_cast<char>(d0),   static_cast<char>(d1),
                       static_cast<char>(root)};
  };
  kolo::ResponseList list;
  list.invalidate_slots = {1, 3};
  kolo::Response fused;
  fused.names = {"a", "b"};
  fused.element_counts = {12, 12};
  list.responses.push_back(fused);
  kolo::Response gather;
  gather.type = kolo::OpType::Allgather;
  gather.names = {"g"};
  gather.element_counts = {12};
  gather.rank_first_dims = {4, 4, 2};
  list.responses.push_back(gather);
  kolo::Response cast;
  cast.type = kolo::OpType::Broadcast;
  cast.names = {"c"};
  cast.element_counts = {12};
  cast.root = 1;
  list.responses.push_back(cast);
  const std::string fits = kolo::serialize(list);
  seed(h, "fits", two_files(state(3, 1, 8, 0, 4, 3, 1), fits));
  seed(h, "joined", two_files(state(3, 0, 8, 1, 4, 3, 1), fits));
  seed(h, "slot_past_the_cache", two_files(state(3, 1, 2, 0, 4, 3, 1), fits));
  seed(h, "other_shape", two_files(state(3, 1, 8, 0, 5, 3, 1), fits));
  seed(h, "other_dtype_and_root", two_files(state(3, 2, 8, 2, 2, 3, 0), fits));
}

// ---- checkpoints --------------------------------------------------------------------------

std::string checkpoint_bytes(const kolo::models::Checkpoint& c) {
  const fs::path path = fs::temp_directory_path() / ("kolo-fuzz-seed-" + std::to_string(::getpid()) + ".kckpt");
  kolo::models::save_checkpoint(c, path.string());
  std::stringstream text;
  text << std::ifstream(path, std::ios::binary).rdbuf();
  fs::remove(path);
  return text.str();
}

// checkpoint_fuzzer reads its first byte as the mode: 0 the file as it is, 1 sealed (the
// harness rewrites the length and both checksums, so that mutations reach the sections).
void checkpoint_seeds() {
  const std::string h = "checkpoint_fuzzer";
  kolo::models::Checkpoint small;
  small.tensors["fc.weight"] = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -3.0f};
  small.shapes["fc.weight"] = {2, 3};
  small.tensors["fc.bias"] = {0.1f, 0.2f};
  small.shapes["fc.bias"] = {2};
  kolo::models::Checkpoint full = small;
  full.optimizer_name = "sgd";
  full.optimizer.tensors["momentum/fc.bias"] = {0.0f, 1.0f};
  full.optimizer.scalars["lr"] = 0.1;
  full.epoch = 3;
  full.rng["loader"] = "12345";
  full.metadata["model"] = "tiny";
  for (const auto& [name, c] : {std::pair{"empty", kolo::models::Checkpoint{}}, {"tensors", small}, {"full", full}}) {
    const std::string bytes = checkpoint_bytes(c);
    seed(h, std::string(name), '\0' + bytes);
    seed(h, std::string(name) + "_sealed", '\1' + bytes);
  }
  std::string flipped = checkpoint_bytes(full);
  flipped[flipped.size() / 2] ^= 0x10;
  seed(h, "full_checksum_mismatch", '\0' + flipped);
  seed(h, "full_truncated", '\0' + cut(checkpoint_bytes(full), 40));
}

// ---- data files ---------------------------------------------------------------------------

std::string idx_images(uint32_t count, uint32_t rows, uint32_t cols) {
  std::string bytes = big_endian32(0x803) + big_endian32(count) + big_endian32(rows) + big_endian32(cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i) bytes += static_cast<char>(i * 37);
  return bytes;
}

std::string idx_labels(const std::string& labels) {
  return big_endian32(0x801) + big_endian32(static_cast<uint32_t>(labels.size())) + labels;
}

void idx_seeds() {
  const std::string h = "idx_fuzzer";
  const std::string images = idx_images(3, 2, 3), labels = idx_labels({2, 0, 9});
  seed(h, "plain", two_files(images, labels));
  seed(h, "gzip", two_files(gzip(images), gzip(labels)));
  seed(h, "gzip_images_plain_labels", two_files(gzip(images), labels));
  seed(h, "label_out_of_range", two_files(images, idx_labels({2, 10, 9})));
  seed(h, "label_count_differs", two_files(images, idx_labels({2, 0})));
  seed(h, "pixels_truncated", two_files(cut(images, images.size() - 1), labels));
}

std::string cifar_record(uint8_t label) {
  std::string record(1, static_cast<char>(label));
  for (int i = 0; i < 3072; ++i) record += static_cast<char>(i % 251);
  return record;
}

void cifar10_seeds() {
  const std::string h = "cifar10_fuzzer";
  seed(h, "one_record", cifar_record(7));
  seed(h, "two_records_gzip", gzip(cifar_record(0) + cifar_record(9)));
  seed(h, "label_out_of_range_gzip", gzip(cifar_record(10)));
  seed(h, "short_record", cut(cifar_record(3), 100));
}

void gzip_seeds() {
  const std::string h = "gzip_fuzzer";
  const std::string text = "kolo reads plain and gzip data files alike\n";
  seed(h, "plain", text);
  seed(h, "gzip", gzip(text));
  seed(h, "gzip_empty", gzip(""));
  seed(h, "two_members", gzip(text) + gzip("and a second member\n"));
  seed(h, "trailing_garbage", gzip(text) + "garbage");
  const std::string whole = gzip(text);
  seed(h, "no_trailer", cut(whole, whole.size() - 8));
}

// ---- kolorun and the settings ---------------------------------------------------------------

std::string arguments(const std::vector<std::string>& args) {
  std::string bytes;
  for (std::size_t i = 0; i < args.size(); ++i) bytes += (i ? std::string(1, '\0') : "") + args[i];
  return bytes;
}

void kolorun_seeds() {
  const std::string h = "kolorun_options_fuzzer";
  seed(h, "np", arguments({"-np", "2", "python3", "train.py"}));
  seed(h, "hosts_and_settings", arguments({"-np", "4", "-H", "a:2,b:2", "--fusion-threshold-mb", "32",
                                          "--cycle-time-ms", "0.5", "--cache-capacity", "0", "--log-level", "debug",
                                          "--stall-check-warning-time-seconds", "30", "prog", "--its-flag"}));
  seed(h, "hostfile_and_output", arguments({"-hostfile", "hosts.txt", "--launcher", "mpirun", "--timeline-filename",
                                           "/tmp/t.json", "--output-filename", "logs", "--mpi-args",
                                           "--mca btl self", "--", "prog"}));
  seed(h, "check_build", arguments({"-cb"}));
  seed(h, "zero_ranks", arguments({"-np", "0", "prog"}));
  seed(h, "unknown_flag", arguments({"--fusion-treshold-mb", "1", "prog"}));
}

void hosts_seeds() {
  const std::string h = "hosts_fuzzer";
  seed(h, "host_list", std::string(1, '\0') + "a:2,b:4,c");
  seed(h, "hostfile", std::string(1, '\1') + "# nodes\nnode1 slots=4 max_slots=8\nnode2:2\n\nnode3\n");
  seed(h, "host_list_zero_slots", std::string(1, '\0') + "a:0,b");
  seed(h, "hostfile_bad_slots", std::string(1, '\1') + "node1 slots=x\n");
}

void rendezvous_seeds() {
  using namespace kolo::rendezvous;
  const std::string h = "rendezvous_fuzzer";
  const Secret secret{};
  seed(h, "set", std::string(1, '\0') + encode(Request{Kind::Set, secret, "round1/0", "10.0.0.1:4242"}));
  seed(h, "slot", std::string(1, '\0') + encode(Request{Kind::Slot, secret, "node1", "1 0"}));
  seed(h, "hosts", std::string(1, '\0') + encode(Request{Kind::Hosts, secret, "node1", "1 3"}));
  seed(h, "answer", std::string(1, '\1') + encode(Answer{Status::Ok, to_text(Place{2, 1, 3})}));
  seed(h, "answer_gone", std::string(1, '\1') + encode(Answer{Status::Gone, "its host was removed"}));
  seed(h, "place", std::string(1, '\2') + "4 2 3");
  seed(h, "discovery", std::string(1, '\3') + "# hosts\nnode0:2\nnode1\n\n10.0.0.3:4\n");
}

void config_seeds() {
  const std::string h = "config_fuzzer";
  seed(h, "fusion_cycle_cache", "KOLO_FUSION_THRESHOLD=1048576\nKOLO_CYCLE_TIME=0.5\nHOROVOD_CACHE_CAPACITY=0\n");
  seed(h, "timeline_log_autotune",
       "KOLO_TIMELINE=/tmp/t.json\nKOLO_TIMELINE_MARK_CYCLES=1\nKOLO_LOG_LEVEL=debug\nKOLO_AUTOTUNE=yes\n"
       "KOLO_AUTOTUNE_LOG=/tmp/a.csv\n");
  seed(h, "timeouts_and_stalls",
       "KOLO_CONTROL_TIMEOUT_SECONDS=0.001\nKOLO_STALL_CHECK_TIME_SECONDS=10\nKOLO_STALL_SHUTDOWN_TIME_SECONDS=5\n"
       "KOLO_STALL_CHECK_DISABLE=0\nKOLO_ALLREDUCE_CHUNK_BYTES=65536\n");
  seed(h, "gpu_hierarchical",
       "KOLO_GPU_OPERATIONS=nccl\nKOLO_HIERARCHICAL_ALLREDUCE=1\nKOLO_HIERARCHICAL_ALLGATHER=on\n"
       "KOLO_TEST_LOCAL_SIZE=2\nKOLO_TEST_HOST_GPU=1\n");
  seed(h, "ignored_and_unknown", "HOROVOD_THREAD_AFFINITY=1\nKOLO_FUSION_THRESHHOLD=3\nHOROVOD_CYCLE_TIME=2\n");
  seed(h, "not_a_number", "KOLO_CYCLE_TIME=abc\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kolo_fuzz_seeds DIR (writes DIR/<harness>/<seed>)\n";
    return 2;
  }
  g_root = argv[1];
  for (const char* harness : {"request_list_fuzzer", "response_list_fuzzer", "response_checks_fuzzer",
                              "checkpoint_fuzzer", "idx_fuzzer",
                              "cifar10_fuzzer", "gzip_fuzzer", "kolorun_options_fuzzer", "hosts_fuzzer",
                              "config_fuzzer", "rendezvous_fuzzer"})
    fs::remove_all(g_root / harness);
  request_list_seeds();
  response_list_seeds();
  response_checks_seeds();
  checkpoint_seeds();
  idx_seeds();
  cifar10_seeds();
  gzip_seeds();
  kolorun_seeds();
  hosts_seeds();
  config_seeds();
  rendezvous_seeds();
  return 0;
}
