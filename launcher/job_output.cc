#include "job_output.h"

#include <filesystem>

namespace kolo::launcher {
namespace {

constexpr size_t kLauncherLinesKept = 200;
const char* const kStreamNames[2] = {"stdout", "stderr"};

// fwrite, not printf: a rank's output may hold any bytes, NUL included.
void echo_line(std::FILE* to, const std::string& prefix, const std::string& text) {
  std::fwrite(prefix.data(), 1, prefix.size(), to);
  std::fwrite(text.data(), 1, text.size(), to);
  std::fputc('\n', to);
}

}  // namespace

JobOutput::JobOutput(Settings settings) : settings_(std::move(settings)) {}
JobOutput::~JobOutput() { finish(); }

JobOutput::RankLog& JobOutput::log_for(int rank) { return logs_[rank]; }

std::optional<OutputPiece> JobOutput::add(Stream stream, const OutputPiece& piece) {
  if (piece.rank == kLauncherItself) {
    add_line(stream, piece);
    return piece;
  }
  std::string& open_line = log_for(piece.rank).open_line[static_cast<int>(stream)];
  open_line += piece.text;
  if (!piece.line_complete && open_line.size() <= kLongestHeldLine) return std::nullopt;
  OutputPiece line{piece.rank, std::move(open_line), piece.line_complete};
  open_line.clear();
  add_line(stream, line);
  return line;
}

void JobOutput::add_line(Stream stream, const OutputPiece& line) {
  const int s = static_cast<int>(stream);
  std::FILE* echo = stream == Stream::Stdout ? settings_.out : settings_.err;
  if (line.rank == kLauncherItself) {
    echo_line(echo, "", line.text);
    launcher_lines_.push_back(line.text);
    if (launcher_lines_.size() > kLauncherLinesKept) launcher_lines_.pop_front();
    return;
  }
  RankLog& log = log_for(line.rank);
  if (stream == Stream::Stderr && line.line_complete) {
    if (std::optional<RankStart> start = parse_start_marker(line.text)) {
      starts_[line.rank] = *start;
      if (settings_.verbose)
        std::fprintf(settings_.err, "kolorun: rank %d started on %s (pid %ld)\n", line.rank,
                     start->host.c_str(), start->pid);
      return;
    }
  }
  echo_line(echo, "[" + std::to_string(line.rank) + "]<" + kStreamNames[s] + ">:", line.text);
  log.tail.push_back(std::string("<") + kStreamNames[s] + ">:" + line.text);
  if (log.tail.size() > settings_.tail_lines) log.tail.pop_front();
  write_file(log, line.rank, stream, line);
}

void JobOutput::write_file(RankLog& log, int rank, Stream stream, const OutputPiece& line) {
  if (settings_.log_directory.empty() || log.file_failed) return;
  const int s = static_cast<int>(stream);
  if (!log.files[s]) {
    const std::filesystem::path dir =
        std::filesystem::path(settings_.log_directory) / ("rank." + std::to_string(rank));
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    log.files[s] = std::make_unique<std::ofstream>(dir / kStreamNames[s], std::ios::binary);
    if (error || !*log.files[s]) {
      std::fprintf(settings_.err, "kolorun: cannot write rank %d's log in %s\n", rank,
                   dir.c_str());
      log.file_failed = true;
      return;
    }
  }
  *log.files[s] << line.text;
  if (line.line_complete) *log.files[s] << '\n';
}

void JobOutput::finish() {
  for (auto& [rank, log] : logs_)
    for (int s = 0; s < 2; ++s)
      if (!log.open_line[s].empty()) {
        OutputPiece line{rank, std::move(log.open_line[s]), false};
        log.open_line[s].clear();
        add_line(static_cast<Stream>(s), line);
      }
  flush();
}

void JobOutput::flush() {
  std::fflush(settings_.out);
  std::fflush(settings_.err);
  for (auto& [rank, log] : logs_)
    for (auto& file : log.files)
      if (file) file->flush();
}

std::vector<int> JobOutput::ranks_not_started() const {
  std::vector<int> missing;
  for (int rank = 0; rank < settings_.num_ranks; ++rank)
    if (!starts_.count(rank)) missing.push_back(rank);
  return missing;
}

std::vector<std::string> JobOutput::tail(int rank) const {
  auto it = logs_.find(rank);
  if (it == logs_.end()) return {};
  return {it->second.tail.begin(), it->second.tail.end()};
}

}  // namespace kolo::launcher
