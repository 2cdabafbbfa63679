// sim/simulator.cc: the discrete-event run of one epoch (simulator.h). Time is a double in
// seconds from the start of training. Ranks are not threads: each is its step's start time
// and compute factor, and, since every rank submits the step's gradients in the same
// order, what a rank has submitted by time t is a prefix of that order (binary search).
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "runtime/autotuner.h"
#include "runtime/coordinator.h"
#include "runtime/cycle_decisions.h"
#include "runtime/fusion.h"
#include "runtime/response_cache.h"
#include "sim/collective_cost.h"

namespace kolo::sim {

// Ranks beyond a node's devices share them (this machine's CPU cores): each computes that
// many times slower, and so does its CPU's part of every message (below).
double device_sharing(const Hardware& cluster) {
  return std::max(1.0, double(cluster.ranks_per_node) / cluster.devices_per_node);
}

std::vector<double> shared_device_finish(const std::vector<double>& work, int devices) {
  devices = std::max(1, devices);
  const double sharing = std::max(1.0, double(work.size()) / devices);
  std::vector<std::size_t> order(work.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return work[a] < work[b]; });
  // Every rank still computing has done the same work so far (equal shares): `done`.
  std::vector<double> finish(work.size());
  double t = 0, done = 0;
  std::size_t computing = work.size();
  for (std::size_t i : order) {
    const double rate = std::min(1.0, double(devices) / double(computing));
    t += (work[i] - done) / rate;
    done = work[i];
    finish[i] = t / sharing;
    --computing;
  }
  return finish;
}

double busy_node_slowdown(const Hardware& cluster) {
  const bool all_busy = cluster.ranks() > 1 && cluster.ranks_per_node >= cluster.devices_per_node;
  return all_busy ? cluster.compute_slowdown_when_busy : 1.0;
}

// The links as ranks that share their devices see them: a message's latency and a
// shared-memory copy are work of the sharing ranks' CPUs, slowed as they are; a wire
// between nodes moves its bytes at its own rate however busy the CPUs are.
Hardware as_seen_by_sharing_ranks(Hardware cluster) {
  const double sharing = device_sharing(cluster);
  cluster.intra_node.alpha_s *= sharing;
  cluster.intra_node.beta_s_per_byte *= sharing;
  cluster.inter_node.alpha_s *= sharing;
  return cluster;
}

