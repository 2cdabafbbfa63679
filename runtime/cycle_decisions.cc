#include "cycle_decisions.h"

namespace kolo {

bool cacheable(OpType type) { return type != OpType::Allgather && type != OpType::ProcessSet; }

std::vector<Response> plan_cached(const ResponseCache& cache, const std::vector<uint64_t>& ready,
                                  const FusionOptions& fusion, bool named) {
  FusionPlan plan(fusion);
  for_each_slot(ready, [&](uint32_t slot) {
    const Request& params = cache.at(slot);
    plan.add(params, named ? params.name : std::string());
  });
  return plan.take();
}

std::vector<uint32_t> record_in_cache(ResponseCache& cache, const std::vector<Response>& responses,
                                      const std::function<Request(const Response&, std::size_t)>& request_of) {
  std::vector<uint32_t> evicted;
  for (const Response& r : responses) {
    if (r.kind != Response::Kind::Run || !cacheable(r.type)) continue;
    for (std::size_t i = 0; i < r.names.size(); ++i)
      if (auto slot = cache.put(request_of(r, i))) evicted.push_back(*slot);
  }
  return evicted;
}

}  // namespace kolo
