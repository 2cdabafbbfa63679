// kolo-sim: predicts a training job's scaling on a cluster it cannot reach, with kolo's own
// negotiation logic in the loop (simulator.h). One row per rank count: epoch time,
// images/s, speedup and efficiency over the first row, the share of time in allreduces.
//
//   kolo-sim --hardware v100_nvlink2_edr --model resnet18 --batch 32 --images 1281167
//            --one-device-epoch-s 3466 --ranks 1,2,4,8,16,32,64
//   kolo-sim fit-link --collective ring_allreduce SAMPLES.csv   (bytes,ranks,seconds lines)
//
// docs/simulator.md explains every flag and the model behind it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/calibration.h"
#include "sim/defaults.h"
#include "sim/simulator.h"

namespace {

using namespace kolo::sim;

std::filesystem::path data_file(const std::string& given, const char* folder) {
  if (given.find('/') != std::string::npos || given.ends_with(".json")) return given;
  return std::filesystem::path(KOLO_SIM_DATA_DIR) / folder / (given + ".json");
}

struct Options {
  std::string hardware = "v100_nvlink2_edr";
  std::string model = "resnet50";
  std::vector<int> ranks;
  int gpus_per_node = 0;
  int batch = 32;
  int64_t images = 1281167;  // ImageNet-1k's training set
  double one_device_epoch_s = 0;
  double one_device_images_per_s = 0;
  double utilization = 0.4;
  double loader_cpu_ms = 0;
  double inter_GBps = 0, inter_latency_us = -1;
  // The runtime's defaults (runtime/config.h), in the flags' units.
  double fusion_mb = double(kolo::Config{}.fusion_threshold_bytes) / (1024 * 1024), cycle_ms = kolo::Config{}.cycle_time_ms;
  int cache_capacity = kolo::Config{}.cache_capacity;
  bool hierarchical = kolo::Config{}.hierarchical_allreduce, fp16 = false, autotune = kolo::Config{}.autotune;
  std::optional<double> jitter;  // unset: the defaults' value, and the band spans its range
  double straggler_fraction = 0, straggler_slowdown = 2;
  uint64_t seed = 1;
  int band_runs = 10;
  std::optional<double> achieved_fraction;  // of the inter-node link's line rate (what-if)
  double link_burst_bytes = 0;
  std::string defaults;
  double until_efficiency = 0;  // > 0: the "how many ranks" mode
  int max_ranks = 4096;
  int64_t max_steps = 0;
  std::string csv, trace;
  int trace_ranks = 0;
};

Hardware cluster_of(Hardware hw, int ranks, int gpus_per_node) {
  if (gpus_per_node > 0) hw.ranks_per_node = gpus_per_node;
  if (ranks <= hw.ranks_per_node) {
    hw.ranks_per_node = ranks;
    hw.nodes = 1;
  } else {
    if (ranks % hw.ranks_per_node != 0)
      throw CLI::ValidationError("--ranks", std::to_string(ranks) + " ranks do not fill nodes of " +
                                                std::to_string(hw.ranks_per_node) + " (--gpus-per-node)");
    hw.nodes = ranks / hw.ranks_per_node;
  }
  return hw;
}

std::string fixed(double x, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
  return buffer;
}

// The cluster, the workload and the settings one kolo-sim command describes.
struct Job {
  Hardware hw;
  Workload workload;
  KoloSettings settings;
};

Job job_of(const Options& o) {
  Job job;
  const Defaults defaults =
      load_defaults(o.defaults.empty() ? data_file("defaults", "") : std::filesystem::path(o.defaults));
  Hardware& hw = job.hw;
  hw = load_hardware(data_file(o.hardware, "hardware"));
  resolve(hw, defaults);
  if (o.inter_GBps > 0) {  // a shaped line rate, its kind's share achieved; the file's rate is then the unshaped one
    hw.inter_node.unshaped_beta_s_per_byte = link_cost(hw.inter_node).beta;
    hw.inter_node.beta_s_per_byte = 1.0 / (o.inter_GBps * 1e9);
    hw.inter_node.achieved_fraction = defaults.achieved(hw.inter_node.kind);
  }
  if (o.achieved_fraction) hw.inter_node.achieved_fraction = *o.achieved_fraction;
  if (o.inter_latency_us >= 0) hw.inter_node.alpha_s = o.inter_latency_us * 1e-6;
  if (o.link_burst_bytes > 0) {
    if (o.inter_GBps <= 0) throw CLI::ValidationError("--link-burst-bytes", "is a shaper's bucket: give the shaped rate, --link-GBps");
    hw.inter_node.burst_bytes = o.link_burst_bytes;
  }
  Workload& w = job.workload;
  w.profile = load_profile(data_file(o.model, "profiles"));
  w.batch_per_rank = o.batch;
  w.images_per_epoch = o.images;
  w.loader_cpu_s_per_image = o.loader_cpu_ms * 1e-3;
  if (o.one_device_epoch_s > 0) w.compute_s_per_image = o.one_device_epoch_s / double(o.images);
  else if (o.one_device_images_per_s > 0) w.compute_s_per_image = 1.0 / o.one_device_images_per_s;
  else if (w.profile.measured_s_per_image > 0) w.compute_s_per_image = w.profile.measured_s_per_image;
  else w.compute_s_per_image = compute_s_per_image_from_flops(w.profile, hw.device_flops, o.utilization);

  KoloSettings& ks = job.settings;
  ks.config.fusion_threshold_bytes = static_cast<int64_t>(o.fusion_mb * 1024 * 1024);
  ks.config.cycle_time_ms = o.cycle_ms;
  ks.config.cache_capacity = o.cache_capacity;
  ks.config.hierarchical_allreduce = o.hierarchical;
  ks.config.autotune = o.autotune;
  ks.fp16 = o.fp16;
  return job;
}

// The variation of run i of a band of n: seeds o.seed, o.seed + 1...; without --jitter,
// jitters spread over the range the cluster's value is known to (half the runs evenly
// below the value, half above: the band's median run has the value itself), so that the
// band covers both the seeds and the uncertainty of the variation term.
// One rank waits for no other: jitter leaves its mean step as it is and would only add
// sampling noise to the row every efficiency is measured against, so it runs without.
Variation variation_of(const Options& o, const Hardware& hw, int ranks, int i, int n) {
  if (ranks == 1) return Variation{0, 0, 1, o.seed};
  const double jitter = o.jitter ? *o.jitter
                                 : spread_over_range(hw.variation.jitter, hw.variation.low, hw.variation.high, i, n);
  return Variation{jitter, o.straggler_fraction, o.straggler_slowdown, o.seed + uint64_t(i)};
}

// The busy node's compute slowdown of each run of a band of n: the same spread over its
// range as the jitter's, in an order shuffled by the seed, so that the band pairs the two
// terms' values at random rather than low with low. Fisher-Yates on mt19937_64, which
// the standard fixes bit for bit (std::shuffle's algorithm is the library's own), so a
// band is the same with any standard library.
std::vector<double> slowdowns_of(const Options& o, const Hardware& hw, int n) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(o.seed);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[random() % i]);
  std::vector<double> slowdowns;
  for (int i : order)
    slowdowns.push_back(
        spread_over_range(hw.compute_slowdown_when_busy, hw.compute_slowdown_low, hw.compute_slowdown_high, i, n));
  return slowdowns;
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double at = q * double(values.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (at - double(lo));
}

