// The main of the test programs that have none of their own (kolo_catch_main).
#include "support/catch_session.h"

int main(int argc, char** argv) { return kolo_test::run_catch(argc, argv); }
