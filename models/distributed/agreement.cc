#include "models/distributed/agreement.h"

#include <cstring>

#include "kolo/check.h"
#include "kolo/kolo.h"

namespace kolo::models::distributed_detail {

std::vector<int> ranks_differing_from_root(int64_t value, int root, const std::string& name) {
  std::vector<int64_t> mine{value};
  const Handle h = allgather_async(name, view(mine));
  const Status s = h.wait();
  if (!s.ok()) throw Error(s.code(), "kolo: " + name + ": " + s.message());
  const TensorView all = h.output();
  // kolo's own allgather handed back a wrong result: a bug, not a failed link.
  KOLO_CHECK(all.dtype == DType::Int64 && all.num_elements() == size(), StatusCode::Internal,
             "kolo: " + name + ": the gather returned " + std::to_string(all.num_elements()) + " values for " +
                 std::to_string(size()) + " ranks");
  const auto* values = static_cast<const int64_t*>(all.data);
  std::vector<int> differing;
  for (int r = 0; r < size(); ++r)
    if (values[r] != values[root]) differing.push_back(r);
  return differing;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

void check_root(int root, const std::string& what) {
  if (root < 0 || root >= size())
    throw Error(StatusCode::InvalidArgument, "kolo: " + what + ": root " + std::to_string(root) +
                                                 " is not a rank (size " + std::to_string(size()) + ")");
}

void Fingerprint::add(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash_ = (hash_ ^ p[i]) * 1099511628211ull;
}

void Fingerprint::add(const std::string& s) {
  add(static_cast<int64_t>(s.size()));  // "ab"+"c" and "a"+"bc" must differ
  add(s.data(), s.size());
}

}  // namespace kolo::models::distributed_detail
