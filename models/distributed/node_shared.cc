#include "models/distributed/node_shared.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <random>

#include "models/distributed/agreement.h"

namespace kolo::models::distributed_detail {
namespace {

constexpr int64_t kAlign = 16;  // floats: each parameter starts on a cache line

int64_t aligned(int64_t floats) { return (floats + kAlign - 1) / kAlign * kAlign; }

// What this rank can tell alone: empty if the mode can serve it.
std::string reason_not_to_share(Optimizer& optimizer, const DistributedOptions& options) {
  if (local_size() != size()) return "the job spans more than one node (it shares memory within one node only)";
  if (options.op != ReduceOp::Average && options.op != ReduceOp::Sum)
    return std::string("op ") + op_name(options.op) + " (it averages or sums only)";
  if (options.compression != Compression::None) return "float16 compression (nothing travels to compress)";
  if (!optimizer.can_update_a_range()) return "optimizer " + optimizer.name() + " cannot update a range of its parameters";
  int64_t elements = 0;
  for (const Parameter* p : optimizer.parameters()) elements += p->value.numel();
  if (elements == 0) return "the optimizer has no parameter values to share";
  for (const Parameter* p : optimizer.parameters())
    if (!p->value.device().is_cpu() || !p->grad.device().is_cpu())
      return "parameter " + p->name + " is on a GPU (it shares host memory only)";
  return "";
}

// Whether `ok` holds on every rank (a collective). Where not, *why is what this rank
// should print: rank 0's reason or the ranks that failed on rank 0; another rank's own
// reason where rank 0 had none; empty otherwise.
bool on_every_rank(bool ok, const std::string& reason, const std::string& name, std::string* why) {
  std::vector<int64_t> mine{ok ? 1 : 0};
  const Handle h = allgather_async(name, view(mine));
  const Status s = h.wait();
  if (!s.ok()) throw Error(s.code(), "kolo: DistributedOptimizer: " + name + ": " + s.message());
  const auto* all = static_cast<const int64_t*>(h.output().data);
  std::vector<int> failed;
  for (int r = 0; r < size(); ++r)
    if (all[r] == 0) failed.push_back(r);
  if (failed.empty()) return true;
  // Rank 0 speaks for all; another rank only where its reason is not rank 0's.
  if (rank() == 0) *why = ok ? "rank " + rank_list(failed) + " could not (see its message)" : reason;
  else if (!ok && all[0] == 1) *why = reason;
  return false;
}

// POSIX shared memory of `bytes`, mapped; created (and its pages reserved, so that a full
// /dev/shm fails here rather than with SIGBUS later) or opened by name.
// A made segment's name is removed on every failure here; on success create() removes it
// once every rank has mapped it. An opened segment must have the size this rank computed
// (ranks whose optimizers keep different state would compute different sizes).
std::shared_ptr<float> map_segment(const std::string& name, std::size_t bytes, bool create, std::string* error) {
  const int fd = create ? shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    *error = "shm_open(" + name + "): " + std::strerror(errno);
    return nullptr;
  }
  const auto fail = [&](const std::string& what) {
    *error = what;
    close(fd);
    if (create) shm_unlink(name.c_str());
    return nullptr;
  };
  if (create) {
    const int e = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (e != 0) return fail("reserving " + std::to_string(bytes) + " bytes of shared memory (/dev/shm): " + std::strerror(e));
  } else {
    struct stat st {};
    if (fstat(fd, &st) != 0) return fail("fstat of " + name + ": " + std::strerror(errno));
    if (static_cast<std::size_t>(st.st_size) != bytes)
      return fail("rank 0 made the shared segment " + std::to_string(st.st_size) + " bytes, this rank needs " +
                  std::to_string(bytes));
  }
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return fail("mmap of " + name + ": " + std::strerror(errno));
  close(fd);
  return std::shared_ptr<float>(static_cast<float*>(address), [bytes](float* p) { munmap(p, bytes); });
}

// Removes a shared-memory name now or when it goes out of scope, once (an empty name:
// nothing).
struct Unlink {
  std::string name;
  void now() {
    if (!name.empty()) shm_unlink(name.c_str());
    name.clear();
  }
  ~Unlink() { now(); }
};

}  // namespace

