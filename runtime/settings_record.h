// The settings every rank must share, because they change what ranks send or how they
// pack it (fusion, cache, pipeline pieces, the autotuner, which collectives run where).
// Rank 0's win: at start-up rank 0 broadcasts them over the control channel as a named,
// versioned record of KEY=value lines, read back by name on every rank:
//
//   kolo-settings/1
//   KOLO_FUSION_THRESHOLD=67108864
//   KOLO_CACHE_CAPACITY=1024
//   ...
//
// A rank that reads another record name or version, or a key it does not know, misses or
// sees twice, fails start-up with a message saying so (ranks of different kolo builds:
// Unsupported, as this build cannot read what the other one wrote).
#pragma once

#include <string>

#include "config.h"
#include "ops/backend.h"

namespace kolo {

inline constexpr const char* kSettingsRecordName = "kolo-settings/1";

std::string settings_record(const Config& config);
// Sets the shared settings of `config` from `record`. Throws kolo::Error(Unsupported)
// naming what does not match.
void apply_settings_record(const std::string& record, Config& config);
// Collective: every rank ends with rank 0's shared settings, or every rank throws (the
// ranks that could not read the record with their reason, the others saying so).
void agree_on_settings(Config& config, ops::ControlChannel& control);

}  // namespace kolo