namespace {

// tensor_queue.cc: a burst under way when the cycle wakes is waited out until no tensor
// came for kQuiet, or for kLongest at most.
constexpr double kQuiet = 20e-6;
constexpr double kLongest = 500e-6;
// What one request and one response weigh on the wire in the slow path (message.cc's
// encoding of a name of a few dozen characters, its shape and parameters).
constexpr double kRequestBytes = 96;
constexpr double kResponseBytes = 96;

// The link the negotiation's small messages take, on the links as the sharing ranks see
// them (as_seen_by_sharing_ranks).
LinkCost cluster_link(const Hardware& seen) { return link_cost(seen.nodes > 1 ? seen.inter_node : seen.intra_node); }

// allreduce_seconds on the links as the sharing ranks see them, with the backend's piece.
double allreduce_on(double bytes, const Hardware& seen, const KoloSettings& settings, double piece_bytes) {
  const int p = seen.ranks();
  if (p == 1) return 0.0;
  if (settings.fp16) bytes /= 2;
  if (settings.config.hierarchical_allreduce && seen.nodes > 1 && seen.ranks_per_node > 1)
    return hierarchical_allreduce(seen.ranks_per_node, seen.nodes, bytes, link_cost(seen.intra_node),
                                  link_cost(seen.inter_node))
        .total();
  // NCCL picks by size (the cheaper candidate); kolo's MPI backend has one.
  double best = std::numeric_limits<double>::infinity();
  for (const Traffic& candidate : allreduce_candidates(p, bytes, piece_bytes, seen))
    best = std::min(best, candidate.seconds(link_cost(seen.inter_node)));
  return best;
}

class Engine {
 public:
  Engine(const Workload& workload, const Hardware& cluster, const KoloSettings& settings, const Variation& variation,
         const RunOptions& options)
      : w_(workload), hw_(cluster), ks_(settings), var_(variation), opt_(options), p_(cluster.ranks()),
        cache_(settings.config.cache_capacity), coordinator_(p_), rng_(variation.seed),
        fusion_(fusion_options(settings.config.fusion_threshold_bytes, settings.config.allreduce_chunk_bytes, p_)),
        piece_bytes_(allreduce_piece_bytes(settings.config.allreduce_chunk_bytes, p_)) {
    const std::vector<Gradient>& grads = w_.profile.gradients;
    if (grads.empty()) throw std::invalid_argument("the workload has no gradients");
    if (w_.batch_per_rank < 1) throw std::invalid_argument("the batch per rank must be at least 1");
    if (w_.compute_s_per_image <= 0) throw std::invalid_argument("the compute time per image must be positive");
    for (const Gradient& g : grads) {
      Request r;
      r.name = g.name;
      r.op = ReduceOp::Average;
      r.dtype = w_.bytes_per_element == 2 ? DType::Float16 : DType::Float32;
      r.compression = ks_.fp16 ? Compression::FP16 : Compression::None;
      r.shape = Shape({g.elements});
      index_.emplace(g.name, requests_.size());
      requests_.push_back(std::move(r));
      ready_fraction_.push_back(g.ready_fraction);
    }
    if (ks_.config.autotune) autotuner_.emplace(Autotuner::default_candidates(p_), kAutotuneBytesPerTrial);
    const double step = w_.step_compute_s() * device_sharing(hw_) * busy_node_slowdown(hw_);
    forward_s_ = step * w_.forward_share;
    optimizer_s_ = step * w_.optimizer_share;
    backward_s_ = step - forward_s_ - optimizer_s_;
    const int rpn = hw_.ranks_per_node;
    loader_interval_ = w_.loader_cpu_s_per_image > 0
                           ? w_.batch_per_rank * w_.loader_cpu_s_per_image * rpn / hw_.loader_cores_per_node
                           : 0;
    bit_words_ = (static_cast<std::size_t>(std::max(0, ks_.config.cache_capacity)) + 63) / 64;
    control_bytes_ = 2.0 * (2 + bit_words_) * 8;
    rank_free_.assign(p_, 0.0);
    start_.assign(p_, 0.0);
    factor_.assign(p_, 1.0);
    accepted_.assign(p_, 0);
  }

  SimResult run() {
    SimResult result;
    result.ranks = p_;
    result.nodes = hw_.nodes;
    result.steps_per_epoch = w_.steps_per_epoch(p_);
    const int64_t steps = opt_.max_steps > 0 ? std::min(opt_.max_steps, result.steps_per_epoch) : result.steps_per_epoch;
    double end = 0;
    for (int64_t s = 0; s < steps; ++s) end = step(s, result);
    result.steps_simulated = steps;
    const double scale = double(result.steps_per_epoch) / double(steps);
    result.epoch_s = end * scale;
    result.images_per_s = double(result.steps_per_epoch) * w_.batch_per_rank * p_ / result.epoch_s;
    result.allreduce_s_per_step = allreduce_s_ / double(steps);
    result.bytes_per_step = allreduce_bytes_ / double(steps);
    result.negotiation_s_per_step = negotiation_s_ / double(steps);
    result.comm_share = allreduce_s_ / end;
    result.loader_wait_share = loader_wait_s_ / (end * p_);
    if (autotuner_) {
      const TunedSetting& chosen = autotuner_->setting(autotuner_->current());
      result.autotune_choice = std::string(autotuner_->done() ? "" : "(still searching) ") + "fusion threshold " +
                               std::to_string(chosen.fusion_threshold_bytes) + " bytes, pieces of " +
                               std::to_string(chosen.chunk_bytes) + " bytes";
    }
    return result;
  }

