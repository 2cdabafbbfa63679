// kolorun's side of the rendezvous (protocol.h), as horovodrun's driver serves it: a
// thread that answers the job's workers. It keeps the key-value store through which the
// workers of a round exchange their Gloo addresses, and asks the Membership (the launcher's)
// where each worker sits in which round.
//
// Only the job's own workers get in: a request with another secret is answered Refused,
// bytes that are not a request close the connection, and a connection that does not
// finish its request within a bound is closed; none of them touches the store or the
// membership. Each is counted (counts()), so that a test can see that it happened.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rendezvous/protocol.h"
#include "rendezvous/socket.h"

namespace kolo::rendezvous {

// Who is in the job: called on the server's thread, one call at a time.
class Membership {
 public:
  virtual ~Membership() = default;
  // The place of worker `slot` on `host` in the first round after `after_round`: Ok with
  // to_text(place); Missing while that round is not decided yet; Gone (with why) when this
  // worker is not part of the job any more.
  virtual Answer place(const std::string& host, int slot, int64_t after_round) = 0;
  // Whether hosts were added or removed since `round` began (an elastic job's workers ask
  // at each commit): Ok with "1" or "0".
  virtual Answer hosts_changed(const std::string& host, int slot, int64_t round) { return {Status::Ok, "0"}; }
};

class Server {
 public:
  struct Counts {
    int64_t served = 0;     // requests answered (any status but Refused)
    int64_t refused = 0;    // wrong secret
    int64_t malformed = 0;  // bytes that were not a request
    int64_t timed_out = 0;  // connections that did not finish a request in time
  };

  // Listens on `address` ("" : every address) and `port` (0: any free one).
  Server(Secret secret, Membership& membership, const std::string& address = "", int port = 0,
         std::chrono::milliseconds connection_bound = std::chrono::seconds(10));
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return port_; }
  Counts counts() const;
  // Drops every key that starts with `prefix` (a round the job has left behind).
  void forget(const std::string& prefix);

 private:
  struct Connection;
  void serve();
  // The answer to a request whose secret was right.
  Answer answer(const Request& request);

  const Secret secret_;
  Membership& membership_;
  const std::chrono::milliseconds connection_bound_;
  UniqueFd listener_;
  int port_ = 0;
  UniqueFd wake_read_, wake_write_;  // a byte on this pipe ends serve()
  mutable std::mutex mutex_;         // store_ and counts_
  std::map<std::string, std::string> store_;
  Counts counts_;
  std::thread thread_;
};

}  // namespace kolo::rendezvous
