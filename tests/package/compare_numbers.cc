// compare_numbers: are two text files the same up to rounding? Both are read as
// whitespace-separated tokens; tokens that parse as numbers must agree within
// |a - b| <= atol + rtol * |b|, every other token exactly. Used by package.embed to
// compare a data-parallel run's weights with a single-process run's.
//
//   compare_numbers <a> <b> <rtol> <atol>     exit 0: same; 1: different; 2: bad usage
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

bool read_tokens(const char* path, std::vector<std::string>& tokens) {
  std::ifstream in(path);
  if (!in) return false;
  for (std::string t; in >> t;) tokens.push_back(t);
  return !in.bad();
}

bool parse(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

}  // namespace

int main(int argc, char** argv) {
  double rtol = 0, atol = 0;
  if (argc != 5 || !parse(argv[3], rtol) || !parse(argv[4], atol)) {
    std::fprintf(stderr, "usage: compare_numbers <a> <b> <rtol> <atol>\n");
    return 2;
  }
  std::vector<std::string> a, b;
  for (auto [path, tokens] : {std::pair{argv[1], &a}, std::pair{argv[2], &b}})
    if (!read_tokens(path, *tokens)) {
      std::fprintf(stderr, "compare_numbers: cannot read '%s'\n", path);
      return 2;
    }
  if (a.size() != b.size()) {
    std::printf("different: %zu tokens in %s, %zu in %s\n", a.size(), argv[1], b.size(), argv[2]);
    return 1;
  }

  std::size_t numbers = 0, worst = 0;
  double worst_excess = -INFINITY, largest_difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double x = 0, y = 0;
    if (!parse(a[i], x) || !parse(b[i], y)) {
      if (a[i] == b[i]) continue;
      std::printf("different: token %zu is '%s' in %s, '%s' in %s\n", i, a[i].c_str(), argv[1],
                  b[i].c_str(), argv[2]);
      return 1;
    }
    ++numbers;
    const double difference = std::fabs(x - y);
    // NaN differences compare false everywhere: treat them as infinitely far off.
    const double excess =
        std::isnan(difference) ? INFINITY : difference - (atol + rtol * std::fabs(y));
    if (!std::isnan(difference) && difference > largest_difference) largest_difference = difference;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  const bool same = numbers == 0 || worst_excess <= 0;
  std::printf("%s: %zu numbers, largest difference %.3g", same ? "same" : "different", numbers,
              largest_difference);
  if (numbers > 0)
    std::printf(" (worst: token %zu, %s vs %s)", worst, a[worst].c_str(), b[worst].c_str());
  std::printf(" with rtol %g, atol %g\n", rtol, atol);
  return same ? 0 : 1;
}
