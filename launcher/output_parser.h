// Splits mpirun's or srun's output streams back into the ranks' lines.
//
// Why parse tags rather than mpirun --output-filename: with --output-filename Open MPI's
// daemon on each host writes that host's ranks' files on that host, so kolorun could
// not read a remote rank's last lines; srun has no equivalent that also echoes to the
// terminal. Every rank's output already flows back through mpirun/srun to kolorun, so
// kolorun reads it there: `mpirun --tag-output` puts "[job,R]<stdout>:" before each
// piece, `srun --label` puts "R: " before each line. kolorun echoes each line with a
// uniform "[R]<stdout>:" prefix, keeps the last lines of every rank for failure reports,
// and writes --output-filename's per-rank files itself, all on the launching host.
//
// One catch: mpirun tags each chunk it reads, so a rank's partial line (no newline yet)
// is followed directly by another tag. A tag is therefore looked for anywhere in the
// stream, not only at line starts; a rank printing a literal "[1,2]<stdout>:" would
// confuse the attribution of that one line, nothing more.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kolo::launcher {

inline constexpr int kLauncherItself = -1;  // output of mpirun/srun, not of a rank

// A rank's partial line is held back until its newline; past this size it is passed on
// anyway, so that a rank printing without newlines cannot grow kolorun's memory.
inline constexpr size_t kLongestHeldLine = 64 * 1024;

struct OutputPiece {
  int rank = kLauncherItself;
  std::string text;           // without the newline
  bool line_complete = true;  // false: the rank's line continues in a later piece
  bool operator==(const OutputPiece&) const = default;
};

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // Bytes as they come from one pipe; returns the pieces that are complete so far.
  virtual std::vector<OutputPiece> feed(std::string_view bytes) = 0;
  // End of the stream: whatever is held back.
  virtual std::vector<OutputPiece> finish() = 0;
};

std::unique_ptr<OutputParser> make_mpirun_tag_parser();
std::unique_ptr<OutputParser> make_srun_label_parser();

}  // namespace kolo::launcher
