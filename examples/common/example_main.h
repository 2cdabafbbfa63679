// The frame of an example's main(): kolo::init(), the body, kolo::shutdown(), with every
// exception turned into one clear message and exit status 1 instead of an abort.
//
//   int main(int argc, char** argv) { return kolo::examples::example_main("mnist", argc, argv, train_mnist); }
#pragma once

#include <functional>
#include <string>

namespace kolo::examples {

int example_main(const std::string& program, int argc, char** argv, const std::function<int(int, char**)>& body);

// Prints "<program>: error: <message>" to stderr, naming this rank unless it is rank 0.
void report_error(const std::string& message);

}  // namespace kolo::examples
