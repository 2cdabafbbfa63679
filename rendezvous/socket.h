// The few socket operations the rendezvous needs, each bounded by a deadline: a listening
// socket, a connection, whole messages out and in. Failures throw kolo::Error
// (CommFailure) naming the peer and the system's reason.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace kolo::rendezvous {

using Deadline = std::chrono::steady_clock::time_point;

// Owns a file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// A non-blocking socket listening on `address` (numeric, or "" for every address) and
// `port` (0: one the system picks); listening_port() says which.
UniqueFd listen_on(const std::string& address, int port);
int listening_port(int fd);

// A connected, non-blocking socket to host:port (a name or a numeric address).
UniqueFd connect_to(const std::string& host, int port, Deadline deadline);
// The numeric local address of a connected socket: the address by which this host
// reaches that peer.
std::string local_address(int fd);

void send_all(int fd, std::string_view bytes, Deadline deadline, const std::string& peer);
// Reads until `complete(bytes)` returns the message's length (non-zero), the peer closes,
// or the deadline passes.
template <class Complete>
std::string receive_until(int fd, Deadline deadline, const std::string& peer, Complete complete);
// One read of what is there now; "" at end of stream. Throws on a socket error.
std::string receive_some(int fd, Deadline deadline, const std::string& peer, bool* closed);

template <class Complete>
std::string receive_until(int fd, Deadline deadline, const std::string& peer, Complete complete) {
  std::string bytes;
  for (;;) {
    if (complete(bytes)) return bytes;
    bool closed = false;
    bytes += receive_some(fd, deadline, peer, &closed);
    if (closed) return bytes;
  }
}

}  // namespace kolo::rendezvous
