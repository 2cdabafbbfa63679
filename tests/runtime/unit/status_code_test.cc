// kolo::StatusCode: numbers that stay what they are (the C API and saved logs depend on
// them), names, and KOLO_CHECK (include/kolo/check.h).
#include <catch2/catch.hpp>

#include <string>

#include "kolo/check.h"
#include "kolo/kolo.h"

using kolo::StatusCode;

TEST_CASE("status codes keep their numbers and have their enumerators' names", "[status]") {
  const struct {
    StatusCode code;
    int number;
    const char* name;
  } codes[] = {{StatusCode::Ok, 0, "Ok"},
               {StatusCode::Pending, 1, "Pending"},
               {StatusCode::InvalidArgument, 2, "InvalidArgument"},
               {StatusCode::Mismatch, 3, "Mismatch"},
               {StatusCode::Stalled, 4, "Stalled"},
               {StatusCode::Aborted, 5, "Aborted"},
               {StatusCode::CommFailure, 6, "CommFailure"},
               {StatusCode::IoError, 7, "IoError"},
               {StatusCode::DeviceError, 8, "DeviceError"},
               {StatusCode::Internal, 9, "Internal"},
               {StatusCode::Unsupported, 10, "Unsupported"}};
  for (const auto& c : codes) {
    INFO(c.name);
    CHECK(static_cast<int>(c.code) == c.number);
    CHECK(std::string(kolo::status_code_name(c.code)) == c.name);
  }
  CHECK(std::string(kolo::status_code_name(static_cast<StatusCode>(11))) == "unknown");
}

TEST_CASE("KOLO_CHECK throws its code and message only when the condition fails", "[status]") {
  int messages_built = 0;
  const auto message = [&] {
    ++messages_built;
    return std::string("kolo: cannot read 'x'");
  };
  KOLO_CHECK(1 + 1 == 2, StatusCode::IoError, message());
  CHECK(messages_built == 0);
  try {
    KOLO_CHECK(1 + 1 == 3, StatusCode::IoError, message());
    FAIL("KOLO_CHECK did not throw");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == StatusCode::IoError);
    CHECK(std::string(e.what()) == "kolo: cannot read 'x'");
  }
  CHECK(messages_built == 1);
}
