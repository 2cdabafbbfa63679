// Ending a job's processes on other hosts through the remote agent (remote_kill.h). The
// "other host" is this machine, reached through stand-ins for ssh that run the command
// line in a login shell as ssh does: what gets killed must be exactly what was asked.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "child_process.h"
#include "kolo/kolo.h"
#include "remote_kill.h"

using namespace kolo::launcher;
using kolo::launcher_test::ChildProcess;
using kolo::launcher_test::process_alive;
using kolo::launcher_test::test_environment;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

using namespace std::chrono_literals;

const std::string kFakeSsh = FAKE_SSH;

bool gone_within(pid_t pid, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (process_alive(pid))
    if (std::chrono::steady_clock::now() > deadline) return false;
    else std::this_thread::sleep_for(20ms);
  return true;
}

}  // namespace

TEST_CASE("the processes to end on other hosts are the ranks there and their parents, once each",
          "[remote-kill]") {
  const std::map<int, RankStart> starts = {
      {0, {"here", 10, 1, 5, 1}},
      {1, {"node1", 20, 2, 30, 3}},
      {2, {"node1", 21, 4, 30, 3}},  // the same daemon started ranks 1 and 2
      {3, {"node2", 40, 0, 1, 9}},   // start unknown, and orphaned (init is its parent)
  };
  const RemoteProcesses processes = remote_processes(starts, "here");
  CHECK(processes.size() == 1);
  CHECK(processes.at("node1") == std::vector<RemoteProcess>{{30, 3, "the parent of ranks 1, 2"},
                                                            {20, 2, "rank 1"},
                                                            {21, 4, "rank 2"}});
}

TEST_CASE("the remote agent is Open MPI's plm_rsh_agent, as mpirun would pick it", "[remote-kill]") {
  LaunchOptions options;
  CHECK(remote_agent(options, {"OMPI_MCA_plm_rsh_agent=/bin/sh -x", "PATH=/usr/bin:/bin"}) ==
        std::vector<std::string>{"/bin/sh", "-x"});
  // Alternatives: the first found on PATH.
  CHECK(remote_agent(options, {"OMPI_MCA_plm_rsh_agent=kolo-no-such-agent -x : sh -e", "PATH=/usr/bin:/bin"}) ==
        std::vector<std::string>{"sh", "-e"});
  // Open MPI's default, "ssh : rsh", with neither on PATH: ssh, which then says it is missing.
  CHECK(remote_agent(options, {"PATH=/nonexistent"}) == std::vector<std::string>{"ssh"});
  // --mca on mpirun's command line wins over the environment, as in Open MPI.
  options.mpi_args = {"--mca", "plm_rsh_agent", "/bin/true", "--mca", "btl", "tcp,self"};
  CHECK(remote_agent(options, {"OMPI_MCA_plm_rsh_agent=/bin/sh", "PATH=/bin"}) ==
        std::vector<std::string>{"/bin/true"});
}

