#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "child_process.h"
#include "job_output.h"

using namespace kolo::launcher;
using kolo::launcher_test::read_file;

namespace {

std::string contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  return text;
}

}  // namespace

TEST_CASE("rank lines are echoed with their rank and the launcher's as they are", "[job-output]") {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  {
    JobOutput output({2, "", false, out, err, 20});
    output.add(Stream::Stdout, {0, "hello", true});
    output.add(Stream::Stderr, {1, "oops", true});
    output.add(Stream::Stderr, {kLauncherItself, "mpirun says", true});
  }
  CHECK(contents(out) == "[0]<stdout>:hello\n");
  CHECK(contents(err) == "[1]<stderr>:oops\nmpirun says\n");
  std::fclose(out);
  std::fclose(err);
}

TEST_CASE("the rank shim's start reports are recorded, not echoed", "[job-output]") {
  std::FILE* sink = std::tmpfile();
  JobOutput output({3, "", false, sink, sink, 20});
  output.add(Stream::Stderr, {2, format_start_marker({"node1", 1234, 99}), true});
  output.add(Stream::Stderr, {0, format_start_marker({"node0", 77, 5}), true});
  // Only a whole stderr line counts: a rank printing the words is not a start.
  output.add(Stream::Stdout, {1, format_start_marker({"fake", 1, 1}), true});
  CHECK(output.started_ranks() == 2);
  CHECK(output.ranks_not_started() == std::vector<int>{1});
  CHECK(output.starts().at(2).host == "node1");
  CHECK(output.starts().at(2).pid == 1234);
  CHECK(output.starts().at(2).start_ticks == 99);
  CHECK(contents(sink) == "[1]<stdout>:" + format_start_marker({"fake", 1, 1}) + "\n");
  std::fclose(sink);
}

TEST_CASE("a rank's line split into pieces is echoed once whole, between other ranks' lines",
          "[job-output]") {
  // What Open MPI forwards from a pty under load: "Train\t" and "Loss: 1" and "" as three
  // reads, another rank's line in between.
  std::FILE* out = std::tmpfile();
  {
    JobOutput output({2, "", false, out, out, 20});
    CHECK_FALSE(output.add(Stream::Stdout, {0, "Train\t", false}));
    CHECK(output.add(Stream::Stdout, {1, "other", true}) == OutputPiece{1, "other", true});
    CHECK_FALSE(output.add(Stream::Stdout, {0, "Loss: 1", false}));
    CHECK(output.add(Stream::Stdout, {0, "", true}) == OutputPiece{0, "Train\tLoss: 1", true});
    CHECK_FALSE(output.add(Stream::Stdout, {1, "no newline at the end", false}));
  }  // the job's end echoes what is still held
  CHECK(contents(out) == "[1]<stdout>:other\n[0]<stdout>:Train\tLoss: 1\n[1]<stdout>:no newline at the end\n");
  std::fclose(out);
}

TEST_CASE("a partial line is passed on past kLongestHeldLine", "[job-output]") {
  std::FILE* sink = std::tmpfile();
  JobOutput output({1, "", false, sink, sink, 20});
  const std::string half(kLongestHeldLine / 2 + 1, 'x');
  CHECK_FALSE(output.add(Stream::Stdout, {0, half, false}));
  const std::optional<OutputPiece> passed = output.add(Stream::Stdout, {0, half, false});
  REQUIRE(passed);
  CHECK(passed->text == half + half);
  CHECK_FALSE(passed->line_complete);
  std::fclose(sink);
}

TEST_CASE("a start report split into pieces is still recorded, not echoed", "[job-output]") {
  std::FILE* sink = std::tmpfile();
  JobOutput output({1, "", false, sink, sink, 20});
  const std::string marker = format_start_marker({"node0", 42, 7});
  output.add(Stream::Stderr, {0, marker.substr(0, 5), false});
  output.add(Stream::Stderr, {0, marker.substr(5), true});
  CHECK(output.started_ranks() == 1);
  CHECK(output.starts().at(0).pid == 42);
  CHECK(contents(sink).empty());
  std::fclose(sink);
}

TEST_CASE("a rank's tail keeps its last lines and joins partial pieces", "[job-output]") {
  std::FILE* sink = std::tmpfile();
  JobOutput output({1, "", false, sink, sink, 3});
  for (int i = 0; i < 5; ++i) output.add(Stream::Stdout, {0, "line " + std::to_string(i), true});
  output.add(Stream::Stdout, {0, "par", false});
  output.add(Stream::Stdout, {0, "tial", true});
  CHECK(output.tail(0) == std::vector<std::string>{"<stdout>:line 3", "<stdout>:line 4",
                                                   "<stdout>:partial"});
  CHECK(output.tail(5).empty());
  std::fclose(sink);
}

TEST_CASE("per-rank log files hold each rank's exact stdout and stderr",
          "[job-output]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kolorun-logs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::FILE* sink = std::tmpfile();
  {
    JobOutput output({2, dir.string(), false, sink, sink, 20});
    output.add(Stream::Stderr, {0, format_start_marker({"h", 1, 1}), true});
    output.add(Stream::Stdout, {0, "a", true});
    output.add(Stream::Stdout, {0, "b", false});
    output.add(Stream::Stdout, {0, "c", true});
    output.add(Stream::Stderr, {1, "e", true});
  }
  CHECK(read_file(dir / "rank.0" / "stdout") == "a\nbc\n");
  CHECK_FALSE(std::filesystem::exists(dir / "rank.0" / "stderr"));  // the start report only
  CHECK(read_file(dir / "rank.1" / "stderr") == "e\n");
  std::filesystem::remove_all(dir);
  std::fclose(sink);
}