// One rank count's runs (a band), and its figures against the base row's runs.
struct Row {
  int ranks = 0;
  std::vector<SimResult> runs;
  std::vector<double> efficiency;  // per run, against the base row's run of the same index
  double median(double SimResult::*field) const {
    std::vector<double> v;
    for (const SimResult& r : runs) v.push_back(r.*field);
    return quantile(v, 0.5);
  }
  double efficiency_at(double q) const { return quantile(efficiency, q); }
};

Row simulate_row(const Options& o, const Job& job, int n, const Row* base, kolo::Timeline* trace) {
  Row row;
  row.ranks = n;
  Hardware cluster = cluster_of(job.hw, n, o.gpus_per_node);
  const int runs = std::max(1, o.band_runs);
  const std::vector<double> slowdowns = slowdowns_of(o, job.hw, runs);
  for (int i = 0; i < runs; ++i) {
    if (n == 1 && i > 0) {  // one rank runs without variation (variation_of): every run is the same
      row.runs.push_back(row.runs.front());
      continue;
    }
    RunOptions options;
    options.max_steps = o.max_steps;
    options.trace = i == 0 ? trace : nullptr;
    cluster.compute_slowdown_when_busy = slowdowns[static_cast<std::size_t>(i)];
    row.runs.push_back(simulate(job.workload, cluster, job.settings, variation_of(o, job.hw, n, i, runs), options));
  }
  for (int i = 0; i < runs; ++i) {
    const double base_rate = base ? base->runs[i].images_per_s : row.runs[i].images_per_s;
    const int base_ranks = base ? base->ranks : n;
    row.efficiency.push_back(row.runs[i].images_per_s / base_rate / (double(n) / base_ranks));
  }
  return row;
}

