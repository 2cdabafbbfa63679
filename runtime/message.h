// What ranks say to each other during negotiation. A Request is one rank's description
// of one named operation; the coordinator (rank 0) answers with Responses that every
// rank executes in the same order. Both travel as compact binary messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kolo/kolo.h"
#include "shape.h"

namespace kolo {

// ProcessSet: adding or removing a process set (Request::process_set_change), a
// collective of the global set; the runtime runs it, not the executor (runtime.h).
enum class OpType : uint8_t { Allreduce, Allgather, Broadcast, Alltoall, Reducescatter, Barrier, ProcessSet };
const char* op_type_name(OpType type);

// What an OpType::ProcessSet request changes.
struct ProcessSetChange {
  enum class Action : uint8_t { Add, Remove };
  Action action = Action::Add;
  std::vector<int32_t> ranks;  // Add: the new set's ranks, in the global set
  int32_t set_id = 0;          // Remove: the set's id

  bool operator==(const ProcessSetChange&) const = default;
};

struct Request {
  std::string name;
  OpType type = OpType::Allreduce;
  DType dtype = DType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::None;
  Device device;
  Shape shape;
  // Grouped allreduce: every member carries the group's key (its first member's name)
  // and size, so the coordinator releases the members together.
  std::string group;
  int32_t group_size = 0;
  ProcessSetChange process_set_change;  // OpType::ProcessSet only

  int64_t num_elements() const;
  bool operator==(const Request&) const = default;
};

struct Response {
  enum class Kind : uint8_t { Run, Error };
  Kind kind = Kind::Run;
  OpType type = OpType::Allreduce;
  // One name for most operations; several for a fused allreduce.
  std::vector<std::string> names;
  // Element count of each tensor, so that a rank that has joined (and holds no tensor of
  // its own) can still take part with zeros.
  std::vector<int64_t> element_counts;
  DType dtype = DType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::None;
  // The first submitter's device. Ranks agree on its kind only: each rank runs on the
  // device of its own tensors.
  Device device;
  // Allgather: each rank's first dimension. Reducescatter/alltoall: unused.
  std::vector<int64_t> rank_first_dims;
  StatusCode error_code = StatusCode::Ok;
  std::string error_message;

  bool operator==(const Response&) const = default;
};

// One rank's contribution to a negotiation round that needs names (the slow path).
struct RequestList {
  std::vector<Request> requests;
  std::vector<uint32_t> invalidate_slots;  // response-cache slots whose parameters changed
  bool joined = false;
};

// The coordinator's answer, executed in order by every rank.
struct ResponseList {
  std::vector<uint32_t> invalidate_slots;  // applied before the responses
  std::vector<Response> responses;
  int32_t last_joined = -1;  // the rank that joined last, once one has (Coordinator::last_joined())
};

// The one-tensor response that runs `request` (its parameters, named `name`), and the
// request a rank without a tensor of its own (joined) records for tensor i of a response.
Response response_for(const Request& request, std::string name);
Request request_for(const Response& response, std::size_t i);

std::string serialize(const RequestList& list);
RequestList parse_request_list(const std::string& bytes);
std::string serialize(const ResponseList& list);
ResponseList parse_response_list(const std::string& bytes);

// A status as a message of its own (rank 0 telling every rank why a collective set-up
// failed): the code travels as a checked field, not as a byte of the text.
std::string serialize(const Status& status);
Status parse_status(const std::string& bytes);  // CommFailure on a damaged message

// "[2, 3]" for messages.
std::string shape_string(const Shape& shape);

}  // namespace kolo
