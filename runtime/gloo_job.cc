#include "gloo_job.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "kolo/check.h"

namespace kolo {
namespace {

// KOLO_<name>, else HOROVOD_<name>.
std::optional<std::string> job_variable(const std::string& name) {
  for (const char* prefix : {"KOLO_", "HOROVOD_"})
    if (const char* value = std::getenv((prefix + name).c_str())) return std::string(value);
  return std::nullopt;
}

std::string required(const std::string& name) {
  std::optional<std::string> value = job_variable(name);
  // Under horovodrun --gloo only the HOROVOD_ address is set: its rendezvous is not kolo's.
  const bool horovods = std::getenv("KOLO_GLOO_RENDEZVOUS_ADDR") == nullptr;
  KOLO_CHECK(value && !value->empty(), StatusCode::InvalidArgument,
             std::string("kolo: ") + (horovods ? "HOROVOD_" : "KOLO_") + "GLOO_RENDEZVOUS_ADDR is set, but KOLO_" +
                 name + " is not: a Gloo job's workers get both from kolorun (kolorun --gloo, or an elastic kolorun)" +
                 (horovods ? "; horovodrun --gloo's rendezvous is not kolo's: start the job with kolorun --gloo" : ""));
  return *value;
}

int integer(const std::string& name, const std::string& text, int min, int max) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  KOLO_CHECK(!text.empty() && *end == '\0' && value >= min && value <= max, StatusCode::InvalidArgument,
             "kolo: bad value KOLO_" + name + "='" + text + "': expected a whole number from " + std::to_string(min) +
                 " to " + std::to_string(max));
  return int(value);
}

}  // namespace

std::optional<GlooJob> gloo_job_from_environment() {
  std::optional<std::string> address = job_variable("GLOO_RENDEZVOUS_ADDR");
  if (!address || address->empty()) return std::nullopt;
  GlooJob job;
  job.server.host = *address;
  job.server.port = integer("GLOO_RENDEZVOUS_PORT", required("GLOO_RENDEZVOUS_PORT"), 1, 65535);
  std::optional<rendezvous::Secret> secret = rendezvous::secret_from_hex(required("GLOO_SECRET"));
  KOLO_CHECK(secret, StatusCode::InvalidArgument,
             "kolo: bad value KOLO_GLOO_SECRET: expected 64 hex digits, as kolorun gives every worker");
  job.server.secret = *secret;
  job.host = required("HOSTNAME");
  job.slot = integer("LOCAL_RANK", required("LOCAL_RANK"), 0, 1 << 20);
  job.iface = job_variable("GLOO_IFACE").value_or("");
  job.elastic = job_variable("ELASTIC").value_or("0") == "1";
  if (std::optional<std::string> t = job_variable("ELASTIC_TIMEOUT"); t && job.elastic)
    job.place_timeout_seconds = integer("ELASTIC_TIMEOUT", *t, 1, 1 << 30);
  return job;
}

Topology topology_from_hosts(const std::vector<std::string>& host_of_rank, int rank) {
  Topology t;
  t.rank = rank;
  t.size = int(host_of_rank.size());
  std::map<std::string, std::vector<int>> ranks_of_host;
  for (int q = 0; q < t.size; ++q) ranks_of_host[host_of_rank[size_t(q)]].push_back(q);
  const std::vector<int>& mine = ranks_of_host.at(host_of_rank.at(size_t(rank)));
  t.local_size = int(mine.size());
  t.local_rank = int(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  // The cross ranks of this rank: local rank `local_rank` of each node that has one, nodes
  // in the order of their lowest rank.
  std::vector<std::pair<int, int>> nodes;  // (lowest rank, size)
  for (const auto& [host, ranks] : ranks_of_host) nodes.emplace_back(ranks.front(), int(ranks.size()));
  std::sort(nodes.begin(), nodes.end());
  t.cross_size = 0;
  for (const auto& [lowest, size] : nodes) {
    if (size <= t.local_rank) continue;
    if (lowest == mine.front()) t.cross_rank = t.cross_size;
    ++t.cross_size;
  }
  t.homogeneous = std::all_of(nodes.begin(), nodes.end(), [&](const auto& n) { return n.second == nodes[0].second; });
  return t;
}

}  // namespace kolo