std::string describe_terms(const Options& o, const Job& job) {
  const Hardware& hw = job.hw;
  std::string text = "variation between ranks: jitter ";
  if (o.jitter) text += fixed(*o.jitter, 3) + " (given)";
  else text += fixed(hw.variation.jitter, 3) + (o.band_runs > 1 ? ", band over " + fixed(hw.variation.low, 3) + "-" + fixed(hw.variation.high, 3) : "");
  text += (o.band_runs > 1 ? " and " + std::to_string(o.band_runs) + " seeds" : "") + std::string("; links at ") +
          fixed(job.hw.intra_node.achieved_fraction, 3) + " (inside a node) and " +
          fixed(job.hw.inter_node.achieved_fraction, 3) + " (between nodes) of their line rates";
  if (!job.hw.comm_overlaps_compute)
    text += "; communication waits for compute (CPU devices" +
            (job.hw.comm_start_delay_s > 0 ? std::string("; the file's start delay is moot then)") : std::string(")"));
  else if (job.hw.comm_start_delay_s > 0)
    text += "; a collective submitted mid-compute starts " + fixed(1e3 * job.hw.comm_start_delay_s, 1) + " ms late";
  if (hw.compute_slowdown_when_busy > 1 || hw.compute_slowdown_low < hw.compute_slowdown_high)
    text += "; compute " + fixed(hw.compute_slowdown_when_busy, 3) + " times slower when every device computes" +
            (o.band_runs > 1 && hw.compute_slowdown_low < hw.compute_slowdown_high
                 ? " (band over " + fixed(hw.compute_slowdown_low, 3) + "-" + fixed(hw.compute_slowdown_high, 3) + ")"
                 : "");
  if (job.hw.inter_node.burst_bytes > 0) text += "; a " + fixed(job.hw.inter_node.burst_bytes, 0) + "-byte burst bucket between nodes";
  return text;
}

