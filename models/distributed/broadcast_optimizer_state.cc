// broadcast_optimizer_state: every rank continues from root's optimizer state
// (hvd.broadcast_optimizer_state). The state is a map of named float vectors and scalars
// whose names and sizes only root knows (a rank before its first step has none), so root
// first broadcasts a layout (names, sizes, scalars), then each vector on its own.
#include <cstring>
#include <set>

#include "kolo/models.h"
#include "models/distributed/agreement.h"
#include "models/distributed/handles.h"

namespace kolo::models {
using namespace distributed_detail;
namespace {

const std::string kWhat = "broadcast_optimizer_state";

// The layout as bytes: [u64 count] then per tensor [u64 name length][name][u64 values],
// then [u64 count] and per scalar [u64 name length][name][f64 value]. Native byte order:
// every rank runs the same build on the same kind of machine.
class LayoutWriter {
 public:
  explicit LayoutWriter(const OptimizerState& state) {
    put(uint64_t(state.tensors.size()));
    for (const auto& [name, values] : state.tensors) {
      put(name);
      put(uint64_t(values.size()));
    }
    put(uint64_t(state.scalars.size()));
    for (const auto& [name, value] : state.scalars) {
      put(name);
      put(value);
    }
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  template <typename T>
  void put(T value) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof value);
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  void put(const std::string& s) {
    put(uint64_t(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> bytes_;
};

// Reads a layout back into a state whose tensors have the right sizes (zero-filled, to be
// broadcast into). Throws kolo::Error if the bytes end early.
class LayoutReader {
 public:
  explicit LayoutReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  OptimizerState read() {
    OptimizerState state;
    for (uint64_t n = get<uint64_t>(); n > 0; --n) {
      std::string name = get_string();
      const uint64_t values = get<uint64_t>();
      if (values > (uint64_t(1) << 40)) fail();
      state.tensors[name].resize(values);
    }
    for (uint64_t n = get<uint64_t>(); n > 0; --n) {
      std::string name = get_string();
      state.scalars[name] = get<double>();
    }
    if (at_ != bytes_.size()) fail();
    return state;
  }

 private:
  template <typename T>
  T get() {
    T value;
    take(&value, sizeof value);
    return value;
  }
  std::string get_string() {
    const uint64_t n = get<uint64_t>();
    if (n > bytes_.size() - at_) fail();
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return s;
  }
  void take(void* out, std::size_t n) {
    if (n > bytes_.size() - at_) fail();
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }
  [[noreturn]] void fail() {
    throw Error(StatusCode::CommFailure, "kolo: " + kWhat + ": root's state layout arrived damaged (" +
                                             std::to_string(bytes_.size()) + " bytes)");
  }
  const std::vector<uint8_t>& bytes_;
  std::size_t at_ = 0;
};

// Optimizer kind and its parameters' names and sizes: these must agree before any rank
// tries to load root's state.
int64_t fingerprint(const Optimizer& optimizer) {
  Fingerprint f;
  f.add(optimizer.name());
  for (const Parameter* p : optimizer.parameters()) {
    f.add(p->name);
    f.add(p->value.numel());
  }
  return f.value();
}

// Root's layout on every rank (root's own state on root).
std::vector<uint8_t> broadcast_layout(const OptimizerState& state, int root) {
  std::vector<uint8_t> layout;
  if (rank() == root) layout = LayoutWriter(state).bytes();
  std::vector<int64_t> length{static_cast<int64_t>(layout.size())};
  broadcast("kolo.broadcast_optimizer_state/layout_bytes", view(length), root);
  layout.resize(static_cast<std::size_t>(length[0]));
  broadcast("kolo.broadcast_optimizer_state/layout", view(layout), root);
  return layout;
}

}  // namespace

void broadcast_optimizer_state(Optimizer& optimizer, int root) {
  require_initialized(kWhat);
  check_root(root, kWhat);
  const std::vector<int> differing =
      ranks_differing_from_root(fingerprint(optimizer), root, "kolo.broadcast_optimizer_state/kind");
  if (!differing.empty())
    throw Error(StatusCode::InvalidArgument,
                "kolo: " + kWhat + ": rank(s) " + rank_list(differing) + " have another kind of optimizer (this one: " +
                    optimizer.name() + ") or other parameters than root rank " + std::to_string(root) +
                    "; nothing was changed");

  // The ranks agree on the parameters, so this fails everywhere or nowhere.
  std::set<std::string> names;
  for (const Parameter* p : optimizer.parameters())
    if (!names.insert(p->name).second)
      throw Error(StatusCode::InvalidArgument, "kolo: " + kWhat + ": two parameters are named '" + p->name + "'");

  OptimizerState state;
  if (rank() == root) state = optimizer.state();
  const std::vector<uint8_t> layout = broadcast_layout(state, root);
  if (rank() != root) state = LayoutReader(layout).read();
  std::vector<Handle> handles;
  for (auto& [name, values] : state.tensors)
    if (!values.empty())
      handles.push_back(broadcast_async("kolo.broadcast_optimizer_state/" + name, view(values), root));
  wait_all_or_throw(handles, kWhat);

  // load_state checks before it changes anything; every rank learns whether all could.
  std::string error;
  if (rank() != root) {
    try {
      optimizer.load_state(state);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  const std::vector<int> failed =
      ranks_differing_from_root(error.empty() ? 0 : 1, root, "kolo.broadcast_optimizer_state/loaded");
  if (!failed.empty())
    throw Error(StatusCode::InvalidArgument, "kolo: " + kWhat + ": rank(s) " + rank_list(failed) +
                                                 " could not load root rank " + std::to_string(root) + "'s state" +
                                                 (error.empty() ? std::string() : ": " + error));
}

}  // namespace kolo::models
