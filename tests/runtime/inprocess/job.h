// A job whose ranks are threads of this process: an InProcessWorld, one ProcessSets (the
// global set's Runtime and its process sets') per rank over its in-process transport, and a ManualClock for kolo's time. run() runs a scenario
// (scenarios/peer.h) on one thread per rank, each bound to its rank's runtime, so that the
// public API reaches that rank.
//
// Time. Simulated time passes only while every rank's scenario thread is waiting in a Peer
// call (for a handle, join, sync, sleep) or has finished: then a keeper thread advances the
// clock by `step` every `tick` of real time. A rank that is still submitting therefore never
// sees time pass under it (no partial-slot timeout, no stall, no idle cycle fires because a
// thread was slow), and a wait of simulated minutes (a stall, a control timeout) takes a
// fraction of that in real time. Checks made on the rank threads are collected and reported
// to Catch on the thread that called run().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/inprocess_transport.h"
#include "runtime/process_sets.h"
#include "scenarios/peer.h"

namespace kolo_inprocess {

struct JobOptions {
  int size = 2;
  kolo::Config config;  // every rank's, unless `adjust` changes it
  // Each rank's settings as its "environment" gives them (rank 0's shared ones win).
  std::function<void(int rank, kolo::Config& config)> adjust;
  int local_size = 0;  // > 0: a forced node layout (InProcessOptions::local_size)
  std::vector<std::vector<int>> process_sets;  // static process sets, as kolo::init() takes them
  std::chrono::microseconds step{1000};  // simulated time per tick, while everyone waits
  std::chrono::microseconds tick{100};   // real time between steps
};

// The settings in-process scenarios run with: kolo's defaults, with stall times and a
// control timeout short enough to reach in simulated time.
kolo::Config scenario_config();

class Job {
 public:
  explicit Job(JobOptions options);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Runs `body` on every rank (constructing and shutting down the runtimes around it) and
  // reports every failed check to Catch. Returns the number of checks made on all ranks.
  int64_t run(const std::function<void(kolo_scenarios::Peer&)>& body);

  kolo::ManualClock& clock() { return clock_; }
  kolo::InProcessWorld& world() { return world_; }

 private:
  class Peer;
  friend class Peer;

  void keep_time();
  void record_failure(std::string failure);
  void start_capture();
  std::string end_capture();
  void sync(int rank);

  JobOptions options_;
  kolo::ManualClock clock_;
  kolo::InProcessWorld world_;

  std::atomic<int> waiting_{0};  // scenario threads in a Peer wait, or finished
  std::atomic<bool> stop_{false};
  std::thread keeper_;

  std::mutex mutex_;  // guards everything below
  std::vector<std::string> failures_;
  int64_t checks_ = 0;
  std::string log_;
  std::condition_variable sync_cv_;
  int sync_arrived_ = 0;
  uint64_t sync_generation_ = 0;
};

}  // namespace kolo_inprocess
