// "Did you mean ...?": the known name nearest to a misspelt one, by edit distance. For
// kolo's variables (ignored_settings.cc) and kolorun's flags (launcher/options.cc), which
// is why it is header-only: kolorun links no runtime code.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace kolo {

// Levenshtein distance: the fewest insertions, deletions and substitutions from a to b.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate nearest to `name` (the first of equals) at most `max_edits` away; "" if none is.
inline std::string closest_name(std::string_view name, const std::vector<std::string>& candidates,
                                std::size_t max_edits) {
  std::string best;
  std::size_t best_distance = max_edits + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) best = candidate, best_distance = distance;
  }
  return best;
}

}  // namespace kolo
