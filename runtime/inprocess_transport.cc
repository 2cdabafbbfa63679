#include "inprocess_transport.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "kolo/check.h"
#include "ops/dtype.h"
#include "ops/node_layout.h"

namespace kolo {
namespace {

constexpr std::size_t kCalls = static_cast<std::size_t>(InProcessCall::Subset) + 1;

// What a rank was waiting for, in the words of the MPI transport's messages.
const char* during(InProcessCall call) {
  switch (call) {
    case InProcessCall::ControlAllreduce: return "negotiation (allreduce of ready bits)";
    case InProcessCall::ControlGather: return "negotiation (gather of requests)";
    case InProcessCall::ControlBroadcast: return "negotiation (broadcast of responses)";
    case InProcessCall::Allreduce: return "an allreduce";
    case InProcessCall::Allgather: return "an allgather";
    case InProcessCall::Broadcast: return "a broadcast";
    case InProcessCall::Alltoall: return "an alltoall";
    case InProcessCall::Reducescatter: return "a reducescatter";
    case InProcessCall::Barrier: return "a barrier";
    case InProcessCall::Sendrecv: return "a pairwise exchange";
    case InProcessCall::Subset: return "the making of a process set";
  }
  return "a collective";
}

std::string bytes_of(const void* data, std::size_t bytes) {
  return bytes == 0 ? std::string() : std::string(static_cast<const char*>(data), bytes);
}

std::size_t byte_count(int64_t count, DType dtype) { return static_cast<std::size_t>(count) * dtype_size(dtype); }

template <typename T>
std::string list(std::span<const T> values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

}  // namespace

struct InProcessWorld::State {
  // One collective as the ranks meet in it. Once every rank has arrived, nothing in it
  // changes: each rank reads the others' parts without the lock.
  struct Round {
    InProcessCall call;
    std::vector<std::string> signatures;  // what each rank called, with what must agree
    std::vector<std::string> parts;       // what each rank gave
    int arrived = 0, left = 0;
    std::shared_ptr<State> made;  // subset(): the set's world
  };

  State(int size, const Clock& clock, InProcessOptions options)
      : size(size), clock(clock), options(options), stopped(static_cast<std::size_t>(size), false),
        completed(static_cast<std::size_t>(size)), answered(static_cast<std::size_t>(size), 0) {}

  // Rank `rank`'s part of its call number `number`: returns once every rank's part is in.
  // `first` runs, under the lock, for the first rank to arrive.
  std::shared_ptr<const Round> meet(int rank, uint64_t number, InProcessCall call, std::string signature,
                                    std::string part, const std::function<void(Round&)>& first = nullptr);

  const int size;
  const Clock& clock;
  const InProcessOptions options;
  mutable std::mutex mutex;
  std::condition_variable cv;
  std::map<uint64_t, std::shared_ptr<Round>> rounds;  // by call number
  std::vector<bool> stopped;
  std::map<int, InProcessCall> stop_at;  // stop_taking_part_at(): rank -> the call it hangs in
  std::optional<Status> failure;  // once set, every call fails with it
  std::vector<std::array<int64_t, kCalls>> completed;
  // The roll call: questions asked so far, and how many of them each rank has answered.
  int64_t questions = 0;
  std::vector<int64_t> answered;
  std::optional<int> ended_by;  // the rank whose end_job() ended the world
  InProcessWorld::MessageDamage damage;  // InProcessWorld::damage_messages()

  // `message` as rank `rank` sends it in `call`: damaged, when a test asks for it.
  std::string sent(InProcessCall call, int rank, std::string message) const {
    InProcessWorld::MessageDamage d;
    {
      std::lock_guard<std::mutex> lock(mutex);
      d = damage;
    }
    if (d) d(call, rank, message);
    return message;
  }
  // The worlds subset() made from this one, with their ranks as ranks of this one: a rank
  // that stops taking part here stops in them too, as a hung process would.
  std::vector<std::pair<std::weak_ptr<State>, std::vector<int>>> subsets;

  void stop(int rank) {
    std::vector<std::pair<std::shared_ptr<State>, int>> nested;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopped.at(static_cast<std::size_t>(rank)) = true;
      for (const auto& [weak, ranks] : subsets) {
        const auto at = std::find(ranks.begin(), ranks.end(), rank);
        if (auto world = weak.lock(); world && at != ranks.end()) nested.push_back({world, int(at - ranks.begin())});
      }
    }
    cv.notify_all();
    for (auto& [world, r] : nested) world->stop(r);
  }