NodeSharedUpdate::NodeSharedUpdate(Optimizer& optimizer, const DistributedOptions& options)
    : optimizer_(optimizer), options_(options), params_(optimizer.parameters()), ranks_(size()), rank_(rank()) {
  int64_t total = 0;
  for (const Parameter* p : params_) {
    offset_.push_back(region_);
    start_.push_back(total);
    region_ += aligned(p->value.numel());
    total += p->value.numel();
  }
  state_kinds_ = optimizer.state_buffers().size();
  // Shares of the parameters taken end to end, cut at multiples of 16 elements.
  const auto cut = [&](int r) { return r == ranks_ ? total : total * r / ranks_ / kAlign * kAlign; };
  share_begin_ = cut(rank_);
  share_end_ = cut(rank_ + 1);
}

std::unique_ptr<NodeSharedUpdate> NodeSharedUpdate::create(Optimizer& optimizer, const DistributedOptions& options,
                                                           std::string* why) {
  const std::string name = options.name_prefix + "node_shared/";
  // Every rank lays the segment out from its own parameters and optimizer state, and
  // every rank's share is updated with its own optimizer and averaged with its own options:
  // all must agree, or a rank would read another's gradients as state (or past the end).
  Fingerprint layout;
  for (const Parameter* p : optimizer.parameters()) {
    layout.add(p->name);
    layout.add(p->value.numel());
  }
  layout.add(optimizer.name());
  layout.add(static_cast<int64_t>(optimizer.state_buffers().size()));
  layout.add(static_cast<int64_t>(options.op));
  layout.add(&options.gradient_predivide_factor, sizeof options.gradient_predivide_factor);
  const std::vector<int> differing = ranks_differing_from_root(layout.value(), 0, name + "layout");
  if (!differing.empty())
    throw Error(StatusCode::InvalidArgument,
                "kolo: DistributedOptimizer: rank " + rank_list(differing) +
                    " differs from rank 0 in its parameters' names or sizes, its optimizer or its kinds of state, or "
                    "the op or predivide factor; node_shared_update needs the same on every rank");
  const std::string reason = reason_not_to_share(optimizer, options);
  if (!on_every_rank(reason.empty(), reason, name + "can_share", why)) return nullptr;

  std::unique_ptr<NodeSharedUpdate> shared(new NodeSharedUpdate(optimizer, options));
  NodeSharedUpdate& s = *shared;
  const std::size_t bytes = static_cast<std::size_t>(s.region_) * (1 + s.state_kinds_ + s.ranks_) * sizeof(float);
  // Rank 0 creates the segment and names it; the others open it; it is unlinked once every
  // rank has it mapped (or the making failed), so that nothing is left in /dev/shm even if
  // a rank crashes later.
  // The name: rank 0's process id, a serial number for the optimizers it wraps, and a random
  // number, since process ids repeat across containers that share /dev/shm.
  static std::atomic<int64_t> serial{0};
  std::vector<int64_t> id{0, getpid(), serial++, static_cast<int64_t>(std::random_device{}())};
  std::string error;
  const auto segment_name = [&] {
    return "/kolo-" + std::to_string(id[1]) + "-" + std::to_string(id[2]) + "-" + std::to_string(id[3]);
  };
  if (s.rank_ == 0) {
    s.segment_ = map_segment(segment_name(), bytes, /*create=*/true, &error);
    id[0] = s.segment_ != nullptr;
  }
  // Unlinked once every rank has mapped it (below), or when a collective before that throws.
  Unlink unlink{s.rank_ == 0 && id[0] == 1 ? segment_name() : ""};
  const Status named = broadcast_async(name + "segment", view(id), 0).wait();
  if (!named.ok()) throw Error(named.code(), "kolo: DistributedOptimizer: " + name + "segment: " + named.message());
  if (s.rank_ != 0 && id[0] == 1) s.segment_ = map_segment(segment_name(), bytes, /*create=*/false, &error);
  if (s.rank_ != 0 && id[0] == 0) error = "rank 0 could not make the shared segment";
  if (!on_every_rank(s.segment_ != nullptr, error, name + "mapped", why)) return nullptr;
  unlink.now();  // before the barrier below: once a rank is past it, the name is gone

  // Rank 0's parameters become everyone's (the job is one node: rank 0 is local rank 0);
  // each rank's gradients move as they are.
  const auto bytes_of = [](const Tensor& t) { return static_cast<std::size_t>(t.numel()) * sizeof(float); };
  for (std::size_t i = 0; i < s.params_.size(); ++i) {
    const Parameter& p = *s.params_[i];
    if (s.rank_ == 0) std::memcpy(s.param_at(i), p.value.data(), bytes_of(p.value));
    std::memcpy(s.grad_at(s.rank_, i), p.grad.data(), bytes_of(p.grad));
  }
  s.barrier(Barrier::CopiedParameters);
  for (std::size_t i = 0; i < s.params_.size(); ++i) {
    Parameter& p = *s.params_[i];
    p.value = Tensor::adopt(p.value.shape(), std::shared_ptr<float>(s.segment_, s.param_at(i)));
    p.grad = Tensor::adopt(p.grad.shape(), std::shared_ptr<float>(s.segment_, s.grad_at(s.rank_, i)));
  }
  optimizer.set_update_range(s.share_begin_, s.share_end_);
  optimizer.set_before_update([&s](int64_t begin, int64_t end) {
    // Called before any parameter is updated, so a refused step changes no parameter.
    if (!s.stepping_)
      throw Error(StatusCode::InvalidArgument,
                  "kolo: DistributedOptimizer: with node_shared_update, the wrapped optimizer " + s.optimizer_.name() +
                      " updates only this rank's share of the parameters and must be stepped through the "
                      "DistributedOptimizer's step() (which waits for every rank's share), not directly (a "
                      "LossScaler's step(opt.optimizer()) included); use the allreduce (the default) for that");
    if (!s.average_in_update_) return;
    s.average(begin, end, /*into_every_rank=*/false);
    s.averaged_in_update_ += end - begin;
  });
  s.installed_ = true;
  return shared;
}

