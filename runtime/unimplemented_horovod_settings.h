// Horovod settings kolo does not implement, and why: for their HOROVOD_ (or KOLO_)
// variables, which init() names as ignored (ignored_settings.cc), and for the horovodrun
// flags that set them, which kolorun refuses (launcher/options.cc). Header-only, as kolorun
// links no runtime code. The names are Horovod's own: the knobs of horovod/common/common.h,
// its logging, and what horovodrun reads.
#pragma once

#include <string_view>

namespace kolo {

namespace unimplemented_detail {
constexpr std::string_view kGridSearch =
    "kolo's autotuner is a plain grid search (no warm-up samples, no Bayesian optimisation)";
constexpr std::string_view kNoCcl = "kolo has no oneCCL backend";

struct Unimplemented {
  std::string_view name;  // after KOLO_ or HOROVOD_
  std::string_view why;
};
constexpr Unimplemented kSettings[] = {
    {"ADASUM_MPI_CHUNK_SIZE", "kolo's Adasum exchanges its halves in pieces of KOLO_ALLREDUCE_CHUNK_BYTES"},
    {"AUTOTUNE_BAYES_OPT_MAX_SAMPLES", kGridSearch},
    {"AUTOTUNE_GAUSSIAN_PROCESS_NOISE", kGridSearch},
    {"AUTOTUNE_STEPS_PER_SAMPLE", kGridSearch},
    {"AUTOTUNE_WARMUP_SAMPLES", kGridSearch},
    {"BATCH_D2D_MEMCOPIES", "kolo always batches the copies into and out of the fusion buffer"},
    {"CCL_BGT_AFFINITY", kNoCcl},
    {"CCL_CACHE", kNoCcl},
    {"CONTROLLER", "kolo negotiates over the job's transport: Gloo under kolorun --gloo, else MPI"},
    {"CPU_OPERATIONS", "kolo runs the collectives of CPU tensors on the job's transport: Gloo under kolorun --gloo, else MPI"},
    {"DISABLE_GROUP_FUSION", "kolo fuses a group's tensors like any others"},
    {"DISABLE_NVTX_RANGES", "kolo emits no NVTX ranges"},
    {"ENABLE_ASYNC_COMPLETION", "kolo always completes GPU operations asynchronously, by CUDA event"},
    {"ENABLE_XLA_OPS", "kolo has no TensorFlow or XLA integration"},
    {"GLOO_TIMEOUT_SECONDS", "KOLO_CONTROL_TIMEOUT_SECONDS bounds every wait of Gloo's, as of MPI's"},
    {"LOG_HIDE_TIME", "kolo's log lines carry no timestamp"},
    {"MPI_THREADS_DISABLE",
     "kolo needs MPI_THREAD_MULTIPLE: its background thread calls MPI while the program runs"},
    {"NUM_NCCL_STREAMS", "kolo uses one NCCL stream per device"},
    {"START_TIMEOUT", "it is horovodrun's, not the program's (kolorun takes --start-timeout)"},
    {"THREAD_AFFINITY", "kolo does not pin its background thread to a core"},
};
}  // namespace unimplemented_detail

// Why kolo does not implement Horovod's setting `name` (NUM_NCCL_STREAMS for
// HOROVOD_NUM_NCCL_STREAMS); empty for a name not in the table.
constexpr std::string_view why_unimplemented(std::string_view name) {
  for (const auto& setting : unimplemented_detail::kSettings)
    if (setting.name == name) return setting.why;
  return {};
}

}  // namespace kolo
