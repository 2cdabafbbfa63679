// What init() says about the settings: rank 0 prints, once and at warning level, every
// line of ignored_settings.h for this run.
#pragma once

#include "config.h"
#include "ops/backend.h"

namespace kolo {

// Collective over `control` (the runtime's, before its background thread starts): every
// rank sends rank 0 its own values of the shared settings that rank 0's replaced, so that
// rank 0 can name them in one line instead of each rank printing its own. `own` is this rank's
// configuration as read from its environment, `in_effect` the runtime's.
void report_ignored_settings(const Config& own, const Config& in_effect, ops::ControlChannel& control);

}  // namespace kolo