NodeSharedUpdate::~NodeSharedUpdate() {
  if (installed_) {
    optimizer_.set_update_range(0, INT64_MAX);
    optimizer_.set_before_update(nullptr);
  }
  if (segment_ == nullptr) return;  // create() gave up before mapping it
  const float* begin = segment_.get();
  const float* end = begin + region_ * static_cast<int64_t>(1 + state_kinds_ + ranks_);
  const auto privatise = [&](Tensor& t) {
    const std::less<const float*> before;  // a total order, for pointers into different objects too
    if (!before(t.data(), begin) && before(t.data(), end)) t = t.clone();
  };
  for (Parameter* p : params_) {
    privatise(p->value);
    privatise(p->grad);
  }
  for (std::vector<Tensor>* buffers : optimizer_.state_buffers())
    for (Tensor& t : *buffers) privatise(t);
}

std::pair<int64_t, int64_t> NodeSharedUpdate::share_of(std::size_t i) const {
  const int64_t n = params_[i]->value.numel();
  return {std::clamp(share_begin_ - start_[i], int64_t{0}, n), std::clamp(share_end_ - start_[i], int64_t{0}, n)};
}

float* NodeSharedUpdate::param_at(std::size_t i) const { return segment_.get() + offset_[i]; }
float* NodeSharedUpdate::state_at(std::size_t kind, std::size_t i) const {
  return segment_.get() + region_ * static_cast<int64_t>(1 + kind) + offset_[i];
}
float* NodeSharedUpdate::grad_at(int rank, std::size_t i) const {
  return segment_.get() + region_ * static_cast<int64_t>(1 + state_kinds_ + rank) + offset_[i];
}

