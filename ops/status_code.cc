// kolo::status_code_name: the names of kolo's error classes, for messages and logs (the
// C API's kolo_status_name gives the same text).
#include "kolo/kolo.h"

namespace kolo {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::Ok: return "Ok";
    case StatusCode::Pending: return "Pending";
    case StatusCode::InvalidArgument: return "InvalidArgument";
    case StatusCode::Mismatch: return "Mismatch";
    case StatusCode::Stalled: return "Stalled";
    case StatusCode::Aborted: return "Aborted";
    case StatusCode::CommFailure: return "CommFailure";
    case StatusCode::IoError: return "IoError";
    case StatusCode::DeviceError: return "DeviceError";
    case StatusCode::Internal: return "Internal";
    case StatusCode::Unsupported: return "Unsupported";
  }
  return "unknown";
}

}  // namespace kolo