int run(const Options& o) {
  const Job job = job_of(o);
  const Hardware& hw = job.hw;
  std::vector<int> ranks = o.ranks;
  if (ranks.empty())
    for (int n = 1; n <= hw.ranks(); n *= 2) ranks.push_back(n);
  for (int n : ranks) cluster_of(hw, n, o.gpus_per_node);  // checked before anything is printed

  std::printf("kolo-sim: %s on %s; batch %d per rank, %lld images per epoch, %.3f ms of compute per image\n",
              job.workload.profile.model.c_str(), hw.name.c_str(), o.batch, static_cast<long long>(o.images),
              job.workload.compute_s_per_image * 1e3);
  std::printf("%s\n", describe_terms(o, job).c_str());
  const bool band = o.band_runs > 1;
  std::printf("| ranks | nodes | epoch (s) | images/s | speedup | efficiency |%s allreduce share | loader wait | cycles/step |\n"
              "|---:|---:|---:|---:|---:|---:|%s---:|---:|---:|\n",
              band ? " efficiency p10-p90 |" : "", band ? "---:|" : "");
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) throw std::runtime_error("cannot write --csv file '" + o.csv + "'");
    csv << "placement,links,ranks,nodes,model,batch,threads,images,epoch_s,images_per_s,fused_bytes_per_step,"
           "allreduce_ms_per_step,comm_share,runs,load,efficiency_p10,efficiency_p90\n";
  }
  std::optional<Row> base;
  std::string autotune_lines;  // after the table, which they would break
  for (int n : ranks) {
    kolo::Timeline timeline;
    const bool traced = !o.trace.empty() && n == (o.trace_ranks > 0 ? o.trace_ranks : ranks.back());
    if (traced) timeline.open(o.trace, 0, kolo::Timeline::Clock::time_point());
    const Row row = simulate_row(o, job, n, base ? &*base : nullptr, traced ? &timeline : nullptr);
    timeline.close();
    if (!base) base = row;
    const SimResult& first = row.runs.front();
    const double rate = row.median(&SimResult::images_per_s), efficiency = row.efficiency_at(0.5);
    const double speedup = efficiency * double(n) / base->ranks;
    const std::string spread = band ? " " + fixed(row.efficiency_at(0.1), 3) + "-" + fixed(row.efficiency_at(0.9), 3) + " |" : "";
    std::printf("| %d | %d | %s | %s | %s | %s |%s %s | %s | %s |\n", n, first.nodes,
                fixed(row.median(&SimResult::epoch_s), 2).c_str(), fixed(rate, 1).c_str(), fixed(speedup, 2).c_str(),
                fixed(efficiency, 3).c_str(), spread.c_str(), fixed(row.median(&SimResult::comm_share), 3).c_str(),
                fixed(row.median(&SimResult::loader_wait_share), 3).c_str(),
                fixed(double(first.cycles) / first.steps_simulated, 1).c_str());
    if (!first.autotune_choice.empty()) autotune_lines += "autotune at " + std::to_string(n) + " ranks: " + first.autotune_choice + "\n";
    if (csv.is_open()) {
      csv << "sim:" << o.hardware << ",-," << n << ',' << first.nodes << ',' << job.workload.profile.model << ','
          << o.batch << ",1," << first.steps_per_epoch * o.batch * n << ',' << row.median(&SimResult::epoch_s) << ','
          << rate << ',' << first.bytes_per_step << ',' << row.median(&SimResult::allreduce_s_per_step) * 1e3 << ','
          << row.median(&SimResult::comm_share) << ',' << row.runs.size() << ",0," << row.efficiency_at(0.1) << ','
          << row.efficiency_at(0.9) << '\n';
    }
  }
  std::fputs(autotune_lines.c_str(), stdout);
  return 0;
}

// "How many ranks before efficiency drops below X": efficiency against one rank at whole
// powers of two up to a node, then whole nodes doubling until the median falls below X
// (or --max-ranks), then halving the gap in whole nodes; the same for the band's p10 and
// p90, which bound the answer. Assumes efficiency falls as ranks grow.
int until_efficiency(const Options& o) {
  const Job job = job_of(o);
  const int per_node = o.gpus_per_node > 0 ? o.gpus_per_node : job.hw.ranks_per_node;
  std::map<int, Row> rows;
  const Row base = simulate_row(o, job, 1, nullptr, nullptr);
  auto row_at = [&](int n) -> const Row& {
    auto it = rows.find(n);
    if (it == rows.end()) it = rows.emplace(n, simulate_row(o, job, n, &base, nullptr)).first;
    return it->second;
  };
  std::vector<int> ladder;
  for (int n = 1; n < per_node; n *= 2) ladder.push_back(n);
  for (int n = per_node; n <= o.max_ranks; n *= 2) ladder.push_back(n);
  // The most ranks at which efficiency quantile q stays >= X (1 if not even 2), or none
  // if it never drops below X up to --max-ranks.
  auto last_good = [&](double q) -> std::optional<int> {
    int good = 1, bad = 0;
    for (int n : ladder) {
      if (n == 1) continue;
      if (row_at(n).efficiency_at(q) >= o.until_efficiency) good = n;
      else { bad = n; break; }
    }
    if (bad == 0) return std::nullopt;
    const int step = good >= per_node ? per_node : 1;
    while (bad - good > step) {
      const int mid = (good + bad) / 2 / step * step;
      if (mid <= good) break;
      (row_at(mid).efficiency_at(q) >= o.until_efficiency ? good : bad) = mid;
    }
    return good;
  };
  const std::optional<int> median = last_good(0.5), low = last_good(0.1), high = last_good(0.9);
  std::printf("kolo-sim: %s on %s, batch %d per rank, %.3f ms of compute per image\n%s\n",
              job.workload.profile.model.c_str(), job.hw.name.c_str(), o.batch, job.workload.compute_s_per_image * 1e3,
              describe_terms(o, job).c_str());
  std::printf("| ranks | nodes | efficiency | p10-p90 |\n|---:|---:|---:|---:|\n");
  for (const auto& [n, row] : rows)
    std::printf("| %d | %d | %s | %s-%s |\n", n, row.runs.front().nodes, fixed(row.efficiency_at(0.5), 3).c_str(),
                fixed(row.efficiency_at(0.1), 3).c_str(), fixed(row.efficiency_at(0.9), 3).c_str());
  auto answer = [&](const std::optional<int>& n) {
    return n ? std::to_string(*n) : "at least " + std::to_string(ladder.back());
  };
  // The p10 run is the pessimistic end of the band: it drops below X first.
  std::printf("efficiency stays at or above %s up to %s ranks (band: %s to %s)\n", fixed(o.until_efficiency, 2).c_str(),
              answer(median).c_str(), answer(low).c_str(), answer(high).c_str());
  return 0;
}

