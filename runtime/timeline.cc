#include "timeline.h"

#include <cerrno>
#include <cstring>
#include <string_view>

#include "kolo/check.h"

namespace kolo {

namespace {

// The length of the well-formed UTF-8 sequence at text[at], or 0 where there is none (a
// stray continuation byte, a truncated or overlong sequence, a surrogate, beyond U+10FFFF).
std::size_t utf8_sequence(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  return length;
}

}  // namespace

// A tensor name may hold any bytes; JSON holds UTF-8 text. A byte that is not part of a
// well-formed UTF-8 sequence becomes U+FFFD, so that the file stays valid JSON.
std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 2);
  for (std::size_t at = 0; at < text.size(); ++at) {
    const unsigned char c = static_cast<unsigned char>(text[at]);
    if (c >= 0x80) {
      const std::size_t length = utf8_sequence(text, at);
      if (length == 0) {
        out += "\\ufffd";
      } else {
        out.append(text, at, length);
        at += length - 1;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

Timeline::~Timeline() { close(); }

std::optional<std::string> timeline_file_of(const std::string& path, int rank) {
  static constexpr std::string_view kRank = "{rank}";
  if (path.empty()) return std::nullopt;
  if (path.find(kRank) == std::string::npos) return rank == 0 ? std::optional<std::string>(path) : std::nullopt;
  std::string file = path;
  for (std::size_t at = file.find(kRank); at != std::string::npos; at = file.find(kRank, at))
    file.replace(at, kRank.size(), std::to_string(rank));
  return file;
}

void Timeline::open(const std::string& path, int rank, Clock::time_point origin, bool mark_cycles) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The new file first: a path that cannot be written leaves the running timeline running.
  std::FILE* file = std::fopen(path.c_str(), "w");
  KOLO_CHECK(file != nullptr, StatusCode::IoError,
             "kolo: cannot write the timeline file '" + path + "' (KOLO_TIMELINE): " + std::strerror(errno));
  close_locked();
  file_ = file;
  lanes_.clear();
  pid_ = rank;
  origin_ = origin;
  flushed_ = origin;
  std::fputs("[\n", file_);
  std::fprintf(file_,
               "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
               "\"args\":{\"name\":\"kolo rank %d\"}}",
               pid_, rank);
  std::fprintf(file_,
               ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
               "\"args\":{\"name\":\"fused groups\"}}",
               pid_);
  first_event_ = false;
  mark_cycles_ = mark_cycles;
  enabled_ = true;
}

void Timeline::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  close_locked();
}

void Timeline::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ != nullptr) std::fflush(file_);
  unflushed_ = false;
}

void Timeline::flush_if_written() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ != nullptr && unflushed_) std::fflush(file_);
  unflushed_ = false;
}

void Timeline::close_locked() {
  if (file_ == nullptr) return;
  enabled_ = false;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

// The global set's lanes are named after their tensors; another set's say which set.
int Timeline::lane(int set, const std::string& tensor) {
  const std::string key = std::to_string(set) + "/" + tensor;
  auto [it, inserted] = lanes_.try_emplace(key, static_cast<int>(lanes_.size()) + 1);
  if (inserted) {
    const std::string label = set == 0 ? tensor : tensor + " (process set " + std::to_string(set) + ")";
    std::fprintf(file_,
                 ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                 "\"args\":{\"name\":\"%s\"}}",
                 pid_, it->second, json_escape(label).c_str());
  }
  return it->second;
}

double Timeline::micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void Timeline::write_event(const char* name, int tid, Clock::time_point start,
                           Clock::time_point end, const std::string& args) {
  std::fprintf(file_,
               "%s{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
               "\"args\":{%s}}",
               first_event_ ? "" : ",\n", name, pid_, tid, micros(start), micros(end) - micros(start),
               args.c_str());
  first_event_ = false;
  unflushed_ = true;
  if (end - flushed_ > std::chrono::seconds(1)) {
    std::fflush(file_);
    flushed_ = end;
    unflushed_ = false;
  }
}

void Timeline::phase(int set, const std::string& tensor, const char* phase, Clock::time_point start,
                     Clock::time_point end, const std::string& args) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ == nullptr) return;
  const std::string set_arg = "\"process_set\":" + std::to_string(set);
  write_event(phase, lane(set, tensor), start, end, args.empty() ? set_arg : set_arg + "," + args);
}

void Timeline::fused_group(int set, int64_t group_id, const std::vector<std::string>& tensors,
                           int64_t bytes, Clock::time_point start, Clock::time_point end) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ == nullptr) return;
  std::string args = "\"process_set\":" + std::to_string(set) + ",\"group\":" + std::to_string(group_id) + ",\"bytes\":" +
                     std::to_string(bytes) + ",\"tensors\":[";
  for (std::size_t i = 0; i < tensors.size(); ++i)
    args += (i ? ",\"" : "\"") + json_escape(tensors[i]) + "\"";
  args += "]";
  write_event("FUSED", 0, start, end, args);
}

void Timeline::cycle_start(Clock::time_point when) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ == nullptr || !mark_cycles_) return;
  std::fprintf(file_, "%s{\"name\":\"CYCLE_START\",\"ph\":\"i\",\"s\":\"g\",\"pid\":%d,\"tid\":0,\"ts\":%.3f}",
               first_event_ ? "" : ",\n", pid_, micros(when));
  first_event_ = false;  // a marker alone is not worth a write to the file: it waits for an event
}

}  // namespace kolo
