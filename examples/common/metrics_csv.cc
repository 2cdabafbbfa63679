#include "common/metrics_csv.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "kolo/kolo.h"

namespace kolo::examples {
namespace {

constexpr const char* kHeader = "epoch,steps,seconds,lr,loss,acc,val_acc,images_per_s";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw kolo::Error(kolo::StatusCode::IoError,
                    "metrics CSV " + path + ": " + what + " (" + std::strerror(errno) + ")");
}

// The rows of an existing file whose epoch is at most `last_epoch`.
std::vector<std::string> rows_up_to(const std::string& path, int64_t last_epoch) {
  std::vector<std::string> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line == kHeader) continue;
    try {
      if (std::stoll(line) <= last_epoch) rows.push_back(line);
    } catch (const std::exception&) {
      // Not a row of ours: leave it out.
    }
  }
  return rows;
}

}  // namespace

MetricsCsv::MetricsCsv(std::string path, int64_t completed_epochs) : path_(std::move(path)) {
  if (path_.empty()) return;
  const std::vector<std::string> kept = completed_epochs > 0 ? rows_up_to(path_, completed_epochs)
                                                             : std::vector<std::string>{};
  std::ofstream out(path_, std::ios::trunc);
  out << kHeader << '\n';
  for (const std::string& row : kept) out << row << '\n';
  if (!out.flush()) fail(path_, "cannot write");
}

void MetricsCsv::append(const EpochReport& r) {
  if (path_.empty()) return;
  std::ofstream out(path_, std::ios::app);
  char row[256];
  std::snprintf(row, sizeof row, "%lld,%lld,%.3f,%.6g,%.6f,%.6f,%.6f,%.1f\n", static_cast<long long>(r.epoch),
                static_cast<long long>(r.steps), r.seconds, r.lr, r.loss, r.acc, r.val_acc, r.images_per_s);
  out << row;
  if (!out.flush()) fail(path_, "cannot append a row");
}

}  // namespace kolo::examples