TEST_CASE("the remote kill command is one quoted shell line after the agent and the host", "[remote-kill]") {
  const std::vector<std::string> argv =
      remote_kill_command({"ssh", "-x"}, "node1", {{4242, 99, "rank 2"}, {4100, 7, "the parent of rank 2"}});
  REQUIRE(argv.size() == 4);
  CHECK(argv[0] == "ssh");
  CHECK(argv[1] == "-x");
  CHECK(argv[2] == "node1");
  // ssh joins its words for the login shell there: one pair of quotes, nothing in it that
  // a login shell (sh, bash, zsh, csh) would still expand.
  const std::string& line = argv[3];
  CHECK_THAT(line, StartsWith("sh -c 'k(){ s=$(cat /proc/$1/stat 2>/dev/null)"));
  CHECK_THAT(line, EndsWith("};k 4242 99;k 4100 7;echo kolorun-remote-kill done'"));
  CHECK(std::count(line.begin(), line.end(), '\'') == 2);
  CHECK(line.find('!') == std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
  // A host name the agent would take for one of its options is refused.
  for (const std::string host : {"-oProxyCommand=touch /tmp/x", ""}) {
    CAPTURE(host);
    CHECK_THROWS_MATCHES(remote_kill_command({"ssh"}, host, {{1, 1, "rank 0"}}), kolo::Error,
                         Catch::Predicate<kolo::Error>([](const kolo::Error& e) {
                           return e.code() == kolo::StatusCode::InvalidArgument &&
                                  std::string(e.what()).find("not a host name") != std::string::npos;
                         }));
  }
}

TEST_CASE("through the agent, a process is killed only while its start time matches", "[remote-kill]") {
  // fake_ssh.sh hands the line to sh; the other stand-in to bash, as a login shell would.
  const std::vector<std::vector<std::string>> agents = {
      {kFakeSsh}, {"/bin/bash", "-c", "shift; exec /bin/bash -c \"$*\"", "bash-login"}};
  for (const std::vector<std::string>& agent : agents) {
    CAPTURE(agent[0]);
    ChildProcess sleeper({"/bin/sleep", "60"}, test_environment());
    const long pid = sleeper.pid();
    unsigned long long ticks = 0;
    for (int i = 0; i < 100 && ticks == 0; ++i, std::this_thread::sleep_for(10ms)) ticks = process_start_ticks(pid);
    REQUIRE(ticks != 0);

    // Another start time: a reused pid, which must be left alone.
    const RemoteProcesses reused = {{"elsewhere", {{pid, ticks + 1, "rank 2"}}}};
    std::vector<RemoteKillOutcome> outcomes = kill_remote_processes(agent, reused, 10);
    REQUIRE(outcomes.size() == 1);
    CHECK(outcomes[0].reached);
    CHECK(outcomes[0].killed.empty());
    CHECK(process_alive(pid));
    CHECK(describe_remote_kill(outcomes[0], reused.at("elsewhere"), "ssh").empty());

    // A pid that has no process, and the sleeper itself.
    const RemoteProcesses same = {{"elsewhere", {{999999999, 5, "rank 1"}, {pid, ticks, "rank 2"}}}};
    outcomes = kill_remote_processes(agent, same, 10);
    REQUIRE(outcomes.size() == 1);
    CHECK(outcomes[0].reached);
    REQUIRE(outcomes[0].killed.size() == 1);
    CHECK(outcomes[0].killed[0].name == "sleep");
    CHECK(gone_within(static_cast<pid_t>(pid), 2s));
    CHECK(describe_remote_kill(outcomes[0], same.at("elsewhere"), "ssh") ==
          "kolorun: rank 2 (host elsewhere, pid " + std::to_string(pid) +
              ", sleep) was still running: killed it (SIGKILL, through ssh)\n");
  }
}

TEST_CASE("a host the agent cannot reach is named with what may still run there", "[remote-kill]") {
  const RemoteProcesses processes = {{"node1", {{4242, 99, "rank 2"}, {4100, 7, "the parent of rank 2"}}}};
  const std::vector<RemoteProcess>& asked = processes.at("node1");
  struct Case {
    std::vector<std::string> agent;
    std::string failure;
  };
  const std::vector<Case> cases = {
      {{"/bin/sh", "-c", "echo 'ssh: connect to host node1 port 22: No route to host' >&2; exit 255", "ssh"},
       "exit code 255: ssh: connect to host node1 port 22: No route to host"},
      {{"/bin/sh", "-c", "sleep 30", "ssh"}, "no answer within 0.5 s"},
      {{"kolo-no-such-agent"}, "cannot find 'kolo-no-such-agent' on PATH"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.agent);
    const auto started = std::chrono::steady_clock::now();
    const std::vector<RemoteKillOutcome> outcomes = kill_remote_processes(c.agent, processes, 0.5);
    CHECK(std::chrono::steady_clock::now() - started < 3s);  // a hanging agent is killed at the bound
    REQUIRE(outcomes.size() == 1);
    CHECK_FALSE(outcomes[0].reached);
    CHECK(outcomes[0].failure == c.failure);
    CHECK(describe_remote_kill(outcomes[0], asked, "ssh") ==
          "kolorun: could not reach node1 through ssh (" + c.failure +
              "); left there, unless they have ended: rank 2 (pid 4242), the parent of rank 2 (pid 4100)\n");
  }
}

TEST_CASE("the agent's report is read line by line, only its end says the host ran it all", "[remote-kill]") {
  const std::vector<RemoteProcess> asked = {{4242, 99, "rank 2"}, {4100, 7, "the parent of rank 2"}};
  RemoteKillOutcome outcome = read_remote_kill_report(
      "node1", asked, "Welcome to node1\nkolorun-remote-kill killed 4100 orted\nkolorun-remote-kill done\n", "", 0, 5);
  CHECK(outcome.reached);
  REQUIRE(outcome.killed.size() == 1);
  CHECK(outcome.killed[0].process == asked[1]);
  CHECK(outcome.killed[0].name == "orted");

  // Cut short after one kill: that kill is still reported, the rest is named as left.
  outcome = read_remote_kill_report("node1", asked, "kolorun-remote-kill killed 4242 my program\n",
                                    "Connection to node1 closed by remote host.\n", 255, 5);
  CHECK_FALSE(outcome.reached);
  CHECK(outcome.failure == "exit code 255: Connection to node1 closed by remote host.");
  CHECK(describe_remote_kill(outcome, asked, "ssh") ==
        "kolorun: rank 2 (host node1, pid 4242, my program) was still running: killed it (SIGKILL, through ssh)\n"
        "kolorun: could not reach node1 through ssh (exit code 255: Connection to node1 closed by remote host.); "
        "left there, unless they have ended: the parent of rank 2 (pid 4100)\n");

  // A pid it was not asked about is not taken for one of the job's.
  outcome = read_remote_kill_report("node1", asked, "kolorun-remote-kill killed 1 init\nkolorun-remote-kill done\n",
                                    "", 0, 5);
  CHECK(outcome.killed.empty());
}