 private:
  // ---- a rank's step ----------------------------------------------------------------
  double submit_time(int r, std::size_t k) const {
    return start_[r] + factor_[r] * (forward_s_ + ready_fraction_[k] * backward_s_);
  }
  double backward_end(int r) const { return start_[r] + factor_[r] * (forward_s_ + backward_s_); }
  // How many of the step's gradients rank r has submitted by time t.
  std::size_t submitted_by(int r, double t) const {
    const double x = ((t - start_[r]) / factor_[r] - forward_s_) / backward_s_;
    if (x < 0) return 0;
    return static_cast<std::size_t>(std::upper_bound(ready_fraction_.begin(), ready_fraction_.end(), x) -
                                    ready_fraction_.begin());
  }
  // How many of the step's gradients rank r's background thread has seen by time t. Where a
  // collective may run during compute but the compute holds every core, the thread sees a
  // submission only hw.comm_start_delay_s later, or at the end of backward, when the
  // compute thread waits and frees its core (hardware.h).
  std::size_t seen_by(int r, double t) const {
    const bool starved = hw_.comm_overlaps_compute && hw_.comm_start_delay_s > 0 && t < backward_end(r);
    return submitted_by(r, starved ? t - hw_.comm_start_delay_s : t);
  }
  // When rank r's background thread sees gradient k: seen_by's inverse.
  double seen_time(int r, std::size_t k) const {
    if (!hw_.comm_overlaps_compute) return submit_time(r, k);
    return std::min(submit_time(r, k) + hw_.comm_start_delay_s, backward_end(r));
  }
  // When rank r's cycle, woken at `wake`, takes its queue: after the burst under way.
  double settle(int r, double wake) const {
    std::size_t k = submitted_by(r, wake);
    if (k == 0 || k == ready_fraction_.size() || wake - submit_time(r, k - 1) > kQuiet) return wake;
    double t = wake;
    const double give_up = wake + kLongest;
    while (k < ready_fraction_.size() && submit_time(r, k) - t <= kQuiet && submit_time(r, k) < give_up)
      t = submit_time(r, k++);
    return std::min(give_up, t + kQuiet);
  }

  double compute_factor() {
    double f = 1.0;
    if (var_.jitter > 0) f = std::max(0.2, 1.0 + var_.jitter * normal_(rng_));
    if (var_.straggler_fraction > 0 && uniform_(rng_) < var_.straggler_fraction) f *= var_.straggler_slowdown;
    return f;
  }

  // Ranks that share a node's devices take turns on them (shared_device_finish): each
  // node's draws become when its ranks finish. Their steps start within an optimizer
  // step of each other; the sharing is taken from a common start, and the factor scales
  // the rank's optimizer step too.
  void share_devices() {
    const int rpn = hw_.ranks_per_node;
    std::vector<double> work(rpn);
    for (int first = 0; first < p_; first += rpn) {
      std::copy(factor_.begin() + first, factor_.begin() + first + rpn, work.begin());
      const std::vector<double> finish = shared_device_finish(work, hw_.devices_per_node);
      std::copy(finish.begin(), finish.end(), factor_.begin() + first);
    }
  }

