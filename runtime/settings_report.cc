#include "settings_report.h"

#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

#include "ignored_settings.h"
#include "logging.h"
#include "ops/gpu_path.h"
#include "ops/mpi_backend.h"

namespace kolo {
namespace {

EnvironmentVariables process_environment_variables() {
  EnvironmentVariables variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t equals = text.find('=');
    if (equals != std::string::npos) variables.emplace_back(text.substr(0, equals), text.substr(equals + 1));
  }
  return variables;
}

// Rank 0 gets every rank's text, by rank; the other ranks get nothing.
std::vector<std::string> gather_at_rank_0(const std::string& text, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank == 0 ? size : 0);
  ops::check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm), "MPI_Gather (settings)");
  std::vector<int> offsets(lengths.size());
  std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
  std::string all(rank == 0 ? std::accumulate(lengths.begin(), lengths.end(), std::size_t{0}) : 0, '\0');
  ops::check_mpi(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                             MPI_CHAR, 0, comm),
                 "MPI_Gatherv (settings)");
  std::vector<std::string> texts;
  for (std::size_t r = 0; r < lengths.size(); ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

}  // namespace

void report_ignored_settings(const Config& own, const Config& in_effect, MPI_Comm comm) {
  const EnvironmentVariables environment = process_environment_variables();
  const std::string effective = in_effect.describe();
  const std::vector<std::string> overridden =
      gather_at_rank_0(overridden_lines(own.describe(), effective, environment), comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank != 0) return;
  const BuildFacts build{.has_cuda = ops::make_cuda_parts() != nullptr};
  std::vector<std::string> lines = ignored_setting_warnings(environment, in_effect, build);
  for (std::string& line : overridden_setting_warnings(effective, overridden)) lines.push_back(std::move(line));
  for (const std::string& line : lines) KOLO_LOG(Warning) << line;
}

}  // namespace kolo
