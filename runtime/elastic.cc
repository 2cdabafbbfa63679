// kolo/elastic.h: what a worker of an elastic job asks kolorun, and the State's commit.
#include "kolo/elastic.h"

#include "gloo_job.h"

namespace kolo::elastic {

bool is_elastic() {
  const std::optional<GlooJob> job = gloo_job_from_environment();
  return job && job->elastic;
}

bool hosts_changed() {
  const std::optional<GlooJob> job = gloo_job_from_environment();
  const int64_t round = current_gloo_round();
  if (!job || !job->elastic || round == 0) return false;
  rendezvous::Client client(job->server);
  return client.hosts_changed(job->host, job->slot, round);
}

void reset() {
  shutdown();
  init();
}

void State::commit() {
  save();
  check_host_updates();
}

// Every rank must throw at the same step, so the ranks agree: any rank that heard of a
// change makes every rank throw (a max over the ranks).
void State::check_host_updates() {
  if (!is_elastic()) return;
  std::vector<int32_t> changed{hosts_changed() ? 1 : 0};
  // wait(): bounded by the runtime (a lost rank fails it with CommFailure).
  const Status s = allreduce_async("kolo.elastic.hosts_changed", view(changed), {ReduceOp::Max}).wait();
  if (!s.ok()) throw Error(s.code(), s.message());
  if (changed[0] != 0) throw HostsUpdatedInterrupt();
}

void State::register_reset_callbacks(std::vector<std::function<void()>> callbacks) {
  reset_callbacks_.insert(reset_callbacks_.end(), callbacks.begin(), callbacks.end());
}

void State::on_reset() {
  for (const std::function<void()>& callback : reset_callbacks_) callback();
}

}  // namespace kolo::elastic