  // ---- one training step of every rank ----------------------------------------------
  double step(int64_t s, SimResult& result) {
    const double batch_ready = loader_interval_ * double(s + 1);
    for (int r = 0; r < p_; ++r) {
      start_[r] = std::max(rank_free_[r], batch_ready);
      loader_wait_s_ += start_[r] - rank_free_[r];
      factor_[r] = compute_factor();
      accepted_[r] = 0;
    }
    if (device_sharing(hw_) > 1) share_devices();
    const std::size_t n = requests_.size();
    // Whether each tensor is negotiated by bit this step: all ranks' caches agree.
    std::vector<bool> cached(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::optional<uint32_t> slot = cache_.find(requests_[k].name);
      cached[k] = slot && cache_.at(*slot) == requests_[k];
    }
    const bool traced = opt_.trace != nullptr && s < opt_.trace_steps;
    const bool recorded = s < kRecordedSteps;
    if (recorded) {
      result.groups_by_step.emplace_back();
      result.named_cycles_by_step.push_back(0);
    }
    std::size_t done = 0;  // the step's tensors that have run: a prefix
    while (done < n) {
      // When each rank enters this cycle, and what it has taken by then.
      double entry_all = 0;
      std::size_t ready = n;
      bool any_news = false, any_named = false;
      for (int r = 0; r < p_; ++r) {
        double entry;
        if (accepted_[r] > done) {
          entry = free_at_;  // work of its own waiting: straight into the next cycle
        } else {
          double wake = std::max(free_at_, last_cycle_start_ + cycle_time_s_);
          // Its caller waiting on a handle (the optimizer's synchronize) wakes it early.
          const double caller = backward_end(r);
          if (caller < wake && submitted_by(r, caller) > accepted_[r]) wake = std::max(free_at_, caller);
          entry = settle(r, wake);
        }
        const std::size_t taken = std::max(accepted_[r], seen_by(r, entry));
        if (taken > accepted_[r]) {
          any_news = true;
          for (std::size_t k = accepted_[r]; k < taken && !any_named; ++k) any_named = !cached[k];
        }
        entry_all = std::max(entry_all, entry);
        ready = std::min(ready, taken);
        entry_[r] = entry;  // unused past this loop unless the slow path needs it
        new_accepted_[r] = taken;
      }
      if (!any_news && ready == done) {
        skip_idle_cycles(entry_all);
        continue;
      }
      last_cycle_start_ = entry_all;
      const double decided = entry_all + control_cost();
      double t = decided;
      ++result.cycles;
      // 1. cached tensors ready everywhere, in slot order, fused.
      // A slot evicted since the step began (a small cache, a put by this step's slow path)
      // no longer carries its tensor: as the runtime's invalidate() does, every rank sends
      // it by name instead.
      std::vector<uint32_t> slots;
      std::vector<std::size_t> evicted;
      for (std::size_t k = done; k < ready; ++k) {
        if (!cached[k]) continue;
        const std::optional<uint32_t> slot = cache_.find(requests_[k].name);
        if (slot && cache_.at(*slot) == requests_[k]) {
          slots.push_back(*slot);
        } else {
          cached[k] = false;
          evicted.push_back(k);
          any_named = true;
        }
      }
      if (!slots.empty()) {
        std::vector<uint64_t> ready_bits(bit_words_, 0);
        for (uint32_t slot : slots) ready_bits[slot / 64] |= uint64_t{1} << (slot % 64);
        for_each_slot(ready_bits, [&](uint32_t slot) { cache_.touch(slot); });
        result.cached_tensors += static_cast<int64_t>(slots.size());
        t = run_responses(plan_cached(cache_, ready_bits, fusion_, /*named=*/true), t, traced, recorded, result);
      }
      // 2. the slow path: every rank's new names to the coordinator, its answer to all.
      if (any_named) {
        int64_t names = 0;
        for (int r = 0; r < p_; ++r) {
          RequestList list;
          for (std::size_t k = accepted_[r]; k < new_accepted_[r]; ++k)
            if (!cached[k] && !std::binary_search(evicted.begin(), evicted.end(), k)) list.requests.push_back(requests_[k]);
          for (std::size_t k : evicted) list.requests.push_back(requests_[k]);
          names += static_cast<int64_t>(list.requests.size());
          if (!list.requests.empty()) coordinator_.add(r, list, as_time_point(entry_[r]));
        }
        std::vector<Response> responses = coordinator_.take_ready();
        t += slow_path_cost(double(names) / p_, double(responses.size()));
        for (const Response& response : responses)
          if (response.kind != Response::Kind::Run)
            throw std::logic_error("kolo's coordinator refused a simulated request: " + response.error_message);
        // Evictions need no answer here: every cycle looks its tensors up in the cache again.
        record_in_cache(cache_, responses, [&](const Response& r, std::size_t i) { return requests_[index_.at(r.names[i])]; });
        FusionPlan plan(fusion_);
        for (Response& response : responses) plan.add(std::move(response));
        result.named_tensors += static_cast<int64_t>(responses.size());
        if (recorded) ++result.named_cycles_by_step.back();
        t = run_responses(plan.take(), t, traced, recorded, result);
      }
      negotiation_s_ += decided - entry_all;
      for (int r = 0; r < p_; ++r) accepted_[r] = new_accepted_[r];
      if (traced) trace_negotiation(done, ready, decided);
      done = ready;
      free_at_ = t;
      if (autotuner_) tune();
    }
    double end = 0;
    for (int r = 0; r < p_; ++r) {
      rank_free_[r] = std::max(free_at_, backward_end(r)) + factor_[r] * optimizer_s_;
      end = std::max(end, rank_free_[r]);
    }
    return end;
  }