int fit_link_command(const std::string& collective_name, const std::string& file) {
  Collective collective{};
  bool known = false;
  for (Collective c : {Collective::ring_allreduce, Collective::recursive_doubling_allreduce, Collective::ring_allgather,
                       Collective::ring_reduce_scatter, Collective::binomial_broadcast})
    if (to_string(c) == collective_name) collective = c, known = true;
  if (!known) throw CLI::ValidationError("--collective", "unknown collective '" + collective_name + "'");
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot open '" + file + "'");
  std::vector<Sample> samples;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#' || line.starts_with("bytes")) continue;
    std::istringstream fields(line);
    Sample s;
    char comma1 = 0, comma2 = 0;
    if (!(fields >> s.bytes >> comma1 >> s.ranks >> comma2 >> s.seconds) || comma1 != ',' || comma2 != ',' ||
        s.seconds <= 0 || s.ranks < 1 || s.bytes < 0)
      throw std::runtime_error(file + ":" + std::to_string(number) + ": expected 'bytes,ranks,seconds', got '" + line + "'");
    samples.push_back(s);
  }
  const Fit fit = fit_link(collective, samples);
  std::printf("{\"latency_us\": %.4g, \"bandwidth_GBps\": %.4g, \"rms_residual_us\": %.4g, \"max_relative_error\": %.4g}\n",
              fit.link.alpha * 1e6, 1e-9 / fit.link.beta, fit.rms_residual_s * 1e6, fit.max_relative_error);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kolo-sim: kolo's coordinator on a simulated cluster (docs/simulator.md)"};
  app.set_version_flag("--version", "kolo-sim 2");
  Options o;
  app.add_option("--hardware", o.hardware, "hardware file, or a name in sim/hardware/ (this_machine, v100_nvlink2_edr, pascal_25g_roce)")
      ->capture_default_str();
  app.add_option("--model", o.model, "model profile, or a name in sim/profiles/ (resnet18, resnet50, vgg16...), or one made by sim/profile_from_timeline.py")
      ->capture_default_str();
  app.add_option("--ranks", o.ranks, "rank counts, e.g. 1,2,4,8 (default: powers of 2 up to the file's cluster)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--gpus-per-node", o.gpus_per_node, "ranks per node (default: the hardware file's)")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "images per rank per step")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--images", o.images, "training images per epoch, all ranks together")->capture_default_str()->check(CLI::PositiveNumber);
  auto* epoch = app.add_option("--one-device-epoch-s", o.one_device_epoch_s, "measured epoch time on one device (sets the compute time)")
                    ->check(CLI::PositiveNumber);
  auto* rate = app.add_option("--one-device-images-per-s", o.one_device_images_per_s, "measured training images/s on one device")
                   ->check(CLI::PositiveNumber)
                   ->excludes(epoch);
  app.add_option("--utilization", o.utilization, "without a measured time (flag or measured profile): the share of device_tflops a step achieves")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1.0))
      ->excludes(epoch)
      ->excludes(rate);
  app.add_option("--loader-cpu-ms", o.loader_cpu_ms, "CPU ms to load and augment one image (0: synthetic data)")->check(CLI::NonNegativeNumber);
  app.add_option("--link-GBps", o.inter_GBps, "what-if: the inter-node link's bandwidth (GB/s)")->check(CLI::PositiveNumber);
  app.add_option("--link-latency-us", o.inter_latency_us, "what-if: the inter-node link's latency (us)")->check(CLI::NonNegativeNumber);
  app.add_option("--fusion-threshold-mb", o.fusion_mb, "KOLO_FUSION_THRESHOLD in MiB (0: no fusion)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--cycle-time-ms", o.cycle_ms, "KOLO_CYCLE_TIME")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--cache-capacity", o.cache_capacity, "KOLO_CACHE_CAPACITY")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_flag("--hierarchical", o.hierarchical, "KOLO_HIERARCHICAL_ALLREDUCE=1");
  app.add_flag("--fp16", o.fp16, "fp16 compression of the gradients");
  app.add_flag("--autotune", o.autotune, "KOLO_AUTOTUNE=1: the autotuner picks the fusion threshold");
  app.add_option("--jitter", o.jitter,
                 "relative standard deviation of each rank's step compute (default: sim/defaults.json's, with the band over "
                 "its range; given: the band is over seeds)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--band-runs", o.band_runs, "runs per rank count for the p10-p90 band (1: one run, no band)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--achieved-fraction", o.achieved_fraction,
                 "what-if: the share of the inter-node link's line rate a collective achieves (default: its kind's, sim/defaults.json)")
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--link-burst-bytes", o.link_burst_bytes,
                 "a token bucket of this many bytes in front of the inter-node link (a tc tbf shaper's burst): bursts go at "
                 "the hardware file's rate, the rest at --link-GBps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--defaults", o.defaults, "the defaults file (default: sim/defaults.json)")->check(CLI::ExistingFile);
  app.add_option("--until-efficiency", o.until_efficiency,
                 "answer how many ranks keep the efficiency at or above this (e.g. 0.8), with its band, instead of --ranks")
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--max-ranks", o.max_ranks, "the most ranks --until-efficiency tries")->capture_default_str()->check(CLI::Range(2, 65536));
  app.add_option("--stragglers", o.straggler_fraction, "share of the ranks slowed each step")->check(CLI::Range(0.0, 1.0));
  app.add_option("--straggler-slowdown", o.straggler_slowdown, "how many times slower a straggler is")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100.0));
  app.add_option("--seed", o.seed, "seed of the jitter and the stragglers")->capture_default_str();
  app.add_option("--max-steps", o.max_steps, "simulate this many steps and scale to the epoch (0: all)")->check(CLI::NonNegativeNumber);
  app.add_option("--csv", o.csv, "write the rows as bench/scaling's scaling.csv (plot: run_scaling.py --from-csv)");
  app.add_option("--trace", o.trace, "write rank 0's timeline of the first steps (kolo's KOLO_TIMELINE format)");
  app.add_option("--trace-ranks", o.trace_ranks, "the rank count whose run is traced (default: the last)")->check(CLI::PositiveNumber);

  std::string collective = "ring_allreduce", samples;
  CLI::App* fit = app.add_subcommand("fit-link", "fit a link's latency and bandwidth to measured collective times");
  fit->add_option("--collective", collective, "the collective that was timed")->capture_default_str();
  fit->add_option("samples", samples, "CSV lines bytes,ranks,seconds")->required()->check(CLI::ExistingFile);

  CLI11_PARSE(app, argc, argv);
  // CLI11's ranges let nan through (every comparison with it is false), and inf past a
  // bound of none: no simulated time is made of either.
  for (const CLI::Option* option : app.get_options())
    for (const std::string& text : option->results()) {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (!text.empty() && *end == '\0' && !std::isfinite(value))
        return app.exit(CLI::ValidationError(option->get_name(), "must be a finite number, not '" + text + "'"));
    }
  try {
    if (fit->parsed()) return fit_link_command(collective, samples);
    if (o.until_efficiency > 0) {
      if (!o.ranks.empty()) throw CLI::ValidationError("--until-efficiency", "chooses the rank counts itself: drop --ranks");
      if (o.max_steps == 0) o.max_steps = 50;  // efficiency from 50 steps, not an epoch at every count
      return until_efficiency(o);
    }
    return run(o);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kolo-sim: %s\n", e.what());
    return 1;
  }
}
