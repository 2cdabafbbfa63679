// A worker's side of the rendezvous (protocol.h): the key-value store the workers of one
// round exchange their Gloo addresses through, and the worker's place in the job. Every
// call is bounded: a request by `request_bound`, a wait by its own timeout (within which a
// request that cannot reach the server is tried again). Failures throw kolo::Error:
// CommFailure when the server cannot be reached or a wait times out,
// InvalidArgument when the server refuses the secret, Aborted when it says that this worker
// is no longer part of the job.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "rendezvous/protocol.h"

namespace kolo::rendezvous {

struct Endpoint {
  std::string host;
  int port = 0;
  Secret secret{};
};

class Client {
 public:
  explicit Client(Endpoint endpoint, std::chrono::milliseconds request_bound = std::chrono::seconds(10));

  void set(const std::string& key, const std::string& value);
  std::optional<std::string> get(const std::string& key);
  // The value under `key`, once some worker has set it.
  std::string wait_for(const std::string& key, std::chrono::milliseconds timeout);
  // This worker's place (`slot` on `host`) in the first round after `after_round`.
  Place wait_for_place(const std::string& host, int slot, int64_t after_round, std::chrono::milliseconds timeout);

  // Whether the job's hosts changed since `round` began (elastic jobs).
  bool hosts_changed(const std::string& host, int slot, int64_t round);

  // The local address of the last connection to the server: the address by which the
  // others reach this host (what Gloo listens on unless told otherwise).
  const std::string& local_address() const { return local_address_; }
  const Endpoint& endpoint() const { return endpoint_; }

  // One request, one answer.
  Answer call(Kind kind, const std::string& key, const std::string& value);

 private:
  std::string peer() const;
  template <class Attempt>
  auto retrying(Attempt attempt);
  std::string unreachable_note() const;

  Endpoint endpoint_;
  std::chrono::milliseconds request_bound_;
  std::string local_address_;
  std::string last_failure_;  // of a request in a wait that could not reach the server
};

}  // namespace kolo::rendezvous