 private:
  [[noreturn]] void fail(const Error& error) {
    failure = Status(error.code(), error.what());
    cv.notify_all();
    throw error;
  }
  [[noreturn]] void fail_as_before() const { throw Error(failure->code(), failure->message()); }
};

std::shared_ptr<const InProcessWorld::State::Round> InProcessWorld::State::meet(int rank, uint64_t number, InProcessCall call,
                                                         std::string signature, std::string part,
                                                         const std::function<void(Round&)>& first) {
  std::unique_lock<std::mutex> lock(mutex);
  if (failure) fail_as_before();
  const auto deadline = clock.now() + options.timeout;
  const auto timed_out = [&] { fail(ops::no_answer(options.timeout, during(call))); };
  if (auto at = stop_at.find(rank); at != stop_at.end() && at->second == call) {
    stopped[static_cast<std::size_t>(rank)] = true;
    stop_at.erase(at);
    cv.notify_all();
  }
  if (stopped[static_cast<std::size_t>(rank)]) {  // hung: it never arrives, and fails with the others
    if (!ops::wait_until(clock, cv, lock, deadline, [&] { return failure.has_value(); })) timed_out();
    fail_as_before();
  }
  std::shared_ptr<Round>& slot = rounds[number];
  if (!slot) {
    slot = std::make_shared<Round>();
    slot->call = call;
    slot->signatures.resize(static_cast<std::size_t>(size));
    slot->parts.resize(static_cast<std::size_t>(size));
    if (first) first(*slot);
  }
  const std::shared_ptr<Round> round = slot;
  round->signatures[static_cast<std::size_t>(rank)] = std::string(during(call)) + " of " + signature;
  round->parts[static_cast<std::size_t>(rank)] = std::move(part);
  if (++round->arrived == size) cv.notify_all();
  if (!ops::wait_until(clock, cv, lock, deadline, [&] { return round->arrived == size || failure; }))
    timed_out();
  if (failure) fail_as_before();
  // The runtime makes every rank call the same collectives in the same order.
  for (int r = 1; r < size; ++r)
    if (round->signatures[static_cast<std::size_t>(r)] != round->signatures[0])
      fail(Error(StatusCode::Internal,
                 "kolo: in-process ranks called different collectives at the same point: rank 0 called " +
                     round->signatures[0] + ", rank " + std::to_string(r) + " called " +
                     round->signatures[static_cast<std::size_t>(r)]));
  if (++round->left == size) rounds.erase(number);
  ++completed[static_cast<std::size_t>(rank)][static_cast<std::size_t>(call)];
  return round;
}

namespace {

using State = InProcessWorld::State;
using Round = State::Round;

// One rank's place in a world: its calls are numbered in the order it makes them, which
// is the same on every rank.
struct Endpoint {
  std::shared_ptr<State> world;
  int rank = 0;
  uint64_t next = 0;

  int size() const { return world->size; }
  std::shared_ptr<const Round> meet(InProcessCall call, std::string signature, std::string part,
                                    const std::function<void(Round&)>& first = nullptr) {
    return world->meet(rank, next++, call, std::move(signature), std::move(part), first);
  }
};

class InProcessControl final : public ops::ControlChannel {
 public:
  explicit InProcessControl(std::shared_ptr<Endpoint> endpoint) : e_(std::move(endpoint)) {}

  int rank() const override { return e_->rank; }
  int size() const override { return e_->size(); }

  void allreduce_and(std::span<uint64_t> words) override {
    auto round = e_->meet(InProcessCall::ControlAllreduce, std::to_string(words.size()) + " words",
                          bytes_of(words.data(), words.size_bytes()));
    for (const std::string& part : round->parts) {
      for (std::size_t i = 0; i < words.size(); ++i) {
        uint64_t theirs;
        std::memcpy(&theirs, part.data() + i * sizeof(uint64_t), sizeof(uint64_t));
        words[i] &= theirs;
      }
    }
  }

  std::vector<std::string> gather(const std::string& message, int root) override {
    auto round = e_->meet(InProcessCall::ControlGather, "messages to rank " + std::to_string(root),
                          e_->world->sent(InProcessCall::ControlGather, e_->rank, message));
    if (e_->rank != root) return {};
    return round->parts;
  }

  void broadcast(std::string& message, int root) override {
    auto round = e_->meet(InProcessCall::ControlBroadcast, "a message from rank " + std::to_string(root),
                          e_->rank == root ? e_->world->sent(InProcessCall::ControlBroadcast, root, message)
                                           : std::string());
    message = round->parts[static_cast<std::size_t>(root)];
  }

