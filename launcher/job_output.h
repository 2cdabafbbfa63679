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
#include <optional>
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

  // Takes one piece of a rank's output. A rank's partial line is held back until the
  // rest of it arrives, so that it is echoed, recorded and filed as one line: Open MPI
  // forwards a rank's output as it reads it from a pty, which splits lines at tabs and
  // newlines under load. Returns the line this piece completes, if any (past
  // kLongestHeldLine a partial line is passed on as it is).
  std::optional<OutputPiece> add(Stream stream, const OutputPiece& piece);
  // Writes out what is buffered; partial lines stay held.
  void flush();
  // End of the job: the ranks' held partial lines too, without a newline in the files.
  void finish();

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
    std::string open_line[2];  // per stream: a line whose newline has not come yet
    std::unique_ptr<std::ofstream> files[2];
    bool file_failed = false;
  };
  RankLog& log_for(int rank);
  void add_line(Stream stream, const OutputPiece& line);
  void write_file(RankLog& log, int rank, Stream stream, const OutputPiece& line);

  Settings settings_;
  std::map<int, RankLog> logs_;
  std::map<int, RankStart> starts_;
  std::deque<std::string> launcher_lines_;
};

}  // namespace kolo::launcher
