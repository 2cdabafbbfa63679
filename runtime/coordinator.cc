#include "coordinator.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <set>

namespace kolo {
namespace {

// Only the kind must agree: every rank runs on its own GPU (usually cuda:<local rank>).
std::string device_kind(const Device& d) { return d.is_cpu() ? "cpu" : "cuda"; }

// The shortest text that reads back as the same double: ranks whose scale factors differ
// in the last bit must not print alike and pass for agreeing.
std::string number_string(double x) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, x).ptr;
  return std::string(text, end);
}

// The fields ranks must agree on, each with how to print it. For allgather and alltoall
// only the dimensions after the first must agree.
struct Field {
  const char* name;
  std::function<std::string(const Request&)> value;
};

std::vector<Field> fields_to_compare(OpType type) {
  std::vector<Field> fields = {
      {"operation", [](const Request& r) { return std::string(op_type_name(r.type)); }},
      {"dtype", [](const Request& r) { return std::string(dtype_name(r.dtype)); }},
      {"device", [](const Request& r) { return device_kind(r.device); }},
      {"group", [](const Request& r) {
         return r.group.empty() ? std::string("(none)")
                                : "'" + r.group + "' of " + std::to_string(r.group_size) + " tensors";
       }},
  };
  switch (type) {
    case OpType::Allreduce:
      fields.push_back({"op", [](const Request& r) { return std::string(op_name(r.op)); }});
      fields.push_back({"prescale", [](const Request& r) { return number_string(r.prescale); }});
      fields.push_back({"postscale", [](const Request& r) { return number_string(r.postscale); }});
      fields.push_back({"compression", [](const Request& r) { return std::string(compression_name(r.compression)); }});
      fields.push_back({"shape", [](const Request& r) { return shape_string(r.shape); }});
      break;
    case OpType::Reducescatter:
      fields.push_back({"op", [](const Request& r) { return std::string(op_name(r.op)); }});
      fields.push_back({"prescale", [](const Request& r) { return number_string(r.prescale); }});
      fields.push_back({"postscale", [](const Request& r) { return number_string(r.postscale); }});
      fields.push_back({"shape", [](const Request& r) { return shape_string(r.shape); }});
      break;
    case OpType::Broadcast:
      fields.push_back({"root", [](const Request& r) { return std::to_string(r.root); }});
      fields.push_back({"shape", [](const Request& r) { return shape_string(r.shape); }});
      break;
    case OpType::Allgather:
    case OpType::Alltoall:
      fields.push_back({"shape after the first dimension", [](const Request& r) {
                          std::vector<int64_t> rest(r.shape.begin() + std::min<std::size_t>(1, r.shape.size()),
                                                    r.shape.end());
                          return r.shape.empty() ? std::string("(scalar)") : shape_string(rest);
                        }});
      break;
    case OpType::ProcessSet:
      fields.push_back({"change", [](const Request& r) {
                          return std::string(r.process_set_change.action == ProcessSetChange::Action::Add ? "add" : "remove");
                        }});
      fields.push_back({"ranks", [](const Request& r) {
                          const std::vector<int32_t>& ranks = r.process_set_change.ranks;
                          return shape_string(Shape(std::vector<int64_t>(ranks.begin(), ranks.end())));
                        }});
      fields.push_back({"process set", [](const Request& r) { return std::to_string(r.process_set_change.set_id); }});
      break;
    case OpType::Barrier: break;
  }
  return fields;
}

Response error_response(const std::string& name, OpType type, StatusCode code,
                        std::string message) {
  Response r;
  r.kind = Response::Kind::Error;
  r.type = type;
  r.names = {name};
  r.error_code = code;
  r.error_message = std::move(message);
  return r;
}

}  // namespace

// Any rank's request for a pending name (at least one rank has submitted it).
const Request& Coordinator::submitted_request(const Pending& p) {
  for (const auto& request : p.by_rank)
    if (request) return *request;
  throw Error(StatusCode::Internal, "kolo: pending tensor without a request");
}

Coordinator::Coordinator(int size, std::vector<int> global_ranks, std::string where)
    : size_(size), global_ranks_(std::move(global_ranks)), where_(std::move(where)), joined_(size, false) {}

std::string Coordinator::rank_list(const std::vector<int>& ranks) const {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(global_ranks_.empty() ? ranks[i] : global_ranks_.at(ranks[i]));
  return s;
}

void Coordinator::add(int rank, const RequestList& list, Clock::time_point now) {
  if (list.joined && !joined_[rank]) last_joined_ = global_ranks_.empty() ? rank : global_ranks_.at(rank);
  joined_[rank] = list.joined;
  for (const Request& request : list.requests) {
    auto [it, inserted] = pending_.try_emplace(request.name);
    Pending& p = it->second;
    if (inserted) {
      p.by_rank.resize(size_);
      p.first_seen = now;
      p.sequence = next_sequence_++;
    }
    p.by_rank[rank] = request;
  }
}

void Coordinator::end_join() {
  std::fill(joined_.begin(), joined_.end(), false);
  last_joined_ = -1;
}

bool Coordinator::complete(const Pending& p) const {
  for (int r = 0; r < size_; ++r)
    if (!p.by_rank[r] && !joined_[r]) return false;
  return true;
}

std::vector<int> Coordinator::missing_ranks(const Pending& p) const {
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r)
    if (!p.by_rank[r] && !joined_[r]) missing.push_back(r);
  return missing;
}

