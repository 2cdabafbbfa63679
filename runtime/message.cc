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

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  void get(T& value) requires std::is_trivially_copyable_v<T> {
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + pos_, sizeof value);
    pos_ += sizeof value;
  }
  void get(std::string& s) {
    uint32_t n = 0;
    get(n);
    need(n);
    s.assign(bytes_.data() + pos_, n);
    pos_ += n;
  }
  template <typename T>
  void get(std::vector<T>& v) {
    uint32_t n = 0;
    get(n);
    v.resize(n);
    for (T& x : v) get(x);
  }
  void get(Shape& shape) {
    std::vector<int64_t> dims;
    get(dims);
    shape.assign(dims);
  }
  void get(Device& d) {
    int32_t kind = 0;
    get(kind);
    get(d.index);
    d.kind = static_cast<Device::Kind>(kind);
  }

 private:
  void need(std::size_t n) const {
    if (pos_ + n > bytes_.size())
      throw Error(StatusCode::CommFailure, "kolo: truncated negotiation message");
  }
  const std::string& bytes_;
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
}

void get_request(Reader& rd, Request& r) {
  rd.get(r.name);
  rd.get(r.type);
  rd.get(r.dtype);
  rd.get(r.op);
  rd.get(r.root);
  rd.get(r.prescale);
  rd.get(r.postscale);
  rd.get(r.compression);
  rd.get(r.device);
  rd.get(r.shape);
  rd.get(r.group);
  rd.get(r.group_size);
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
  rd.get(r.kind);
  rd.get(r.type);
  rd.get(r.names);
  rd.get(r.element_counts);
  rd.get(r.dtype);
  rd.get(r.op);
  rd.get(r.root);
  rd.get(r.prescale);
  rd.get(r.postscale);
  rd.get(r.compression);
  rd.get(r.device);
  rd.get(r.rank_first_dims);
  rd.get(r.error_code);
  rd.get(r.error_message);
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
  Reader rd(bytes);
  RequestList list;
  uint32_t n = 0;
  rd.get(n);
  list.requests.resize(n);
  for (Request& r : list.requests) get_request(rd, r);
  rd.get(list.invalidate_slots);
  uint8_t joined = 0;
  rd.get(joined);
  list.joined = joined != 0;
  return list;
}

std::string serialize(const ResponseList& list) {
  Writer w;
  w.put(list.invalidate_slots);
  w.put<uint32_t>(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) put_response(w, r);
  return w.take();
}

ResponseList parse_response_list(const std::string& bytes) {
  Reader rd(bytes);
  ResponseList list;
  rd.get(list.invalidate_slots);
  uint32_t n = 0;
  rd.get(n);
  list.responses.resize(n);
  for (Response& r : list.responses) get_response(rd, r);
  return list;
}

}  // namespace kolo
