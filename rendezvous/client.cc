#include "rendezvous/client.h"

#include <thread>

#include "kolo/check.h"
#include "rendezvous/socket.h"

namespace kolo::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `attempt` (nullopt: not yet) with a growing pause until `timeout`.
template <class Attempt>
auto poll_until(std::chrono::milliseconds timeout, Attempt attempt) -> decltype(attempt()) {
  const auto give_up = Clock::now() + timeout;
  std::chrono::milliseconds pause{5};
  for (;;) {
    if (auto result = attempt()) return result;
    if (Clock::now() >= give_up) return std::nullopt;
    std::this_thread::sleep_for(std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                    give_up - Clock::now() + std::chrono::milliseconds(1))));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

std::string seconds(std::chrono::milliseconds t) { return std::to_string(t.count() / 1000.0).substr(0, 5) + " s"; }

}  // namespace

Client::Client(Endpoint endpoint, std::chrono::milliseconds request_bound)
    : endpoint_(std::move(endpoint)), request_bound_(request_bound) {}

std::string Client::peer() const { return "kolorun's rendezvous at " + endpoint_.host + ":" + std::to_string(endpoint_.port); }

Answer Client::call(Kind kind, const std::string& key, const std::string& value) {
  const Deadline deadline = Clock::now() + request_bound_;
  UniqueFd fd = connect_to(endpoint_.host, endpoint_.port, deadline);
  local_address_ = rendezvous::local_address(fd.get());
  send_all(fd.get(), encode(Request{kind, endpoint_.secret, key, value}), deadline, peer());
  std::string why;
  const std::string bytes = receive_until(fd.get(), deadline, peer(), [&](const std::string& b) {
    const ParsedAnswer parsed = parse_answer(b);
    if (parsed.state == Parse::Malformed) why = parsed.why;
    return parsed.state != Parse::Incomplete;
  });
  const ParsedAnswer parsed = parse_answer(bytes);
  KOLO_CHECK(parsed.state == Parse::Complete, StatusCode::CommFailure,
             "kolo: " + peer() + " closed the connection " +
                 (why.empty() ? "before answering" : "with bytes that are not an answer (" + why + ")"));
  KOLO_CHECK(parsed.answer.status != Status::Refused, StatusCode::InvalidArgument,
             "kolo: " + peer() + " refused this worker's secret (KOLO_GLOO_SECRET): it belongs to another job");
  KOLO_CHECK(parsed.answer.status != Status::Bad, StatusCode::InvalidArgument,
             "kolo: " + peer() + " could not serve the request: " + parsed.answer.value);
  return parsed.answer;
}

void Client::set(const std::string& key, const std::string& value) { call(Kind::Set, key, value); }

std::optional<std::string> Client::get(const std::string& key) {
  Answer answer = call(Kind::Get, key, "");
  if (answer.status != Status::Ok) return std::nullopt;
  return std::move(answer.value);
}

// A request that could not reach the server (a network blip, a link down for a while) is
// tried again until the wait's timeout; the last such failure is kept for the message.
template <class Attempt>
auto Client::retrying(Attempt attempt) {
  return [this, attempt]() -> decltype(attempt()) {
    try {
      return attempt();
    } catch (const Error& e) {
      if (e.code() != StatusCode::CommFailure) throw;
      last_failure_ = e.what();
      return std::nullopt;
    }
  };
}

std::string Client::unreachable_note() const {
  return last_failure_.empty() ? "" : "; the last request failed: " + last_failure_;
}

std::string Client::wait_for(const std::string& key, std::chrono::milliseconds timeout) {
  last_failure_.clear();
  std::optional<std::string> value = poll_until(timeout, retrying([&] { return get(key); }));
  KOLO_CHECK(value, StatusCode::CommFailure,
             "kolo: rendezvous: no worker published '" + key + "' within " + seconds(timeout) +
                 " (a worker of this round did not start, or died before it connected)" + unreachable_note());
  return std::move(*value);
}

bool Client::hosts_changed(const std::string& host, int slot, int64_t round) {
  const Answer answer = call(Kind::Hosts, host, std::to_string(slot) + " " + std::to_string(round));
  return answer.status == Status::Ok && answer.value == "1";
}

Place Client::wait_for_place(const std::string& host, int slot, int64_t after_round,
                             std::chrono::milliseconds timeout) {
  const std::string request = std::to_string(slot) + " " + std::to_string(after_round);
  last_failure_.clear();
  std::optional<Place> place = poll_until(timeout, retrying([&]() -> std::optional<Place> {
    const Answer answer = call(Kind::Slot, host, request);
    KOLO_CHECK(answer.status != Status::Gone, StatusCode::Aborted,
               "kolo: worker " + host + ":" + std::to_string(slot) + " is no longer part of the job: " + answer.value);
    if (answer.status != Status::Ok) return std::nullopt;
    std::optional<Place> p = place_from_text(answer.value);
    KOLO_CHECK(p, StatusCode::CommFailure, "kolo: " + peer() + " answered a place that is not one: '" + answer.value + "'");
    return p;
  }));
  KOLO_CHECK(place, StatusCode::CommFailure,
             "kolo: worker " + host + ":" + std::to_string(slot) + " got no place in the job from " + peer() +
                 " within " + seconds(timeout) + " (the job's other workers did not all arrive)" + unreachable_note());
  return *place;
}

}  // namespace kolo::rendezvous