 private:
  std::shared_ptr<Endpoint> e_;
};

class InProcessBackend final : public ops::Backend {
 public:
  explicit InProcessBackend(std::shared_ptr<Endpoint> endpoint) : e_(std::move(endpoint)) {}

  std::string name() const override { return "in-process"; }
  bool supports(const Device& device) const override { return device.is_cpu(); }

  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                 double scale) override {
    const std::size_t bytes = byte_count(count, dtype);
    auto round = e_->meet(InProcessCall::Allreduce,
                          std::to_string(count) + " " + dtype_name(dtype) + " (" + op_name(op) + ")",
                          bytes_of(input, bytes));
    if (bytes == 0) return;
    std::memcpy(output, round->parts[0].data(), bytes);
    for (std::size_t q = 1; q < round->parts.size(); ++q)
      ops::reduce_into(output, round->parts[q].data(), count, dtype, op);
    if (scale != 1.0) ops::scale(output, count, dtype, scale);
  }

  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    check_counts(counts, "allgather");
    auto round = e_->meet(InProcessCall::Allgather, std::string(dtype_name(dtype)) + " " + list(counts),
                          bytes_of(input, byte_count(counts[static_cast<std::size_t>(e_->rank)], dtype)));
    char* out = static_cast<char*>(output);
    for (const std::string& part : round->parts) {
      if (!part.empty()) std::memcpy(out, part.data(), part.size());
      out += part.size();
    }
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    const std::size_t bytes = byte_count(count, dtype);
    auto round = e_->meet(InProcessCall::Broadcast,
                          std::to_string(count) + " " + dtype_name(dtype) + " from rank " + std::to_string(root),
                          e_->rank == root ? bytes_of(data, bytes) : std::string());
    if (e_->rank != root && bytes > 0) std::memcpy(data, round->parts[static_cast<std::size_t>(root)].data(), bytes);
  }

  // A rank's part: its send counts, then its data.
  void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                 std::span<const int64_t> recv_counts, DType dtype) override {
    check_counts(send_counts, "alltoall");
    check_counts(recv_counts, "alltoall");
    const int64_t total = std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0});
    auto round = e_->meet(InProcessCall::Alltoall, dtype_name(dtype),
                          bytes_of(send_counts.data(), send_counts.size_bytes()) +
                              bytes_of(input, byte_count(total, dtype)));
    const std::size_t header = send_counts.size_bytes();
    char* out = static_cast<char*>(output);
    for (std::size_t q = 0; q < round->parts.size(); ++q) {
      const std::string& theirs = round->parts[q];
      std::vector<int64_t> their_counts(send_counts.size());
      std::memcpy(their_counts.data(), theirs.data(), header);
      const auto rank = static_cast<std::size_t>(e_->rank);
      // The runtime gives every rank the counts it negotiated: they agree.
      KOLO_CHECK(their_counts[rank] == recv_counts[q], StatusCode::Internal,
                 "kolo: in-process alltoall: rank " + std::to_string(q) + " sends " +
                     std::to_string(their_counts[rank]) + " elements to rank " + std::to_string(rank) +
                     ", which expects " + std::to_string(recv_counts[q]));
      const int64_t offset = std::accumulate(their_counts.begin(), their_counts.begin() + e_->rank, int64_t{0});
      const std::size_t bytes = byte_count(recv_counts[q], dtype);
      if (bytes > 0) std::memcpy(out, theirs.data() + header + byte_count(offset, dtype), bytes);
      out += bytes;
    }
  }

  void reducescatter(const void* input, void* output, std::span<const int64_t> counts, DType dtype,
                     ReduceOp op, double scale) override {
    check_counts(counts, "reducescatter");
    const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    auto round = e_->meet(InProcessCall::Reducescatter,
                          std::string(dtype_name(dtype)) + " (" + op_name(op) + ") " + list(counts),
                          bytes_of(input, byte_count(total, dtype)));
    const int64_t mine = counts[static_cast<std::size_t>(e_->rank)];
    const std::size_t offset =
        byte_count(std::accumulate(counts.begin(), counts.begin() + e_->rank, int64_t{0}), dtype);
    if (mine == 0) return;
    std::memcpy(output, round->parts[0].data() + offset, byte_count(mine, dtype));
    for (std::size_t q = 1; q < round->parts.size(); ++q)
      ops::reduce_into(output, round->parts[q].data() + offset, mine, dtype, op);
    if (scale != 1.0) ops::scale(output, mine, dtype, scale);
  }

  void barrier() override { e_->meet(InProcessCall::Barrier, "every rank", std::string()); }

  // A meeting of every rank, each reading its peer's part: Adasum's exchanges are made by
  // all ranks at once, in pairs.
  void sendrecv(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, int peer) override {
    KOLO_CHECK(peer >= 0 && peer < e_->size() && peer != e_->rank, StatusCode::Internal,
               "kolo: in-process sendrecv of rank " + std::to_string(e_->rank) + " with rank " +
                   std::to_string(peer) + " of " + std::to_string(e_->size()));
    // A rank's part: the rank it sends to, then its data.
    auto round = e_->meet(InProcessCall::Sendrecv, "pairs", bytes_of(&peer, sizeof peer) + bytes_of(send, send_bytes));
    const std::string& theirs = round->parts[static_cast<std::size_t>(peer)];
    int their_peer = -1;
    std::memcpy(&their_peer, theirs.data(), sizeof their_peer);
    KOLO_CHECK(their_peer == e_->rank && theirs.size() - sizeof their_peer == recv_bytes, StatusCode::Internal,
               "kolo: in-process sendrecv: rank " + std::to_string(peer) + " sent " +
                   std::to_string(theirs.size() - sizeof their_peer) + " bytes to rank " + std::to_string(their_peer) +
                   ", but rank " + std::to_string(e_->rank) + " expects " + std::to_string(recv_bytes) + " from it");
    if (recv_bytes > 0) std::memcpy(recv, theirs.data() + sizeof their_peer, recv_bytes);
  }

 private:
  // The executor passes a count per rank (as the hierarchical backend's check).
  void check_counts(std::span<const int64_t> counts, const char* what) const {
    KOLO_CHECK(static_cast<int>(counts.size()) == e_->size(), StatusCode::Internal,
               std::string("kolo: in-process ") + what + " was given " + std::to_string(counts.size()) +
                   " counts for " + std::to_string(e_->size()) + " ranks");
  }

  std::shared_ptr<Endpoint> e_;
};

