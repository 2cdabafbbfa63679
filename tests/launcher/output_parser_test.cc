#include <catch2/catch.hpp>

#include "output_parser.h"

using namespace kolo::launcher;

namespace {

using Pieces = std::vector<OutputPiece>;

Pieces parse_all(OutputParser& parser, const std::vector<std::string>& chunks) {
  Pieces pieces;
  for (const std::string& chunk : chunks) {
    Pieces more = parser.feed(chunk);
    pieces.insert(pieces.end(), more.begin(), more.end());
  }
  Pieces rest = parser.finish();
  pieces.insert(pieces.end(), rest.begin(), rest.end());
  return pieces;
}

// What `mpirun --tag-output -np 2` printed on stdout when both ranks wrote a line and then
// a partial line (captured from Open MPI 4.1.4): the partial line is followed directly
// by the next tag.
const std::string kMpirunStdout =
    "[1,0]<stdout>:hello from 0\n"
    "[1,0]<stdout>:partial[1,1]<stdout>:hello from 1\n"
    "[1,1]<stdout>:partial";

const Pieces kMpirunPieces = {{0, "hello from 0", true},
                              {0, "partial", false},
                              {1, "hello from 1", true},
                              {1, "partial", false}};

}  // namespace

TEST_CASE("mpirun tags give each piece its rank, partial lines included", "[output]") {
  auto parser = make_mpirun_tag_parser();
  CHECK(parse_all(*parser, {kMpirunStdout}) == kMpirunPieces);
}

TEST_CASE("mpirun output split anywhere into chunks parses the same", "[output]") {
  for (size_t split = 0; split <= kMpirunStdout.size(); ++split) {
    auto parser = make_mpirun_tag_parser();
    INFO("split at " << split);
    CHECK(parse_all(*parser, {kMpirunStdout.substr(0, split), kMpirunStdout.substr(split)}) ==
          kMpirunPieces);
  }
  std::vector<std::string> bytes;
  for (char c : kMpirunStdout) bytes.emplace_back(1, c);
  auto parser = make_mpirun_tag_parser();
  CHECK(parse_all(*parser, bytes) == kMpirunPieces);
}

TEST_CASE("untagged lines are mpirun's own and brackets in a rank's text are text", "[output]") {
  auto parser = make_mpirun_tag_parser();
  const Pieces pieces = parse_all(
      *parser, {"[1,12]<stderr>:array [1,2] and [3,4]<stdout> x\n",
                "--------\n  Process name: [[9249,1],1]\n",
                "[2,7]<stddiag>:diag\n"});
  CHECK(pieces == Pieces{{12, "array [1,2] and [3,4]<stdout> x", true},
                         {kLauncherItself, "--------", true},
                         {kLauncherItself, "  Process name: [[9249,1],1]", true},
                         {7, "diag", true}});
}

TEST_CASE("a rank printing without newlines is passed on past 64 KiB", "[output]") {
  auto parser = make_mpirun_tag_parser();
  const std::string blob(100 * 1024, 'x');
  const Pieces pieces = parser->feed("[1,3]<stdout>:" + blob);
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].rank == 3);
  CHECK(pieces[0].text == blob);
  CHECK_FALSE(pieces[0].line_complete);
}

TEST_CASE("srun labels: right-aligned rank numbers, srun's own lines unlabelled", "[output]") {
  auto parser = make_srun_label_parser();
  const Pieces pieces = parse_all(*parser, {" 3: hello\n10: x: y\n", "srun: error: node1: task 1: Exi",
                                            "ted with exit code 3\n 0: no newline"});
  CHECK(pieces == Pieces{{3, "hello", true},
                         {10, "x: y", true},
                         {kLauncherItself, "srun: error: node1: task 1: Exited with exit code 3", true},
                         {0, "no newline", false}});
}
