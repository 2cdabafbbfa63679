#include "rendezvous/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <vector>

#include "kolo/check.h"

namespace kolo::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;
// More connections than a job's workers make at once (one request each); beyond it new
// ones wait in the listen queue.
constexpr size_t kMaxConnections = 1024;

// "slot round" of a Slot or Hosts request.
bool parse_slot_request(const std::string& text, int* slot, int64_t* after_round) {
  const char* end = text.data() + text.size();
  auto [p, e1] = std::from_chars(text.data(), end, *slot);
  if (e1 != std::errc() || p == end || *p != ' ') return false;
  auto [q, e2] = std::from_chars(p + 1, end, *after_round);
  return e2 == std::errc() && q == end && *slot >= 0 && *after_round >= 0;
}

}  // namespace

struct Server::Connection {
  UniqueFd fd;
  Clock::time_point deadline;
  std::string in, out;  // out: the answer still to send; the connection closes once it is sent
  bool answered = false;
};

Server::Server(Secret secret, Membership& membership, const std::string& address, int port,
               std::chrono::milliseconds connection_bound)
    : secret_(secret), membership_(membership), connection_bound_(connection_bound),
      listener_(listen_on(address, port)), port_(listening_port(listener_.get())) {
  int pipe_fds[2];
  KOLO_CHECK(::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) == 0, StatusCode::IoError, "kolo: rendezvous: pipe2 failed");
  wake_read_ = UniqueFd(pipe_fds[0]);
  wake_write_ = UniqueFd(pipe_fds[1]);
  thread_ = std::thread([this] { serve(); });
}

Server::~Server() {
  const char byte = 0;
  (void)!::write(wake_write_.get(), &byte, 1);
  thread_.join();
}

Server::Counts Server::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void Server::forget(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = store_.lower_bound(prefix); it != store_.end() && it->first.starts_with(prefix);)
    it = store_.erase(it);
}

Answer Server::answer(const Request& request) {
  switch (request.kind) {
    case Kind::Set: {
      std::lock_guard<std::mutex> lock(mutex_);
      store_[request.key] = request.value;
      return {};
    }
    case Kind::Get: {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = store_.find(request.key);
      if (it == store_.end()) return {Status::Missing, ""};
      return {Status::Ok, it->second};
    }
    case Kind::Slot:
    case Kind::Hosts: {
      int slot = 0;
      int64_t round = 0;
      if (!parse_slot_request(request.value, &slot, &round))
        return {Status::Bad, "a worker's request is 'slot round', got '" + request.value + "'"};
      if (request.kind == Kind::Hosts) return membership_.hosts_changed(request.key, slot, round);
      return membership_.place(request.key, slot, round);
    }
  }
  return {Status::Bad, "unknown request kind"};
}

void Server::serve() {
  std::vector<std::unique_ptr<Connection>> connections;
  auto count = [this](int64_t Counts::*field) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(counts_.*field);
  };
  for (;;) {
    std::vector<pollfd> polled{{wake_read_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
    if (connections.size() >= kMaxConnections) polled[1].events = 0;
    Clock::time_point next_deadline = Clock::now() + std::chrono::seconds(1);
    for (const auto& c : connections) {
      polled.push_back({c->fd.get(), short(c->answered ? POLLOUT : POLLIN), 0});
      next_deadline = std::min(next_deadline, c->deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline - Clock::now());
    if (::poll(polled.data(), polled.size(), int(std::max<int64_t>(wait.count(), 0) + 1)) < 0 && errno != EINTR)
      return;
    if (polled[0].revents) return;
    if (polled[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        auto c = std::make_unique<Connection>();
        c->fd = UniqueFd(fd);
        c->deadline = Clock::now() + connection_bound_;
        connections.push_back(std::move(c));
        if (connections.size() >= kMaxConnections) break;
      }
    }
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = *connections[i];
      const short revents = i + 2 < polled.size() && polled[i + 2].fd == c.fd.get() ? polled[i + 2].revents : 0;
      bool close = false;
      if (!c.answered && (revents & (POLLIN | POLLHUP | POLLERR))) {
        char buffer[4096];
        const ssize_t n = ::recv(c.fd.get(), buffer, sizeof buffer, 0);
        if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
          close = true;  // the peer left before finishing its request
        } else if (n > 0) {
          c.in.append(buffer, size_t(n));
          const ParsedRequest parsed = parse_request(c.in);
          if (parsed.state == Parse::Malformed) {
            count(&Counts::malformed);
            close = true;
          } else if (parsed.state == Parse::Complete) {
            if (!same_secret(parsed.request.secret, secret_)) {
              count(&Counts::refused);
              c.out = encode(Answer{Status::Refused, ""});
            } else {
              count(&Counts::served);
              c.out = encode(answer(parsed.request));
            }
            c.answered = true;
          }
        }
      }
      if (!close && c.answered && !c.out.empty()) {
        const ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n > 0) c.out.erase(0, size_t(n));
        else if (!(n < 0 && (errno == EAGAIN || errno == EINTR))) close = true;
      }
      if (c.answered && c.out.empty()) close = true;
      if (!close && now >= c.deadline) {
        if (!c.answered) count(&Counts::timed_out);
        close = true;
      }
      if (close) connections[i].reset();
    }
    std::erase(connections, nullptr);
  }
}

}  // namespace kolo::rendezvous
