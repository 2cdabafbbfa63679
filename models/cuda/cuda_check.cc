#include "models/cuda/cuda_check.h"

namespace kolo::models::cuda {

void fail(const std::string& library, const char* call, const char* file, int line, const std::string& message) {
  std::string where = file;
  const std::size_t slash = where.rfind("models/");
  if (slash != std::string::npos) where = where.substr(slash);
  throw Error(StatusCode::InvalidArgument,
              "kolo: " + library + " error in " + call + " (" + where + ":" + std::to_string(line) + "): " + message);
}

}  // namespace kolo::models::cuda
