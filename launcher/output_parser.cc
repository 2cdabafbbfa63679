#include "output_parser.h"

#include <cctype>
#include <optional>

namespace kolo::launcher {
namespace {

struct Tag {
  size_t length = 0;
  int rank = 0;
};

enum class TagMatch { No, Incomplete, Yes };

// "[digits,digits]<stdout>:", "<stderr>:" or "<stddiag>:" at text[0].
TagMatch match_tag(std::string_view text, Tag& tag) {
  size_t i = 0;
  auto digits = [&]() -> std::optional<long> {
    const size_t start = i;
    long value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 9)
      value = value * 10 + (text[i++] - '0');
    if (i == start) return std::nullopt;
    return value;
  };
  auto literal = [&](std::string_view word) -> TagMatch {
    for (char c : word) {
      if (i == text.size()) return TagMatch::Incomplete;
      if (text[i++] != c) return TagMatch::No;
    }
    return TagMatch::Yes;
  };
  if (TagMatch m = literal("["); m != TagMatch::Yes) return m;
  if (!digits()) return i == text.size() ? TagMatch::Incomplete : TagMatch::No;
  if (TagMatch m = literal(","); m != TagMatch::Yes) return m;
  const std::optional<long> rank = digits();
  if (!rank) return i == text.size() ? TagMatch::Incomplete : TagMatch::No;
  if (TagMatch m = literal("]<std"); m != TagMatch::Yes) return m;
  TagMatch stream = TagMatch::No;
  for (std::string_view name : {"out>:", "err>:", "diag>:"}) {
    const size_t at = i;
    stream = literal(name);
    if (stream != TagMatch::No) break;
    i = at;
  }
  if (stream != TagMatch::Yes) return stream;
  tag = {i, static_cast<int>(*rank)};
  return TagMatch::Yes;
}

class MpirunTagParser : public OutputParser {
 public:
  std::vector<OutputPiece> feed(std::string_view bytes) override {
    held_ += bytes;
    std::vector<OutputPiece> pieces;
    size_t pos = 0;
    while (pos < held_.size()) {
      Tag tag;
      if (match_tag(std::string_view(held_).substr(pos), tag) == TagMatch::Yes) {
        rank_ = tag.rank;
        pos += tag.length;
        continue;
      }
      // The text up to the next newline or the next tag, whichever is first.
      size_t end = pos;
      bool waiting_for_more = false;
      for (; end < held_.size() && held_[end] != '\n'; ++end) {
        if (held_[end] != '[') continue;
        const TagMatch m = match_tag(std::string_view(held_).substr(end), tag);
        if (m == TagMatch::Yes) break;
        if (m == TagMatch::Incomplete) {
          waiting_for_more = true;
          break;
        }
      }
      if (end < held_.size() && held_[end] == '\n') {
        pieces.push_back({rank_, held_.substr(pos, end - pos), true});
        rank_ = kLauncherItself;  // an untagged next line is mpirun's own
        pos = end + 1;
      } else if (end < held_.size() && !waiting_for_more) {
        pieces.push_back({rank_, held_.substr(pos, end - pos), false});  // a tag follows
        pos = end;
      } else if (held_.size() - pos > kLongestHeldLine && end > pos) {
        pieces.push_back({rank_, held_.substr(pos, end - pos), false});
        pos = end;
        if (waiting_for_more) break;
      } else {
        break;  // a partial line or tag: wait for more bytes
      }
    }
    held_.erase(0, pos);
    return pieces;
  }

  std::vector<OutputPiece> finish() override {
    std::vector<OutputPiece> pieces = feed("");
    if (!held_.empty()) pieces.push_back({rank_, held_, false});
    held_.clear();
    return pieces;
  }

 private:
  std::string held_;
  int rank_ = kLauncherItself;
};

class SrunLabelParser : public OutputParser {
 public:
  std::vector<OutputPiece> feed(std::string_view bytes) override {
    held_ += bytes;
    std::vector<OutputPiece> pieces;
    size_t pos = 0;
    for (size_t newline; (newline = held_.find('\n', pos)) != std::string::npos; pos = newline + 1)
      pieces.push_back(parse_line(std::string_view(held_).substr(pos, newline - pos), true));
    held_.erase(0, pos);
    if (held_.size() > kLongestHeldLine) pieces.push_back(take_held());
    return pieces;
  }

  std::vector<OutputPiece> finish() override {
    std::vector<OutputPiece> pieces;
    if (!held_.empty()) pieces.push_back(take_held());
    return pieces;
  }

 private:
  OutputPiece take_held() {
    OutputPiece piece = parse_line(held_, false);
    held_.clear();
    return piece;
  }

  // "R: text", R right-aligned to the widest rank number.
  static OutputPiece parse_line(std::string_view line, bool complete) {
    size_t i = line.find_first_not_of(' ');
    const size_t digits_start = i;
    int rank = 0;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) && i - digits_start < 9)
      rank = rank * 10 + (line[i++] - '0');
    if (i == digits_start || i == std::string_view::npos || line.substr(i, 2) != ": ")
      return {kLauncherItself, std::string(line), complete};
    return {rank, std::string(line.substr(i + 2)), complete};
  }

  std::string held_;
};

}  // namespace

std::unique_ptr<OutputParser> make_mpirun_tag_parser() { return std::make_unique<MpirunTagParser>(); }
std::unique_ptr<OutputParser> make_srun_label_parser() { return std::make_unique<SrunLabelParser>(); }

}  // namespace kolo::launcher
