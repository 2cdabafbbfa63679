// The command line of the LibTorch MNIST example: the constants of PyTorch's C++ example
// as flags, plus limits on the data so that a test run is short (usage() lists them).
#pragma once

#include <cstdint>
#include <string>

struct Options {
  std::string data_root = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist
  int64_t train_batch_size = 64;
  int64_t test_batch_size = 1000;
  int64_t epochs = 10;
  int64_t log_interval = 10;  // batches between two progress lines
  double learning_rate = 0.01;  // of one process; kolo's runs scale it by the number of ranks
  int64_t train_limit = 0;      // the first N training images only (0: all 60000)
  int64_t test_limit = 0;       // the first N test images only (0: all 10000)
  bool help = false;
};

const char* usage();
// Throws std::invalid_argument naming the flag when the command line is wrong.
Options parse_options(int argc, char** argv);
