// DistributedOptimizer's node-shared update (DistributedOptions::node_shared_update;
// private to models/distributed). The ranks of one node keep one copy of the parameters
// and of the optimizer's state, and each rank's gradients, in memory they all map. After
// backward each rank averages its 1/p share of the gradients where the other ranks wrote
// them and updates that share of the parameters; a barrier then lets the next forward pass
// read them. No gradient byte is copied between processes, and each rank updates 1/p of
// the parameters instead of all of them: an allreduce + update costs about twice a
// one-rank job's update, this about one (docs/perf.md, "What bounds the ceiling target").
// The average is made block by block just before the optimizer updates each block
// (Optimizer::set_before_update), so the optimizer reads it from cache instead of memory.
//
// The barriers are allreduces of one float through the runtime, so a dead or hung rank
// ends a step with the runtime's error, never a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kolo/models.h"

namespace kolo::models::distributed_detail {

class NodeSharedUpdate {
 public:
  // Collective: every rank calls it. Moves the optimizer's parameters (rank 0's values:
  // the mode serves one-node jobs only, where rank 0 is local rank 0) and gradients into a
  // segment the node's ranks share. Returns null on every
  // rank, with *why set, where the mode cannot serve this job: more than one node, a GPU,
  // an option it does not implement, an optimizer without set_update_range, shared memory
  // that cannot be had; *why is then what this rank should print (empty: nothing, another
  // rank says it). Throws kolo::Error if the ranks differ in their parameters' names or
  // sizes, their optimizer or its kinds of state, or the op or predivide factor.
  static std::unique_ptr<NodeSharedUpdate> create(Optimizer& optimizer, const DistributedOptions& options,
                                                  std::string* why);
  // Gives the parameters, gradients and state private copies again (their values kept).
  ~NodeSharedUpdate();
  NodeSharedUpdate(const NodeSharedUpdate&) = delete;
  NodeSharedUpdate& operator=(const NodeSharedUpdate&) = delete;

  // One optimizer step: waits for every rank's gradients, averages this rank's share (unless
  // average_everywhere() already has), updates that share, waits for every rank's update.
  void step(bool averaged);
  // What synchronize() needs: the average in every rank's gradients.
  void average_everywhere();

 private:
  NodeSharedUpdate(Optimizer& optimizer, const DistributedOptions& options);
  // The points at which every rank waits for the others (their values are what a rank
  // sends, so that ranks at different points can tell).
  enum class Barrier { CopiedParameters = 1, Gradients = 2, AveragedGradients = 3, UpdatedParameters = 4 };
  void barrier(Barrier at);
  static std::string barrier_name(Barrier at);
  // The gradients' average over elements [begin, end) of the parameters taken end to end,
  // into this rank's gradients or every rank's.
  void average(int64_t begin, int64_t end, bool into_every_rank);
  void check_in_place() const;
  void adopt_state();
  std::pair<int64_t, int64_t> share_of(std::size_t i) const;  // [from, to) of parameter i in this rank's share
  float* param_at(std::size_t i) const;
  float* grad_at(int rank, std::size_t i) const;
  float* state_at(std::size_t kind, std::size_t i) const;

  Optimizer& optimizer_;
  DistributedOptions options_;
  std::vector<Parameter*> params_;
  int ranks_ = 0, rank_ = 0;
  std::vector<int64_t> offset_;    // of each parameter within a region of the segment
  std::vector<int64_t> start_;     // of each parameter among the parameters taken end to end
  int64_t region_ = 0;             // floats per region: parameters, each state kind, each rank's gradients
  std::size_t state_kinds_ = 0;
  int64_t share_begin_ = 0, share_end_ = 0;  // this rank's elements, the parameters taken end to end
  bool average_in_update_ = false;            // step() has the optimizer's hook average each block
  int64_t averaged_in_update_ = 0;            // elements the hook averaged in this step
  bool installed_ = false;                    // create() set the optimizer's range and hook
  bool stepping_ = false;                     // inside step(): the only place the hook may run
  std::shared_ptr<float> segment_;
};

}  // namespace kolo::models::distributed_detail
