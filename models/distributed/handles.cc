#include "models/distributed/handles.h"

namespace kolo::models::distributed_detail {

Status wait_all(const std::vector<Handle>& handles) {
  Status first;
  int failed = 0;
  for (const Handle& h : handles) {
    if (!h.valid()) continue;
    Status s = h.wait();
    if (s.ok()) continue;
    if (failed++ == 0) first = std::move(s);
  }
  if (failed <= 1) return first;
  return Status(first.code(), first.message() + " (and " + std::to_string(failed - 1) + " more of " +
                                  std::to_string(handles.size()) + " operations failed)");
}

void wait_all_or_throw(const std::vector<Handle>& handles, const std::string& what) {
  const Status s = wait_all(handles);
  if (!s.ok()) throw Error(s.code(), "kolo: " + what + ": " + s.message());
}

void require_initialized(const std::string& what) {
  if (!is_initialized())
    throw Error(StatusCode::InvalidArgument, "kolo: " + what + " needs kolo to be initialised: call kolo::init() first");
}

}  // namespace kolo::models::distributed_detail
