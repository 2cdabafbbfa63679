// A kolo program started by kolorun in the tests: kolo::init() reads the KOLO_
// variables kolorun set, and rank 0 prints the configuration in effect
// (kolo::describe_configuration(), one "KOLO_X = value" line per setting).
#include <cstdio>

#include "kolo/kolo.h"

int main() {
  kolo::init();
  if (kolo::rank() == 0) std::printf("%s", kolo::describe_configuration().c_str());
  kolo::shutdown();
  return 0;
}