Response Coordinator::build_response(const std::string& name, const Pending& p) const {
  std::vector<int> submitted, joined;
  for (int r = 0; r < size_; ++r) (p.by_rank[r] ? submitted : joined).push_back(r);
  const Request& first = *p.by_rank[submitted.front()];

  for (const Field& field : fields_to_compare(first.type)) {
    // Group ranks by the value they gave, in order of first appearance.
    std::vector<std::pair<std::string, std::vector<int>>> values;
    for (int r : submitted) {
      const std::string v = field.value(*p.by_rank[r]);
      auto it = std::find_if(values.begin(), values.end(), [&](auto& e) { return e.first == v; });
      if (it == values.end()) values.push_back({v, {r}});
      else it->second.push_back(r);
    }
    if (values.size() > 1) {
      std::string message = "kolo: ranks disagree on the " + std::string(field.name) +
                            " of tensor '" + name + "'" + where_ + ":";
      for (std::size_t i = 0; i < values.size(); ++i)
        message += std::string(i ? ";" : "") + " rank" + (values[i].second.size() > 1 ? "s " : " ") +
                   rank_list(values[i].second) + " gave " + values[i].first;
      return error_response(name, first.type, StatusCode::Mismatch, message);
    }
  }
  if (!joined.empty() && first.type != OpType::Allreduce) {
    return error_response(name, first.type, StatusCode::InvalidArgument,
                          "kolo: cannot run " + std::string(op_type_name(first.type)) + " of '" +
                              name + "'" + where_ + " because rank(s) " + rank_list(joined) +
                              " have joined; only allreduce proceeds while ranks have joined");
  }

  Response r = response_for(first, name);
  if (first.type == OpType::Allgather)
    for (int rank = 0; rank < size_; ++rank) r.rank_first_dims.push_back(p.by_rank[rank]->shape.at(0));
  return r;
}

std::vector<Response> Coordinator::take_ready() {
  // Completed names, in the order they were first submitted.
  std::vector<std::pair<uint64_t, std::string>> ready;
  std::map<std::string, int> group_members_ready;
  // A member whose ranks name groups of different sizes runs at once, as the mismatch it is:
  // waiting for the larger group would wait for a tensor some ranks never submit.
  const auto grouped = [](const Pending& p) {
    const Request& any = submitted_request(p);
    if (any.group.empty()) return false;
    for (const auto& request : p.by_rank)
      if (request && (request->group != any.group || request->group_size != any.group_size)) return false;
    return true;
  };
  for (const auto& [name, p] : pending_) {
    if (!complete(p)) continue;
    ready.push_back({p.sequence, name});
    if (grouped(p)) ++group_members_ready[submitted_request(p).group];
  }
  std::sort(ready.begin(), ready.end());

  // A group runs only when all its members are ready; then its members run together,
  // at the position of its first member.
  std::vector<Response> responses;
  std::set<std::string> groups_emitted;
  for (const auto& [sequence, name] : ready) {
    const Pending& p = pending_.at(name);
    if (!grouped(p)) {
      responses.push_back(build_response(name, p));
      continue;
    }
    const Request& any = submitted_request(p);
    if (group_members_ready[any.group] < any.group_size || groups_emitted.count(any.group)) continue;
    groups_emitted.insert(any.group);
    for (const auto& [s2, member] : ready) {
      const Pending& q = pending_.at(member);
      if (grouped(q) && submitted_request(q).group == any.group) responses.push_back(build_response(member, q));
    }
  }
  for (const Response& r : responses) pending_.erase(r.names.front());
  return responses;
}

Coordinator::StallReport Coordinator::inspect_stalls(Clock::time_point now,
                                                     std::chrono::duration<double> warn_after,
                                                     std::chrono::duration<double> fail_after) {
  StallReport report;
  std::vector<std::string> failed;
  for (auto& [name, p] : pending_) {
    const auto waited = now - p.first_seen;
    const std::vector<int> missing = missing_ranks(p);
    if (missing.empty()) continue;  // a group member waiting for its group
    const std::string seconds =
        std::to_string(static_cast<long>(std::chrono::duration<double>(waited).count()));
    if (fail_after.count() > 0 && waited >= fail_after) {
      const OpType type = submitted_request(p).type;
      report.failures.push_back(error_response(
          name, type, StatusCode::Stalled,
          "kolo: tensor '" + name + "'" + where_ + " was not submitted by rank(s) " + rank_list(missing) +
              " within " + seconds + " s (KOLO_STALL_SHUTDOWN_TIME_SECONDS); failing it"));
      failed.push_back(name);
    } else if (!p.warned && waited >= warn_after) {
      p.warned = true;
      report.warnings.push_back("tensor '" + name + "'" + where_ + " has waited " + seconds +
                                " s for rank(s) " + rank_list(missing) +
                                " to submit it (stalled: is a rank skipping this collective?)");
    }
  }
  // A group runs as one unit, so it fails as one: members that every rank did submit
  // would otherwise wait forever for the member that failed.
  std::set<std::string> failed_groups;
  for (const std::string& name : failed) {
    const Pending& p = pending_.at(name);
    const Request& any = submitted_request(p);
    if (!any.group.empty()) failed_groups.insert(any.group);
  }
  for (const auto& [name, p] : pending_) {
    if (std::find(failed.begin(), failed.end(), name) != failed.end()) continue;
    const Request& any = submitted_request(p);
    if (any.group.empty() || !failed_groups.count(any.group)) continue;
    report.failures.push_back(error_response(
        name, any.type, StatusCode::Stalled,
        "kolo: tensor '" + name + "'" + where_ + " belongs to group '" + any.group +
            "', whose other members were not submitted by every rank in time; failing the group"));
    failed.push_back(name);
  }
  for (const std::string& name : failed) pending_.erase(name);
  return report;
}

}  // namespace kolo
