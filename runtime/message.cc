#include "message.h"

#include <cstring>
#include <type_traits>

namespace kolo {
namespace {

// Little writer/reader pair over a byte string: fixed-width scalars, length-prefixed
// strings and vectors. Messages never leave the job, so no versioning is needed.
class Writer {
 public:
  template <typename T>
  void put(T value) requires std::is_trivially_copyable_v<T> {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes_ += s;
  }
  template <typename T>
  void put(const std::vector<T>& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (const T& x : v) put(x);
  }
  void put(const Shape& shape) {
    put<uint32_t>(static_cast<uint32_t>(shape.size()));
    for (int64_t d : shape) put(d);
  }
  void put(const Device& d) {
    put<int32_t>(static_cast<int32_t>(d.kind));
    put<int32_t>(d.index);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// Everything a Reader takes is checked against the bytes that remain before anything is
// allocated or copied: a damaged message (every count here is 32 bits: up to 4 billion
// entries) must not make a rank allocate gigabytes before it finds the bytes missing.
class Reader {
 public:
  Reader(const std::string& bytes, const char* what) : bytes_(bytes), what_(what) {}
  template <typename T>
  void get(T& value) requires std::is_trivially_copyable_v<T> && (!std::is_enum_v<T>) {
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + pos_, sizeof value);
    pos_ += sizeof value;
  }
  // An enum: only values this build names; anything else is a damaged byte.
  template <typename E>
  void get(E& value, const char* field) requires std::is_enum_v<E> {
    std::underlying_type_t<E> raw{};
    get(raw);
    value = static_cast<E>(raw);
    if (!known(value))
      damaged(std::string(field) + " " + std::to_string(static_cast<int64_t>(raw)) + " is not one this build knows");
  }
  void get(std::string& s) {
    uint32_t n = 0;
    get(n);
    need(n);
    s.assign(bytes_.data() + pos_, n);
    pos_ += n;
  }
  template <typename T>
  void get(std::vector<T>& v, const char* what) {
    v.resize(count(what, min_bytes<T>()));
    for (T& x : v) get(x);
  }
  void get(Shape& shape) {
    std::vector<int64_t> dims;
    get(dims, "shape dimensions");
    shape.assign(dims);
  }
  void get(Device& d) {
    get(d.kind, "device kind");
    get(d.index);
  }
  // A count of entries of at least min_bytes each, bounded by what is left.
  std::size_t count(const char* what, std::size_t min_bytes) {
    uint32_t n = 0;
    get(n);
    if (n > remaining() / min_bytes)
      damaged("claims " + std::to_string(n) + " " + what + " of at least " + std::to_string(min_bytes) +
              " bytes each with " + std::to_string(remaining()) + " bytes left");
    return n;
  }
  void expect_end() const {
    if (remaining() != 0) damaged(std::to_string(remaining()) + " bytes left over after the end");
  }
  [[noreturn]] void damaged(const std::string& why) const {
    throw Error(StatusCode::CommFailure, "kolo: damaged negotiation message (" + std::string(what_) + " of " +
                                             std::to_string(bytes_.size()) + " bytes): " + why);
  }

 private:
  template <typename T>
  static constexpr std::size_t min_bytes() {
    if constexpr (std::is_same_v<T, std::string>) return sizeof(uint32_t);  // the length alone
    else return sizeof(T);
  }
  static bool known(OpType t) { return std::strcmp(op_type_name(t), "unknown") != 0; }
  static bool known(DType d) { return std::strcmp(dtype_name(d), "unknown") != 0; }
  static bool known(ReduceOp o) { return std::strcmp(op_name(o), "unknown") != 0; }
  static bool known(Compression c) { return std::strcmp(compression_name(c), "unknown") != 0; }
  static bool known(StatusCode c) { return std::strcmp(status_code_name(c), "unknown") != 0; }
  static bool known(Device::Kind k) { return k == Device::Kind::CPU || k == Device::Kind::CUDA; }
  static bool known(Response::Kind k) { return k == Response::Kind::Run || k == Response::Kind::Error; }
  static bool known(ProcessSetChange::Action a) {
    return a == ProcessSetChange::Action::Add || a == ProcessSetChange::Action::Remove;
  }

  std::size_t remaining() const { return bytes_.size() - pos_; }
  void need(std::size_t n) const {
    if (n > remaining())
      damaged("truncated: " + std::to_string(n) + " bytes needed at byte " + std::to_string(pos_) + ", " +
              std::to_string(remaining()) + " left");
  }
  const std::string& bytes_;
  const char* what_;
  std::size_t pos_ = 0;
};

void put_request(Writer& w, const Request& r) {
  w.put(r.name);
  w.put(r.type);
  w.put(r.dtype);
  w.put(r.op);
  w.put(r.root);
  w.put(r.prescale);
  w.put(r.postscale);
  w.put(r.compression);
  w.put(r.device);
  w.put(r.shape);
  w.put(r.group);
  w.put(r.group_size);
  w.put(r.process_set_change.action);
  w.put(r.process_set_change.ranks);
  w.put(r.process_set_change.set_id);
}

void get_request(Reader& rd, Request& r) {
  rd.get(r.name);
  rd.get(r.type, "operation type");
  rd.get(r.dtype, "dtype");
  rd.get(r.op, "reduce op");
  rd.get(r.root);
  rd.get(r.prescale);
  rd.get(r.postscale);
  rd.get(r.compression, "compression");
  rd.get(r.device);
  rd.get(r.shape);
  rd.get(r.group);
  rd.get(r.group_size);
  rd.get(r.process_set_change.action, "process set change");
  rd.get(r.process_set_change.ranks, "process set ranks");
  rd.get(r.process_set_change.set_id);
  // num_elements() multiplies the dimensions: they must be sizes, and their product fit.
  int64_t elements = 1;
  for (int64_t d : r.shape)
    if (d < 0 || __builtin_mul_overflow(elements, d, &elements))
      rd.damaged("tensor '" + r.name + "' has the shape " + shape_string(r.shape) +
                 (d < 0 ? ", with a negative dimension" : ", of more elements than 64 bits count"));
}

void put_response(Writer& w, const Response& r) {
  w.put(r.kind);
  w.put(r.type);
  w.put(r.names);
  w.put(r.element_counts);
  w.put(r.dtype);
  w.put(r.op);
  w.put(r.root);
  w.put(r.prescale);
  w.put(r.postscale);
  w.put(r.compression);
  w.put(r.device);
  w.put(r.rank_first_dims);
  w.put(r.error_code);
  w.put(r.error_message);
}

void get_response(Reader& rd, Response& r) {
  rd.get(r.kind, "response kind");
  rd.get(r.type, "operation type");
  rd.get(r.names, "tensor names");
  rd.get(r.element_counts, "element counts");
  rd.get(r.dtype, "dtype");
  rd.get(r.op, "reduce op");
  rd.get(r.root);
  rd.get(r.prescale);
  rd.get(r.postscale);
  rd.get(r.compression, "compression");
  rd.get(r.device);
  rd.get(r.rank_first_dims, "first dimensions");
  rd.get(r.error_code, "status code");
  rd.get(r.error_message);
  // What every rank indexes by tensor when it runs a response.
  if (r.names.empty()) rd.damaged("a response names no tensor");
  if (r.kind == Response::Kind::Run && r.element_counts.size() != r.names.size())
    rd.damaged("a response to run names " + std::to_string(r.names.size()) + " tensors but gives " +
               std::to_string(r.element_counts.size()) + " element counts");
  for (const std::vector<int64_t>* sizes : {&r.element_counts, &r.rank_first_dims})
    for (int64_t n : *sizes)
      if (n < 0) rd.damaged("a response gives a negative size, " + std::to_string(n));
  // Every rank sizes buffers by their sum (the fusion plan, a joined rank's zeros).
  int64_t elements = 0, bytes = 0;
  for (int64_t n : r.element_counts)
    if (__builtin_add_overflow(elements, n, &elements) ||
        __builtin_mul_overflow(elements, static_cast<int64_t>(dtype_size(r.dtype)), &bytes))
      rd.damaged("a response's tensors take more bytes than 64 bits count");
}

// The fewest bytes a request or response can take: every string and vector empty.
template <typename T>
std::size_t min_encoded_bytes(void (*put)(Writer&, const T&)) {
  static const std::size_t bytes = [put] {
    Writer w;
    put(w, T{});
    return w.take().size();
  }();
  return bytes;
}

}  // namespace

const char* op_type_name(OpType type) {
  switch (type) {
    case OpType::Allreduce: return "allreduce";
    case OpType::Allgather: return "allgather";
    case OpType::Broadcast: return "broadcast";
    case OpType::Alltoall: return "alltoall";
    case OpType::Reducescatter: return "reducescatter";
    case OpType::Barrier: return "barrier";
    case OpType::ProcessSet: return "process set change";
  }
  return "unknown";
}

int64_t Request::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Response response_for(const Request& request, std::string name) {
  Response r;
  r.type = request.type;
  r.names.push_back(std::move(name));
  r.element_counts.push_back(request.num_elements());
  r.dtype = request.dtype;
  r.op = request.op;
  r.root = request.root;
  r.prescale = request.prescale;
  r.postscale = request.postscale;
  r.compression = request.compression;
  r.device = request.device;
  return r;
}

Request request_for(const Response& response, std::size_t i) {
  Request q;
  q.name = response.names[i];
  q.type = response.type;
  q.dtype = response.dtype;
  q.op = response.op;
  q.root = response.root;
  q.prescale = response.prescale;
  q.postscale = response.postscale;
  q.compression = response.compression;
  q.device = response.device;
  q.shape = {response.element_counts[i]};
  return q;
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string serialize(const RequestList& list) {
  Writer w;
  w.put<uint32_t>(static_cast<uint32_t>(list.requests.size()));
  for (const Request& r : list.requests) put_request(w, r);
  w.put(list.invalidate_slots);
  w.put<uint8_t>(list.joined ? 1 : 0);
  return w.take();
}

RequestList parse_request_list(const std::string& bytes) {
  Reader rd(bytes, "request list");
  RequestList list;
  list.requests.resize(rd.count("requests", min_encoded_bytes(put_request)));
  for (Request& r : list.requests) get_request(rd, r);
  rd.get(list.invalidate_slots, "invalidated slots");
  uint8_t joined = 0;
  rd.get(joined);
  if (joined > 1) rd.damaged("joined flag " + std::to_string(joined) + " is neither 0 nor 1");
  list.joined = joined != 0;
  rd.expect_end();
  return list;
}

std::string serialize(const ResponseList& list) {
  Writer w;
  w.put(list.invalidate_slots);
  w.put<uint32_t>(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) put_response(w, r);
  w.put<int32_t>(list.last_joined);
  return w.take();
}

ResponseList parse_response_list(const std::string& bytes) {
  Reader rd(bytes, "response list");
  ResponseList list;
  rd.get(list.invalidate_slots, "invalidated slots");
  list.responses.resize(rd.count("responses", min_encoded_bytes(put_response)));
  for (Response& r : list.responses) get_response(rd, r);
  rd.get(list.last_joined);
  rd.expect_end();
  return list;
}

std::string serialize(const Status& status) {
  Writer w;
  w.put(status.code());
  w.put(status.message());
  return w.take();
}

Status parse_status(const std::string& bytes) {
  Reader rd(bytes, "status");
  StatusCode code = StatusCode::Ok;
  std::string message;
  rd.get(code, "status code");
  rd.get(message);
  rd.expect_end();
  return Status(code, std::move(message));
}

}  // namespace kolo
