// A Catch matcher for a kolo::Error's StatusCode (and, optionally, part of its message):
//   CHECK_THROWS_MATCHES(read_hostfile("/nonexistent"), kolo::Error,
//                        HasCode(StatusCode::IoError, "cannot read"));
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "kolo/kolo.h"

namespace kolo_test {

inline Catch::Matchers::Generic::PredicateMatcher<kolo::Error> HasCode(kolo::StatusCode code,
                                                                       const std::string& part = "") {
  return Catch::Matchers::Predicate<kolo::Error>(
      [code, part](const kolo::Error& e) {
        return e.code() == code && std::string(e.what()).find(part) != std::string::npos;
      },
      std::string("is a kolo::Error with code ") + kolo::status_code_name(code) +
          (part.empty() ? "" : " and a message containing '" + part + "'"));
}

}  // namespace kolo_test
