#include "rendezvous/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "kolo/check.h"

namespace kolo::rendezvous {
namespace {

[[noreturn]] void fail(const std::string& what, int error) {
  throw Error(StatusCode::CommFailure, "kolo: rendezvous: " + what + ": " + std::strerror(error));
}

void make_non_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) fail("fcntl", errno);
}

// Milliseconds left until `deadline`, for poll(); 0 once it has passed.
int millis_left(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : int(std::min<int64_t>(left.count(), 1 << 30));
}

// Waits until `fd` is ready for `events`; false when the deadline passed first.
bool wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, millis_left(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) fail("poll", errno);
  }
}

std::string numeric_host(const sockaddr* address, socklen_t length) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(address, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd listen_on(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int error = ::getaddrinfo(address.empty() ? nullptr : address.c_str(), service.c_str(), &hints, &found);
  KOLO_CHECK(error == 0, StatusCode::CommFailure,
             "kolo: rendezvous: cannot listen on '" + address + "': " + ::gai_strerror(error));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  int last_error = 0;
  for (addrinfo* a = found; a; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      last_error = errno;
      continue;
    }
    const int on = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), 128) == 0) {
      make_non_blocking(fd.get());
      return fd;
    }
    last_error = errno;
  }
  fail("cannot listen on '" + address + "' port " + service, last_error);
}

int listening_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) fail("getsockname", errno);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

UniqueFd connect_to(const std::string& host, int port, Deadline deadline) {
  const std::string peer = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  KOLO_CHECK(error == 0, StatusCode::CommFailure,
             "kolo: rendezvous: cannot look up '" + host + "': " + ::gai_strerror(error));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  int last_error = ETIMEDOUT;
  for (addrinfo* a = found; a; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      last_error = errno;
      continue;
    }
    make_non_blocking(fd.get());
    const int on = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) return fd;
    if (errno != EINPROGRESS) {
      last_error = errno;
      continue;
    }
    if (!wait_for(fd.get(), POLLOUT, deadline)) {
      last_error = ETIMEDOUT;
      continue;
    }
    int result = 0;
    socklen_t length = sizeof result;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &result, &length);
    if (result == 0) return fd;
    last_error = result;
  }
  fail("cannot connect to " + peer, last_error);
}

std::string local_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) fail("getsockname", errno);
  return numeric_host(reinterpret_cast<sockaddr*>(&address), length);
}

void send_all(int fd, std::string_view bytes, Deadline deadline, const std::string& peer) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) fail("sending to " + peer, ETIMEDOUT);
      continue;
    }
    fail("sending to " + peer, errno);
  }
}

std::string receive_some(int fd, Deadline deadline, const std::string& peer, bool* closed) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) return std::string(buffer, size_t(n));
    if (n == 0) {
      *closed = true;
      return {};
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd, POLLIN, deadline)) fail("waiting for " + peer, ETIMEDOUT);
      continue;
    }
    fail("receiving from " + peer, errno);
  }
}

}  // namespace kolo::rendezvous
