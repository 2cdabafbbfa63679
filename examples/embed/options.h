// The command line of the embed example (see usage() for the flags).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

struct Options {
  int samples = 4096;  // the whole data set; each rank trains on samples / ranks of them
  int features = 10;
  int hidden = 16;
  int steps = 300;     // full-batch gradient-descent steps
  float learning_rate = 0.5f;
  // Initial weights; unset: a different random seed in every process, as many programs
  // do (kolo's broadcast of rank 0's weights then matters). --subcomm: group g uses seed + g.
  std::optional<uint32_t> seed;
  int log_every = 50;
  bool own_mpi = false;  // the program initialises MPI itself; kolo runs on MPI_COMM_WORLD
  bool subcomm = false;  // the program initialises MPI and gives kolo half of the world
  std::string save;      // rank 0 writes the trained weights there (text)
  bool help = false;
};

const char* usage();
// Throws std::invalid_argument naming the flag when the command line is wrong.
Options parse_options(int argc, char** argv);