  // A cycle that found nothing new anywhere (entered by all at entry_all): so will every
  // cycle until the first submission not yet taken. Jump to the last of them.
  void skip_idle_cycles(double entry_all) {
    double first = std::numeric_limits<double>::infinity();
    for (int r = 0; r < p_; ++r)
      if (accepted_[r] < requests_.size()) first = std::min(first, seen_time(r, accepted_[r]));
    const double before = last_cycle_start_;
    if (cycle_time_s_ <= 0) {
      last_cycle_start_ = std::max(entry_all, first);
    } else {
      const double periods = std::max(0.0, std::floor((first - entry_all) / cycle_time_s_));
      last_cycle_start_ = entry_all + periods * cycle_time_s_;
    }
    if (!(last_cycle_start_ > before)) last_cycle_start_ = before + std::max(cycle_time_s_, kQuiet);
    // Past about 1e13 s a cycle no longer moves a double's time: the run would never end.
    if (!(last_cycle_start_ > before)) {
      char when[32];
      std::snprintf(when, sizeof when, "%.3g", before);
      throw std::runtime_error(std::string("simulated time reached ") + when +
                               " s, where a cycle no longer advances it: is a setting far out of range "
                               "(a link of 1e-300 GB/s, a latency of 1e300 us)?");
    }
    free_at_ = std::max(free_at_, last_cycle_start_);
  }

  double run_responses(const std::vector<Response>& responses, double t, bool traced, bool recorded,
                       SimResult& result) {
    // Where communication cannot overlap compute, a collective starts once every rank's
    // backward is done (its CPU work waits for the compute: hardware.h).
    if (!hw_.comm_overlaps_compute && !responses.empty())
      for (int r = 0; r < p_; ++r) t = std::max(t, backward_end(r));
    for (const Response& r : responses) {
      const double bytes = double(response_bytes(r));
      const double took = collective_seconds(bytes, t);
      if (recorded) result.groups_by_step.back().push_back(r.names);
      if (traced) trace_response(r, bytes, t, t + took);
      allreduce_s_ += took;
      allreduce_bytes_ += bytes;
      cycle_bytes_ += int64_t(bytes);
      cycle_seconds_ += took;
      t += took;
      ++result.responses;
    }
    return t;
  }

  // An allreduce of `bytes` starting at t. Across nodes behind a token bucket (a shaper),
  // the bytes the bucket holds go at the link's own speed and the rest at the shaped rate;
  // the bucket refills at that rate while the link is idle.
  double collective_seconds(double bytes, double t) {
    const Link& inter = hw_.inter_node;
    const double piece = double(piece_bytes_);  // the backend's piece, as tuned
    if (inter.burst_bytes <= 0 || hw_.nodes == 1 || ks_.config.hierarchical_allreduce)
      return allreduce_on(bytes, seen_, ks_, piece);
    if (ks_.fp16) bytes /= 2;
    const LinkCost shaped = link_cost(seen_.inter_node);
    tokens_ = std::min(inter.burst_bytes, tokens_ + std::max(0.0, t - link_idle_since_) / shaped.beta);
    double best = std::numeric_limits<double>::infinity(), spent = 0;
    for (const Traffic& candidate : allreduce_candidates(p_, bytes, piece, seen_)) {
      // Of the bytes a node's link carries, the bucket's go at the unshaped speed.
      const double burst = std::min(candidate.cross_bytes, tokens_);
      const double seconds = candidate.seconds(shaped) - burst * (shaped.beta - inter.unshaped_beta_s_per_byte);
      if (seconds < best) best = seconds, spent = burst;
    }
    tokens_ -= spent;
    link_idle_since_ = t + best;
    return best;
  }

  void tune() {
    autotuner_->record(cycle_bytes_, cycle_seconds_);
    const TunedSetting& setting = autotuner_->setting(autotuner_->current());
    fusion_ = fusion_options(setting.fusion_threshold_bytes, setting.chunk_bytes, p_);
    piece_bytes_ = setting.chunk_bytes;
    cycle_bytes_ = 0;
    cycle_seconds_ = 0;
  }

  // The cycle's AND-allreduce of [flags | setting | bits] and their complements.
  double control_cost() const {
    return p_ > 1 ? recursive_doubling_allreduce(p_, control_bytes_, cluster_link(seen_)) : 0.0;
  }
  // Requests gathered at rank 0 along a binomial tree, responses broadcast back.
  double slow_path_cost(double names_per_rank, double responses) const {
    if (p_ == 1) return 0.0;
    const LinkCost link = cluster_link(seen_);
    const double steps = std::ceil(std::log2(double(p_)));
    const double gather = steps * link.alpha + (p_ - 1) * names_per_rank * kRequestBytes * link.beta;
    return gather + binomial_broadcast(p_, responses * kResponseBytes, link);
  }