class InProcessTransport final : public Transport {
 public:
  InProcessTransport(std::shared_ptr<State> world, int rank)
      : endpoint_(std::make_shared<Endpoint>(Endpoint{std::move(world), rank})), control_(endpoint_) {
    const int size = endpoint_->size();
    const int local_size = endpoint_->world->options.local_size;
    topology_ = {rank, size, rank, size, 0, 1};
    if (local_size > 0) {
      const ops::NodeLayout layout = ops::forced_node_layout(rank, size, local_size);
      topology_ = {rank, size, layout.local_rank, layout.local_size, layout.cross_rank, layout.cross_size,
                   size % local_size == 0};
    }
  }

  const Topology& topology() const override { return topology_; }
  ops::ControlChannel& control() override { return control_; }

  std::unique_ptr<ops::Backend> make_host_backend(const DataOptions& options) override {
    auto flat = std::make_unique<InProcessBackend>(endpoint_);
    if (!options.hierarchical.any()) return flat;
    // The node's ranks, and the ranks with this local rank: sets made collectively, every
    // rank making every set in the same order.
    const Topology& t = topology_;
    std::unique_ptr<Transport> local, cross;
    for (int node = 0; node < t.cross_size; ++node) {
      std::vector<int> ranks(static_cast<std::size_t>(t.local_size));
      std::iota(ranks.begin(), ranks.end(), node * t.local_size);
      if (auto set = subset(ranks)) local = std::move(set);
    }
    for (int local_rank = 0; local_rank < t.local_size; ++local_rank) {
      std::vector<int> ranks;
      for (int node = 0; node < t.cross_size; ++node) ranks.push_back(node * t.local_size + local_rank);
      if (auto set = subset(ranks)) cross = std::move(set);
    }
    const DataOptions flat_options{options.allreduce_chunk_bytes, {}};
    if (!host_scratch_) host_scratch_ = ops::make_cpu_ops();
    ops::HierarchicalParts h;
    h.local = local->make_host_backend(flat_options);
    h.cross = cross->make_host_backend(flat_options);
    h.flat = std::move(flat);
    h.memory = host_scratch_.get();
    h.placement = {t.rank, t.local_rank, t.local_size, {}};
    for (int r = 0; r < t.size; ++r) h.placement.node_of_rank.push_back(r / t.local_size);
    h.routes = options.hierarchical;
    return ops::make_hierarchical_backend(std::move(h));
  }

  std::unique_ptr<ops::GpuParts> make_gpu_parts(bool host_stand_in, const DataOptions&) override {
    KOLO_CHECK(!host_stand_in, StatusCode::Unsupported,
               "kolo: KOLO_TEST_HOST_GPU needs the MPI transport: the in-process transport has no GPU path");
    return ops::make_cuda_parts();
  }

