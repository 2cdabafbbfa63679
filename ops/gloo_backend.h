// The collectives over Gloo (gloo::Context, TCP): kolo's host-memory backend and control
// channel for jobs whose membership can change (runtime/gloo_transport.h). Gloo's own
// algorithms do the work (ring allreduce, allgatherv, broadcast, alltoallv, barrier); kolo
// adds its reductions (every dtype, float16 and bfloat16 included), the scaling, and a
// reducescatter built from alltoallv. Every call is bounded by its timeout, and a lost
// peer (a reset connection) or a timeout throws kolo::Error(CommFailure) at once: Gloo
// cancels nothing on other threads, so nothing stays pending after a failure.
#pragma once

#include <chrono>
#include <memory>

#include "ops/backend.h"

namespace gloo {
class Context;
}

namespace kolo::ops {

struct GlooOptions {
  std::chrono::milliseconds control_timeout{std::chrono::seconds(300)};  // control messages
  std::chrono::milliseconds data_timeout{std::chrono::seconds(300)};     // one data collective
};

std::unique_ptr<Backend> make_gloo_backend(std::shared_ptr<gloo::Context> context, const GlooOptions& options);
std::unique_ptr<ControlChannel> make_gloo_control_channel(std::shared_ptr<gloo::Context> context,
                                                          const GlooOptions& options);

}  // namespace kolo::ops
