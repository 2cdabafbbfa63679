// KOLO_CHECK: the one way kolo's own sources (ops/, runtime/, models/, launcher/) turn a
// failed condition into a kolo::Error. Internal: not installed, and no public header
// includes it; it sits in include/kolo/ because models/ may include public headers only.
//
//   KOLO_CHECK(file.good(), StatusCode::IoError, "kolo: cannot read '" + path + "'");
//
// The message expression is evaluated only when the check fails, so it may build its
// text from the values involved (which tensor, which rank, expected vs got) at no cost
// on the way that succeeds.
#pragma once

#include "kolo/kolo.h"

#define KOLO_CHECK(condition, code, message)                          \
  do {                                                                \
    if (!(condition)) throw ::kolo::Error((code), (message));         \
  } while (0)