  ops::GpuPath make_gpu_path(ops::GpuParts&, int, ops::GpuOperations, const DataOptions&) override {
    throw Error(StatusCode::Unsupported,
                "kolo: the in-process transport has no GPU path: GPU tensors need the MPI transport");
  }

  std::unique_ptr<Transport> subset(std::span<const int> ranks) override {
    check_subset(ranks, endpoint_->size());
    const std::shared_ptr<State>& world = endpoint_->world;
    auto round = endpoint_->meet(InProcessCall::Subset, list(ranks), std::string(), [&](Round& r) {
      r.made = std::make_shared<State>(static_cast<int>(ranks.size()), world->clock,
                                       InProcessOptions{world->options.timeout, 0});
      world->subsets.push_back({r.made, std::vector<int>(ranks.begin(), ranks.end())});  // under the world's lock
    });
    const auto at = std::find(ranks.begin(), ranks.end(), endpoint_->rank);
    if (at == ranks.end()) return nullptr;
    return std::make_unique<InProcessTransport>(round->made, static_cast<int>(at - ranks.begin()));
  }

  bool pending_after_failure() const override { return false; }

  std::vector<int> roll_call(std::chrono::milliseconds bound) override {
    State& w = *endpoint_->world;
    std::unique_lock<std::mutex> lock(w.mutex);
    const auto me = static_cast<std::size_t>(endpoint_->rank);
    const int64_t question = ++w.questions;
    if (!w.stopped[me]) w.answered[me] = question;  // a hung rank asks, but answers nothing
    w.cv.notify_all();  // ranks asking at the same time answer this question while they wait
    const auto all_answered = [&] {
      if (!w.stopped[me] && w.answered[me] != w.questions) {  // answers the others' questions meanwhile
        w.answered[me] = w.questions;
        w.cv.notify_all();
      }
      return std::all_of(w.answered.begin(), w.answered.end(), [&](int64_t a) { return a >= question; });
    };
    ops::wait_until(w.clock, w.cv, lock, w.clock.now() + bound, all_answered);
    std::vector<int> silent;
    for (int r = 0; r < w.size; ++r)
      if (w.answered[static_cast<std::size_t>(r)] < question) silent.push_back(r);
    return silent;
  }

  void answer_roll_call() override {
    State& w = *endpoint_->world;
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      const auto me = static_cast<std::size_t>(endpoint_->rank);
      if (w.stopped[me] || w.answered[me] == w.questions) return;  // a hung rank answers nothing
      w.answered[me] = w.questions;
    }
    w.cv.notify_all();
  }

  void end_job(int) override {
    State& w = *endpoint_->world;
    std::lock_guard<std::mutex> lock(w.mutex);
    if (w.stopped[static_cast<std::size_t>(endpoint_->rank)]) return;  // a hung rank ends nothing
    if (!w.ended_by) w.ended_by = endpoint_->rank;
  }

 private:
  std::shared_ptr<Endpoint> endpoint_;
  InProcessControl control_;
  Topology topology_;
  std::unique_ptr<ops::DeviceOps> host_scratch_;  // the hierarchical collectives' buffers
};

}  // namespace

InProcessWorld::InProcessWorld(int size, const Clock& clock, InProcessOptions options) {
  if (size < 1)
    throw Error(StatusCode::InvalidArgument, "kolo: an in-process world needs at least one rank, not " +
                                                 std::to_string(size));
  if (options.local_size > 0) (void)ops::forced_node_layout(0, size, options.local_size);  // throws if it does not divide
  state_ = std::make_shared<State>(size, clock, options);
}

int InProcessWorld::size() const { return state_->size; }

std::unique_ptr<Transport> InProcessWorld::transport(int rank) {
  if (rank < 0 || rank >= state_->size)
    throw Error(StatusCode::InvalidArgument, "kolo: rank " + std::to_string(rank) + " is not in an in-process world of " +
                                                 std::to_string(state_->size) + " ranks");
  return std::make_unique<InProcessTransport>(state_, rank);
}

void InProcessWorld::stop_taking_part(int rank) { state_->stop(rank); }

void InProcessWorld::stop_taking_part_at(int rank, InProcessCall call) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->stop_at[rank] = call;
}

void InProcessWorld::damage_messages(MessageDamage damage) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->damage = std::move(damage);
}

std::optional<int> InProcessWorld::ended_by() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->ended_by;
}

int64_t InProcessWorld::completed(int rank, InProcessCall call) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed.at(static_cast<std::size_t>(rank))[static_cast<std::size_t>(call)];
}

}  // namespace kolo