// Every barrier has one name, and each rank says which one it is at: ranks at different
// barriers (some called synchronize() before step(), others did not) meet in the same
// collective and fail at once with a message, instead of each waiting at its own until the
// runtime's stall timeout.
void NodeSharedUpdate::barrier(Barrier at) {
  // The fences order this rank's writes to the segment before its arrival, and the other
  // ranks' writes before what follows (x86 keeps stores in order anyway).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Min over [at, -at]: the lowest and (negated) the highest barrier any rank is at. A rank
  // that has joined (kolo::join) contributes zeros.
  float at_and_minus[2] = {float(at), -float(at)};
  const Status s = allreduce_async(options_.name_prefix + "node_shared/barrier",
                                   TensorView{at_and_minus, DType::Float32, {2}}, {.op = ReduceOp::Min})
                       .wait();
  if (!s.ok())
    throw Error(s.code(), "kolo: DistributedOptimizer: waiting for every rank's " + barrier_name(at) + ": " + s.message());
  if (at_and_minus[0] == 0)
    throw Error(StatusCode::InvalidArgument,
                "kolo: DistributedOptimizer: a rank has joined (kolo::join) while others step; node_shared_update "
                "reads every rank's gradients, so every rank must step: use the allreduce (the default) with join");
  if (at_and_minus[0] != -at_and_minus[1])
    throw Error(StatusCode::InvalidArgument,
                "kolo: DistributedOptimizer: the ranks are at different points of a step (one waits for every rank's " +
                    barrier_name(Barrier(int(at_and_minus[0]))) + ", another for every rank's " +
                    barrier_name(Barrier(int(-at_and_minus[1]))) +
                    "): with node_shared_update every rank must call synchronize() before step(), or none");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::string NodeSharedUpdate::barrier_name(Barrier at) {
  switch (at) {
    case Barrier::CopiedParameters: return "copy of the parameters";
    case Barrier::Gradients: return "gradients";
    case Barrier::AveragedGradients: return "averaged gradients";
    case Barrier::UpdatedParameters: return "updated parameters";
  }
  return "barrier " + std::to_string(int(at));
}

void NodeSharedUpdate::check_in_place() const {
  if (size() != ranks_)
    throw Error(StatusCode::InvalidArgument, "kolo: DistributedOptimizer: the job has " + std::to_string(size()) +
                                                 " ranks, its node-shared memory was made for " + std::to_string(ranks_) +
                                                 "; make a new DistributedOptimizer");
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i]->value.data() != param_at(i) || params_[i]->grad.data() != grad_at(rank_, i))
      throw Error(StatusCode::InvalidArgument,
                  "kolo: DistributedOptimizer: parameter " + params_[i]->name +
                      " was replaced or moved since the optimizer was made; with node_shared_update the parameters "
                      "stay in the node's shared memory: move the net first, then make the DistributedOptimizer");
}

