// Waiting for a set of the runtime's handles (private to models/distributed).
#pragma once

#include <string>
#include <vector>

#include "kolo/kolo.h"

namespace kolo::models::distributed_detail {

// Waits for every handle, even after one has failed, so that no operation is still
// writing into memory the caller may free or reuse; then returns the first failure
// (its message says how many failed) or OK. Invalid handles are skipped. The runtime's
// own timeouts bound each wait.
Status wait_all(const std::vector<Handle>& handles);

// wait_all, then throws kolo::Error with `what` in front of the first failure's message.
void wait_all_or_throw(const std::vector<Handle>& handles, const std::string& what);

// Throws kolo::Error (InvalidArgument) unless kolo is initialised: the message names `what`.
void require_initialized(const std::string& what);

}  // namespace kolo::models::distributed_detail
