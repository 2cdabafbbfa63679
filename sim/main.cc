// kolo-sim: predicts a training job's scaling on a cluster it cannot reach, with kolo's own
// negotiation logic in the loop (simulator.h). One row per rank count: epoch time,
// images/s, speedup and efficiency over the first row, the share of time in allreduces.
//
//   kolo-sim --hardware v100_nvlink2_edr --model resnet18 --batch 32 --images 1281167
//            --one-device-epoch-s 3466 --ranks 1,2,4,8,16,32,64
//   kolo-sim fit-link --collective ring_allreduce SAMPLES.csv   (bytes,ranks,seconds lines)
//
// docs/simulator.md explains every flag and the model behind it.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/calibration.h"
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
  double jitter = 0, straggler_fraction = 0, straggler_slowdown = 2;
  uint64_t seed = 1;
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

int run(const Options& o) {
  Hardware hw = load_hardware(data_file(o.hardware, "hardware"));
  if (o.inter_GBps > 0) hw.inter_node.beta_s_per_byte = 1.0 / (o.inter_GBps * 1e9);
  if (o.inter_latency_us >= 0) hw.inter_node.alpha_s = o.inter_latency_us * 1e-6;
  Workload w;
  w.profile = load_profile(data_file(o.model, "profiles"));
  w.batch_per_rank = o.batch;
  w.images_per_epoch = o.images;
  w.loader_cpu_s_per_image = o.loader_cpu_ms * 1e-3;
  if (o.one_device_epoch_s > 0) w.compute_s_per_image = o.one_device_epoch_s / double(o.images);
  else if (o.one_device_images_per_s > 0) w.compute_s_per_image = 1.0 / o.one_device_images_per_s;
  else if (w.profile.measured_s_per_image > 0) w.compute_s_per_image = w.profile.measured_s_per_image;
  else w.compute_s_per_image = compute_s_per_image_from_flops(w.profile, hw.device_flops, o.utilization);

  KoloSettings ks;
  ks.config.fusion_threshold_bytes = static_cast<int64_t>(o.fusion_mb * 1024 * 1024);
  ks.config.cycle_time_ms = o.cycle_ms;
  ks.config.cache_capacity = o.cache_capacity;
  ks.config.hierarchical_allreduce = o.hierarchical;
  ks.config.autotune = o.autotune;
  ks.fp16 = o.fp16;
  const Variation variation{o.jitter, o.straggler_fraction, o.straggler_slowdown, o.seed};

  std::vector<int> ranks = o.ranks;
  if (ranks.empty())
    for (int n = 1; n <= hw.ranks(); n *= 2) ranks.push_back(n);
  std::vector<Hardware> clusters;  // checked before anything is printed
  for (int n : ranks) clusters.push_back(cluster_of(hw, n, o.gpus_per_node));

  std::printf("kolo-sim: %s on %s; batch %d per rank, %lld images per epoch, %.3f ms of compute per image\n",
              w.profile.model.c_str(), hw.name.c_str(), o.batch, static_cast<long long>(o.images),
              w.compute_s_per_image * 1e3);
  std::printf("| ranks | nodes | epoch (s) | images/s | speedup | efficiency | allreduce share | loader wait | cycles/step |\n"
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) throw std::runtime_error("cannot write --csv file '" + o.csv + "'");
    csv << "placement,links,ranks,nodes,model,batch,threads,images,epoch_s,images_per_s,fused_bytes_per_step,"
           "allreduce_ms_per_step,comm_share,runs,load\n";
  }
  double base_rate = 0;
  int base_ranks = 0;
  std::string autotune_lines;  // after the table, which they would break
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int n = ranks[i];
    const Hardware& cluster = clusters[i];
    kolo::Timeline timeline;
    RunOptions run_options;
    run_options.max_steps = o.max_steps;
    if (!o.trace.empty() && n == (o.trace_ranks > 0 ? o.trace_ranks : ranks.back())) {
      timeline.open(o.trace, 0, kolo::Timeline::Clock::time_point());
      run_options.trace = &timeline;
    }
    const SimResult r = simulate(w, cluster, ks, variation, run_options);
    timeline.close();
    if (base_ranks == 0) base_rate = r.images_per_s, base_ranks = n;
    const double speedup = r.images_per_s / base_rate;
    std::printf("| %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", n, r.nodes, fixed(r.epoch_s, 2).c_str(),
                fixed(r.images_per_s, 1).c_str(), fixed(speedup, 2).c_str(),
                fixed(speedup / (double(n) / base_ranks), 3).c_str(), fixed(r.comm_share, 3).c_str(),
                fixed(r.loader_wait_share, 3).c_str(), fixed(double(r.cycles) / r.steps_simulated, 1).c_str());
    if (!r.autotune_choice.empty()) autotune_lines += "autotune at " + std::to_string(n) + " ranks: " + r.autotune_choice + "\n";
    if (csv.is_open()) {
      csv << "sim:" << o.hardware << ",-," << n << ',' << r.nodes << ',' << w.profile.model << ',' << o.batch << ",1,"
          << r.steps_per_epoch * o.batch * n << ',' << r.epoch_s << ',' << r.images_per_s << ','
          << r.bytes_per_step << ',' << r.allreduce_s_per_step * 1e3 << ',' << r.comm_share << ",1,0\n";
    }
  }
  std::fputs(autotune_lines.c_str(), stdout);
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
  app.set_version_flag("--version", "kolo-sim 1");
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
  app.add_option("--jitter", o.jitter, "relative standard deviation of each rank's step compute")->check(CLI::Range(0.0, 1.0));
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
  try {
    if (fit->parsed()) return fit_link_command(collective, samples);
    return run(o);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kolo-sim: %s\n", e.what());
    return 1;
  }
}
