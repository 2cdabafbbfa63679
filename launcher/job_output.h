// Where the ranks' output goes once output_parser.h has split it: echoed to kolorun's
// stdout/stderr as "[R]<stdout>:line", the last lines of each rank kept for the failure
// report, per-rank files for --output-filename, and the rank shim's start reports
// (rank_exec.h) taken out of the stream and recorded.
#pragma once

#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "output_parser.h"
#include "rank_exec.h"

namespace kolo::launcher {

enum class Stream { Stdout, Stderr };

class JobOutput {
 public:
  struct Settings {
    int num_ranks = 0;
    std::string log_directory;  // --output-filename; empty: no files
    bool verbose = false;       // announce each rank's start
    std::FILE* out = stdout;
    std::FILE* err = stderr;
    size_t tail_lines = 20;
  };
  explicit JobOutput(Settings settings);
  ~JobOutput();

  void add(Stream stream, const OutputPiece& piece);
  void flush();

  int started_ranks() const { return static_cast<int>(starts_.size()); }
  std::vector<int> ranks_not_started() const;
  const std::map<int, RankStart>& starts() const { return starts_; }
  // The rank's last lines, each as "<stdout>:text" or "<stderr>:text".
  std::vector<std::string> tail(int rank) const;
  // mpirun's or srun's own last lines (its error messages name the failed rank).
  const std::deque<std::string>& launcher_lines() const { return launcher_lines_; }

 private:
  struct RankLog {
    std::deque<std::string> tail;
    bool last_piece_open[2] = {false, false};  // per stream: the line continues
    std::unique_ptr<std::ofstream> files[2];
    bool file_failed = false;
  };
  RankLog& log_for(int rank);
  void write_file(RankLog& log, int rank, Stream stream, const OutputPiece& piece);

  Settings settings_;
  std::map<int, RankLog> logs_;
  std::map<int, RankStart> starts_;
  std::deque<std::string> launcher_lines_;
};

}  // namespace kolo::launcher