  // ---- rank 0's timeline ------------------------------------------------------------
  Timeline::Clock::time_point as_time_point(double seconds) const {
    return Timeline::Clock::time_point() +
           std::chrono::duration_cast<Timeline::Clock::duration>(std::chrono::duration<double>(seconds));
  }
  void trace_negotiation(std::size_t from, std::size_t to, double decided) {
    for (std::size_t k = from; k < to; ++k)
      opt_.trace->phase(0, requests_[k].name, "NEGOTIATE_ALLREDUCE", as_time_point(submit_time(0, k)), as_time_point(decided));
  }
  void trace_response(const Response& r, double bytes, double start, double end) {
    const bool fused = r.names.size() > 1;
    const std::string group = fused ? "\"fused_group\":" + std::to_string(next_group_id_) +
                                          ",\"fused_tensors\":" + std::to_string(r.names.size()) + ","
                                    : "";
    for (std::size_t i = 0; i < r.names.size(); ++i)
      opt_.trace->phase(0, r.names[i], "ALLREDUCE", as_time_point(start), as_time_point(end),
                        group + "\"bytes\":" + std::to_string(r.element_counts[i] * int64_t(dtype_size(r.dtype))));
    if (fused) opt_.trace->fused_group(0, next_group_id_, r.names, int64_t(bytes), as_time_point(start), as_time_point(end));
    ++next_group_id_;
  }

  static constexpr int64_t kRecordedSteps = 8;

  const Workload& w_;
  const Hardware& hw_;
  const Hardware seen_ = as_seen_by_sharing_ranks(hw_);  // the links as the sharing ranks see them
  const KoloSettings ks_;
  const double cycle_time_s_ = ks_.config.cycle_time_ms * 1e-3;
  const Variation var_;
  const RunOptions opt_;
  const int p_;
  std::vector<Request> requests_;  // every rank's, in submission order
  std::unordered_map<std::string, std::size_t> index_;  // by name
  std::vector<double> ready_fraction_;
  ResponseCache cache_;
  Coordinator coordinator_;
  std::optional<Autotuner> autotuner_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_;
  std::uniform_real_distribution<double> uniform_;
  FusionOptions fusion_;
  int64_t piece_bytes_;  // the backend's pipeline piece
  double forward_s_ = 0, backward_s_ = 0, optimizer_s_ = 0, loader_interval_ = 0, control_bytes_ = 0;
  std::size_t bit_words_ = 0;  // of the cycle's ready bits: one per cache slot

  // Per rank, this step.
  std::vector<double> rank_free_, start_, factor_;
  std::vector<std::size_t> accepted_;
  std::vector<double> entry_ = std::vector<double>(p_);
  std::vector<std::size_t> new_accepted_ = std::vector<std::size_t>(p_);

  // The background threads, in lockstep.
  double last_cycle_start_ = -1.0;
  double free_at_ = 0;
  int64_t next_group_id_ = 0;
  int64_t cycle_bytes_ = 0;
  double cycle_seconds_ = 0;

  double allreduce_s_ = 0, allreduce_bytes_ = 0, negotiation_s_ = 0, loader_wait_s_ = 0;
  // The inter-node link's token bucket (Link::burst_bytes): full at the start.
  double tokens_ = hw_.inter_node.burst_bytes, link_idle_since_ = 0;
};

}  // namespace

double allreduce_seconds(double bytes, const Hardware& cluster, const KoloSettings& settings, double piece_bytes) {
  if (piece_bytes <= 0) piece_bytes = double(allreduce_piece_bytes(settings.config.allreduce_chunk_bytes, cluster.ranks()));
  return allreduce_on(bytes, as_seen_by_sharing_ranks(cluster), settings, piece_bytes);
}

SimResult simulate(const Workload& workload, const Hardware& cluster, const KoloSettings& settings,
                   const Variation& variation, const RunOptions& options) {
  if (cluster.ranks() < 1) throw std::invalid_argument("the cluster has no ranks");
  return Engine(workload, cluster, settings, variation, options).run();
}

}  // namespace kolo::sim