// Σ over ranks of the gradients (each times 1/f first, for a predivide factor f), then
// times f/size for an average, dividing where that is exactly 1/size: the runtime's
// arithmetic (runtime/executor.cc), so that the result is the same bits on every rank and,
// at two ranks, the same as the allreduce's.
void NodeSharedUpdate::average(int64_t begin, int64_t end, bool into_every_rank) {
  const double f = options_.gradient_predivide_factor;  // 1 unless op Average
  const float pre = static_cast<float>(1.0 / f), post = static_cast<float>(f / ranks_);
  constexpr int64_t kBlock = 2048;  // a block of sums stays in L1
  float sum[kBlock];
  for (std::size_t i = 0; i < params_.size() && start_[i] < end; ++i) {
    const int64_t n = params_[i]->value.numel();
    const int64_t from = std::clamp(begin - start_[i], int64_t{0}, n), to = std::clamp(end - start_[i], int64_t{0}, n);
    for (int64_t b = from; b < to; b += kBlock) {
      const int64_t m = std::min(kBlock, to - b);
      for (int r = 0; r < ranks_; ++r) {
        const float* g = grad_at(r, i) + b;
        if (f != 1.0)
          for (int64_t k = 0; k < m; ++k) sum[k] = (r == 0 ? 0.0f : sum[k]) + g[k] * pre;
        else if (r == 0) std::memcpy(sum, g, static_cast<std::size_t>(m) * sizeof(float));
        else
          for (int64_t k = 0; k < m; ++k) sum[k] += g[k];
      }
      if (options_.op == ReduceOp::Average && f == 1.0)
        for (int64_t k = 0; k < m; ++k) sum[k] /= static_cast<float>(ranks_);
      else if (options_.op == ReduceOp::Average)
        for (int64_t k = 0; k < m; ++k) sum[k] *= post;
      for (int r = 0; r < ranks_; ++r)
        if (into_every_rank || r == rank_) std::memcpy(grad_at(r, i) + b, sum, static_cast<std::size_t>(m) * sizeof(float));
    }
  }
}

void NodeSharedUpdate::adopt_state() {
  const std::vector<std::vector<Tensor>*> kinds = optimizer_.state_buffers();
  if (kinds.size() != state_kinds_)
    throw Error(StatusCode::Internal, "kolo: DistributedOptimizer: optimizer " + optimizer_.name() + " now has " +
                                          std::to_string(kinds.size()) + " kinds of state, " +
                                          std::to_string(state_kinds_) + " when it was wrapped");
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    std::vector<Tensor>& buffers = *kinds[k];
    if (buffers.empty()) continue;  // no state yet
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const int64_t n = params_[i]->value.numel();
      const auto [from, to] = share_of(i);
      float* shared = state_at(k, i);
      if (buffers[i].data() == shared) continue;
      // Fresh state (the first step, or load_state): this rank's share is current in it.
      if (!buffers[i].device().is_cpu() || buffers[i].numel() != n)
        throw Error(StatusCode::Internal, "kolo: DistributedOptimizer: a state buffer of " + params_[i]->name +
                                              " is not a host tensor of its parameter's size");
      if (from < to)
        std::memcpy(shared + from, buffers[i].data() + from, static_cast<std::size_t>(to - from) * sizeof(float));
      buffers[i] = Tensor::adopt(params_[i]->value.shape(), std::shared_ptr<float>(segment_, shared));
    }
  }
}

void NodeSharedUpdate::step(bool averaged) {
  check_in_place();
  if (!averaged) barrier(Barrier::Gradients);
  // The optimizer's hook (set by create()) averages each block of this rank's share just
  // before the update reads it.
  average_in_update_ = !averaged;
  averaged_in_update_ = 0;
  stepping_ = true;
  try {
    optimizer_.step();
  } catch (...) {
    average_in_update_ = stepping_ = false;
    throw;
  }
  average_in_update_ = stepping_ = false;
  // An optimizer that updated without calling the hook over its share would have used this
  // rank's own gradients: refuse rather than train on them.
  if (!averaged && averaged_in_update_ != share_end_ - share_begin_)
    throw Error(StatusCode::Internal, "kolo: DistributedOptimizer: optimizer " + optimizer_.name() + " averaged " +
                                          std::to_string(averaged_in_update_) + " of its share's " +
                                          std::to_string(share_end_ - share_begin_) +
                                          " gradients through the before-update hook; node_shared_update needs "
                                          "can_update_a_range() optimizers to run their update through "
                                          "for_each_update_block");
  adopt_state();
  barrier(Barrier::UpdatedParameters);
}

void NodeSharedUpdate::average_everywhere() {
  check_in_place();
  barrier(Barrier::Gradients);
  average(share_begin_, share_end_, /*into_every_rank=*/true);
  barrier(Barrier::AveragedGradients);
}

}  // namespace kolo::models::distributed_detail
