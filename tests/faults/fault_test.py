#!/usr/bin/env python3
"""Breaks a running kolo job and checks that every process of it ends, in bounded time, with
one clear line saying why (runtime/watchdog.h, docs/launcher.md "Failures").

    fault_test.py LAUNCHER FAULT --loop EXE --work DIR [--mpirun MPIRUN --mpirun-flags "..."]
                  [--kolorun EXE] [--mnist EXE [--mnist-args "..."]] [--netns STATE] [--slurm STATE] [--whole-node]
                  [--kolo-timeout S]

The job: 3 ranks of fault_loop (or of examples/mnist with --mnist) with
KOLO_CONTROL_TIMEOUT_SECONDS=S, KOLO_DATA_TIMEOUT_SECONDS=S (S=5 unless --kolo-timeout) and
KOLO_FAILURE_GRACE_SECONDS=2.
Once every rank is under way, rank 2 gets FAULT:
  kill   SIGKILL
  stop   SIGSTOP (alive, but answers nothing)
  cut    its host's link goes down: with --netns (the namespace hosts of tools/cluster),
         ranks 0, 1 on node0 and rank 2 on node1, whose eth0 is taken down (and put back up
         at the end); with --slurm too, the SLURM cluster of the namespace hosts
         (slurm-up.sh --netns), where SLURM's traffic has its own link (mgmt0): eth0, the
         ranks' data link, goes down, and with --whole-node mgmt0 as well
Or rank 2 breaks itself at an exact point (fault_loop's MPI profiling layer, fault_pmpi.cc),
the fault's time being when it says so:
  stop-in-add       SIGSTOP inside its 20th MPI_Comm_split for a process set, while every
                    rank adds and removes the set {0, 1} in a loop (KOLO_DYNAMIC_PROCESS_SETS)
  stop-in-init      SIGSTOP inside kolo::init(), in the split for the static set {0, 1}
  hang-after-shutdown  after 200 iterations it never shuts kolo down nor calls MPI_Finalize:
                    the others wait in MPI_Finalize until KOLO_CONTROL_TIMEOUT_SECONDS
Or no fault, a healthy job that is only slow (slow-allgather, slow-alltoall,
slow-reducescatter): with --netns, every host's link shaped to 40 Mbit/s
(tools/cluster/shape.sh), the data timeout 2 s, one such call of tens of MiB per rank must
take at least three data timeouts, complete with correct values on every rank, and the job
exit 0 with no FATAL line.
LAUNCHER: mpirun (plain, as a user runs it), kolorun, srun (plain srun on the SLURM cluster
of --slurm), kolorun-srun (kolorun's srun path on that cluster).

Checks:
  - every process of the job ends: the ranks (by the pids they print), the launcher and
    whatever it started, the ranks' parents (slurmstepd), and on the namespace hosts every
    process that appeared there after the launch; each is watched by pid and start time,
    so only processes this test started are ever looked at or killed;
  - the time from the fault to the last of them gone is within
    KOLO_CONTROL_TIMEOUT_SECONDS + 15 s (+ KOLO_DATA_TIMEOUT_SECONDS for a cut link);
  - the launcher exits non-zero;
  - one clear line names rank 2: kolo's "[kolo R] FATAL: ...; rank 2 did not answer a roll
    call", or the launcher's report of rank 2's death; no rank prints kolo's line twice;
    under kolorun also kolorun's own summary naming rank 2.
Prints "fault-time: CASE SECONDS s bound BOUND s" and when each process ended.

Who notices a cut link first decides how the job ends. kolorun gives mpirun's daemons a TCP
keepalive that notices it in about 11 s (launcher/command.h). With kolo's timeouts longer
than that (--kolo-timeout 20), mpirun notices first ("ORTE has lost communication with a
remote daemon") and ends the ranks it can reach; the clear line is then kolorun's, naming the
lost host and its ranks. With shorter ones, kolo ends the ranks first and mpirun's abort
waits on the cut-off host's daemon: kolorun kills mpirun after --kill-after-failure; plain
mpirun has no keepalive and waits there for minutes. Either way, Open MPI's daemon (orted)
on the cut-off host, and the shell that started it, may run on (in some runs its own
keepalive ends it) until the link comes back or TCP gives up (about 15 minutes): mpirun
cannot reach it. kolorun reaches it through the remote agent (OMPI_MCA_plm_rsh_agent, the
namespace hosts' rsh, which does not cross the cut link, as a management network would
not) and kills it by pid (launcher/remote_kill.h): under kolorun nothing may be left. Under
plain mpirun these are measured and printed as "left running (Open MPI, expected)", then
killed; anything else left fails. The watch ends 5 s after the last other process has gone.

Under srun, with only the data link cut, SLURM still reaches node1: kolo's MPI_Abort makes
srun end the step on both nodes and nothing may be left. With --whole-node, node1 is cut
off from slurmctld and srun too (measured, SLURM 22.05): srun gives up on node1 ("Timed
out waiting for job step to complete") about 14 s after the cut, rank 2 ends itself
(kolo's watchdog, 16 s), but node1's slurmstepd stays until the link comes back: it
retries its step-completion message to slurmctld every 60 s, without end, by design
("Prevent orphan job step if slurmctld is down", src/slurmd/slurmstepd/mgr.c), and no
setting changes that. It is measured and printed as "left running (SLURM 22.05,
expected)", then killed; anything else left fails.

Exit 77 (CTest SKIP) with the reason when the machine cannot run the case: no namespace
hosts or SLURM cluster (their set-up test says why), or a cut link on the SLURM cluster of
the loopback (--slurm without --netns), where no link of one node can be cut.
"""
import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
from cluster_test import SKIP, check, fail, fashion_subset, require_cluster, skip  # noqa: E402

RANKS = 3
VICTIM = 2
GRACE = 2  # KOLO_FAILURE_GRACE_SECONDS
LEFTOVER_WATCH = 5  # seconds the expected leftovers are watched after everything else has gone
START_BOUND = 90  # seconds for every rank to be under way (2 busy cores)
RANK_LINE = re.compile(r"rank (\d+) pid (\d+) host (\S+)")
KOLORUN_START = re.compile(r"kolorun: rank (\d+) started on (\S+) \(pid (\d+)\)")
KOLO_FATAL = re.compile(r"\[kolo (\d+)\] FATAL: .*$", re.M)


# Faults rank VICTIM gives itself at an exact point: fault_loop's options, and its line that
# says it has (the fault's time).
SELF_FAULTS = {
    "stop-in-add": (["--process-sets", "--stop-in-split", "20"],
                    rf"rank {VICTIM} stops itself inside MPI_Comm_split for a process set$"),
    "stop-in-init": (["--static-sets", "--stop-in-split", "1"],
                     rf"rank {VICTIM} stops itself inside MPI_Comm_split for a process set$"),
    "hang-after-shutdown": (["--iterations", "200", "--hang-after-shutdown"], rf"rank {VICTIM} hangs after the loop$"),
}
# Healthy jobs that are only slow: the collective, MiB per rank (about 8-11 s at 40 Mbit/s,
# three ranks on two hosts: tests/faults/CMakeLists.txt), the link's rate and the data
# timeout (a short one, so that the call takes at least three of them).
SLOW_CALLS = {"slow-allgather": ("allgather", 16), "slow-alltoall": ("alltoall", 48),
              "slow-reducescatter": ("reducescatter", 48)}
SLOW_RATE, SLOW_DATA_TIMEOUT, SLOW_BOUND = "40mbit", 2, 120
SLOW_LINE = re.compile(r"^(?:\d+: |\[\d+\]<std\w+>:)?rank (\d+) (\w+) of \S+ MiB took ([\d.]+) s: (\w+)$", re.M)


def kolo_settings(timeout, fault=""):
    settings = {"KOLO_CONTROL_TIMEOUT_SECONDS": f"{timeout:g}", "KOLO_DATA_TIMEOUT_SECONDS": f"{timeout:g}",
                "KOLO_FAILURE_GRACE_SECONDS": str(GRACE)}
    if fault == "stop-in-add":
        settings["KOLO_DYNAMIC_PROCESS_SETS"] = "1"
    return settings


def bound_seconds(fault, timeout):
    """KOLO_CONTROL_TIMEOUT_SECONDS + 15 s, + KOLO_DATA_TIMEOUT_SECONDS for a cut link."""
    return timeout + 15 + (timeout if fault == "cut" else 0)


# ---- processes, by pid and start time --------------------------------------------------------

def stat_of(pid):
    """(state, ppid, start ticks, command name) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19]), name


def netns_inode(pid):
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


class Process:
    def __init__(self, pid, what):
        stat = stat_of(pid)
        self.pid, self.what = pid, what
        self.name = stat[3] if stat else ""
        self.start = stat[2] if stat else None
        self.netns = netns_inode(pid)
        self.gone_after = None  # seconds after the fault

    def running(self):
        stat = stat_of(self.pid)
        return stat is not None and stat[2] == self.start and stat[0] not in "ZX"

    def kill(self):
        if self.running():
            os.kill(self.pid, signal.SIGKILL)


def descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = stat_of(int(entry))
            if stat:
                children.setdefault(stat[1], []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def netns_pids(state):
    tag = open(os.path.join(state, "env.sh")).read().split("KOLO_TOOL_NETNS_TAG=")[1].split()[0]
    pids = set()
    for host in ("node0", "node1"):
        out = subprocess.run(["ip", "netns", "pids", f"{tag}-{host}"], stdout=subprocess.PIPE, text=True).stdout
        pids.update(int(p) for p in out.split())
    return tag, pids


# ---- the job ---------------------------------------------------------------------------------

class Job:
    """The launcher with its output read on a thread, each line with its arrival time."""

    def __init__(self, cmd, env):
        print("+ " + " ".join(shlex.quote(w) for w in cmd), flush=True)
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.lines, self.lock = [], threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))

    def text(self):
        with self.lock:
            return "\n".join(line for _, line in self.lines)


def ranks_under_way(job, mnist, fault):
    """{rank: (pid, host)} once every rank is running its loop (mnist: training; a fault rank
    VICTIM gives itself: every rank has started and VICTIM has said it is broken), else None."""
    text = job.text()
    if fault in SELF_FAULTS:
        ranks = {int(r): (int(p), h) for r, p, h in RANK_LINE.findall(text)}
        said = re.search(SELF_FAULTS[fault][1], text, re.M)
        return ranks if len(ranks) == RANKS and said else None
    if mnist:
        ranks = {int(r): (int(p), h) for r, h, p in KOLORUN_START.findall(text)}
        going = re.search(r"^epoch 1/", re.sub(r"^\[\d+\]<std\w+>:", "", text, flags=re.M), re.M)
        return ranks if len(ranks) == RANKS and going else None
    ranks = {int(r): (int(p), h) for r, p, h in RANK_LINE.findall(text)}
    if len(ranks) < RANKS:
        return None
    for r in ranks:
        if len(re.findall(rf"rank {r} iter \d+", text)) < 2:
            return None
    return ranks


def command(args, env):
    if args.mnist:
        program = [args.mnist, "--epochs", "200", "--threads", "1", "--progress", "off", "--data-dir",
                   fashion_subset(args.work)] + shlex.split(args.mnist_args)
    elif args.fault in SLOW_CALLS:
        call, mib = SLOW_CALLS[args.fault]
        program = [args.loop, "--slow", call, "--mib", str(mib)]
    else:
        program = [args.loop, "--seconds", "120"] + SELF_FAULTS.get(args.fault, ([], ""))[0]
    kolorun_flags = ["--verbose"] if args.mnist else []
    if args.launcher == "mpirun":
        if args.netns:
            forwarded = [w for name in kolo_settings(args.kolo_timeout, args.fault) for w in ("-x", name)]
            return [os.path.join(args.netns, "mpirun"), "-np", str(RANKS), "-H", "node0:2,node1:1"] + forwarded + program
        return [args.mpirun] + shlex.split(args.mpirun_flags) + ["-np", str(RANKS)] + program
    if args.launcher == "kolorun":
        if args.netns:
            env["KOLO_MPIRUN"] = os.path.join(args.netns, "mpirun")
            env["OMPI_MCA_plm_rsh_agent"] = os.path.join(args.netns, "rsh")  # for kolorun's remote kill
            return [args.kolorun, "-np", str(RANKS), "-H", "node0:2,node1:1"] + kolorun_flags + program
        # 3 ranks on this machine's cores, which may be fewer.
        return [args.kolorun, "-np", str(RANKS), "--oversubscribe"] + kolorun_flags + program
    # With --netns too, the SLURM cluster runs on the namespace hosts (slurm-up.sh --netns):
    # srun and kolorun run on node0, through the cluster's launch command.
    on_node0 = [os.path.join(args.slurm, "launch")] if args.netns else []
    if args.launcher == "srun":
        return on_node0 + ["srun", "-N", "2", "-n", str(RANKS), "--label"] + program
    return on_node0 + [args.kolorun, "--launcher", "srun", "-np", str(RANKS), "--mpi-args", "-N 2"] + \
        kolorun_flags + program


def environment(args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "KOLO_", "OMPI_"))}
    env.update(kolo_settings(args.kolo_timeout, args.fault))
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if args.slurm:
        env["SLURM_CONF"] = os.path.join(args.slurm, "slurm.conf")
    return env


def wait_for_idle_nodes(slurm, env, seconds=90):
    """After a cut on the SLURM cluster of the namespace hosts: until every node is idle again,
    so that the next test gets its nodes at once (the controller may still be ending the job
    on the node that was cut off, or have set it DOWN)."""
    ctl = os.path.join(slurm, "ctl")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        states = subprocess.run([ctl, "sinfo", "-h", "-N", "-o", "%T"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True).stdout.split()
        if states and all(state == "idle" for state in states):
            return
        time.sleep(1)
    print(f"warning: the SLURM nodes are not all idle {seconds} s after the link came back: {' '.join(states)}")


def clear_line_problems(output, launcher, fault, victim_host):
    """What is missing from the output: the line naming rank VICTIM, kolorun's summary."""
    problems = []
    fatal_names_victim = [m for m in KOLO_FATAL.finditer(output)
                          if re.search(rf"; ranks? (\d+, )*{VICTIM}(, \d+)* did not answer a roll call", m.group(0))]
    launcher_names_victim = re.search(
        rf"process rank {VICTIM} with PID \d+ on node \S+ exited on signal 9"
        rf"|^srun: error: \S+: task {VICTIM}: Killed", output, re.M)
    # A cut link splits the job in two, and either side may end it first: rank VICTIM's line
    # naming every other rank is as clear (srun then reports rank VICTIM's exit code).
    fatal_from_cut_off_side = [m for m in KOLO_FATAL.finditer(output) if int(m.group(1)) == VICTIM and re.search(
        r"; ranks? " + ", ".join(str(r) for r in range(RANKS) if r != VICTIM) + " did not answer a roll call",
        m.group(0))]
    lost_victims_host = re.search(r"^ORTE has lost communication with a remote daemon", output, re.M) and \
        re.search(rf"^\s*Remote daemon: \[\[\d+,\d+\],\d+\] on node {victim_host}$", output, re.M)
    if fault == "kill":
        if not (fatal_names_victim or launcher_names_victim):
            problems.append(f"no line names rank {VICTIM} as killed (the launcher's report or kolo's FATAL line)")
    elif fault == "cut":
        if not (fatal_names_victim or lost_victims_host or fatal_from_cut_off_side):
            problems.append(f"no line names rank {VICTIM} as not answering (kolo's FATAL line) or its host as lost "
                            f"(mpirun's report), nor the other ranks from rank {VICTIM}'s side")
    elif fault == "hang-after-shutdown":
        # The others' (mpirun: their MPI_Finalize waits for it) or its own (srun: theirs does not).
        if not re.search(r"^(\d+: |\[\d+\]<std\w+>:)?\[kolo \d+\] FATAL: kolo: (MPI_Finalize waited .* for ranks that "
                         r"left kolo's shutdown round but never finalised MPI|the other ranks shut kolo down .* but this "
                         r"rank has not called kolo::shutdown\(\))", output, re.M):
            problems.append("no kolo FATAL line says that a rank never finalised MPI after kolo's shutdown round")
    elif not fatal_names_victim:
        problems.append(f"no kolo FATAL line names rank {VICTIM} as not answering")
    for rank in range(RANKS):
        # Each at the start of a line, behind the launcher's label: kolorun's summary quotes a
        # failed rank's last lines, indented, and may quote the line again.
        count = len(re.findall(rf"^(\d+: |\[\d+\]<std\w+>:)?\[kolo {rank}\] FATAL: ", output, re.M))
        if count > 1:
            problems.append(f"rank {rank} printed kolo's FATAL line {count} times (expected at most once)")
    if launcher.startswith("kolorun"):
        summary = re.search(rf"^kolorun: (rank {VICTIM} \(on \S+\) was killed by signal 9"
                            rf"|kolo on rank \d+ \(on \S+\) ended the job: .*rank {VICTIM} \(on \S+\) did not answer"
                            rf"|kolo on rank {VICTIM} \(on \S+\) ended the job: .*; ranks "
                            + ", ".join(rf"{r} \(on \S+\)" for r in range(RANKS) if r != VICTIM) + " did not answer"
                            rf"|rank \d+ \(on \S+\) exited with code 70; its last lines"
                            rf"|kolo on rank \d+ \(on \S+\) ended the job: kolo: (MPI_Finalize waited|the other "
                            rf"ranks shut kolo down) .*; its last lines"
                            rf"|mpirun lost its daemon on {victim_host} \(rank {VICTIM} ran there\))", output, re.M)
        if not summary:
            problems.append(f"kolorun's summary does not name rank {VICTIM} (or the rank kolo ended the job from)")
        unreached = re.search(r"^kolorun: could not reach .*$", output, re.M)
        if unreached:
            problems.append(f"kolorun's remote agent did not reach a host: {unreached.group(0)}")
    return problems


def run_case(args):
    name = args.name
    bound = bound_seconds(args.fault, args.kolo_timeout)
    tag = None
    if args.netns:
        require_cluster(argparse.Namespace(state=args.netns), "namespace hosts")
        tag, ns_before = netns_pids(args.netns)
    if args.slurm:
        require_cluster(argparse.Namespace(state=args.slurm), "SLURM cluster")
    if args.whole_node and not (args.fault == "cut" and args.slurm and args.netns):
        fail("--whole-node is for a cut link on the SLURM cluster of the namespace hosts (--slurm with --netns)")
    if args.fault == "cut" and not args.netns:
        skip("a cut link needs the namespace hosts (--netns): on the SLURM test cluster every slurmd shares this "
             "machine's loopback, so no link of one node can be cut; the SLURM cluster on the namespace hosts "
             "(--slurm with --netns) can" if args.slurm else "a cut link needs --netns")
    # A cut-off host's orted (and the shell rsh started it with) may wait for TCP, and plain
    # mpirun's abort waits for that daemon. kolorun ends them (launcher/remote_kill.h).
    cut_host = os.stat(f"/run/netns/{tag}-node1").st_ino if args.fault == "cut" else None

    def expected_leftover(p):
        if args.fault == "cut" and args.whole_node:
            return p.netns == cut_host and p.name == "slurmstepd"
        if args.fault != "cut" or args.launcher != "mpirun":
            return False
        return (p.netns == cut_host and p.name in ("orted", "sh")) or p.name == "mpirun"
    leftover_owner = "SLURM 22.05" if args.whole_node else "Open MPI"
    cut_links = ["eth0", "mgmt0"] if args.whole_node else ["eth0"]

    env = environment(args)
    cmd = command(args, env)
    job = Job(cmd, env)
    watched, fault_time, link_down = [], None, False
    try:
        deadline = time.monotonic() + START_BOUND
        ranks = None
        while time.monotonic() < deadline and job.proc.poll() is None:
            ranks = ranks_under_way(job, args.mnist, args.fault)
            if ranks:
                break
            time.sleep(0.1)
        check(ranks, f"not every rank was under way within {START_BOUND} s", job.text())
        print(f"ranks: " + ", ".join(f"{r} pid {p} on {h}" for r, (p, h) in sorted(ranks.items())))

        # Everything the job consists of, right before the fault.
        launcher_name = os.path.basename(cmd[1] if cmd[0].endswith("/launch") else cmd[0])
        watched.append(Process(job.proc.pid, f"{launcher_name} (the launcher)"))
        watched += [Process(pid, f"rank {r} ({h})") for r, (pid, h) in sorted(ranks.items())]
        for pid in descendants(job.proc.pid):
            stat = stat_of(pid)
            if stat and pid not in [p.pid for p in watched]:
                watched.append(Process(pid, stat[3]))
        for r, (pid, h) in sorted(ranks.items()):
            stat = stat_of(pid)
            parent = stat and stat_of(stat[1])
            if parent and parent[3] == "slurmstepd" and stat[1] not in [p.pid for p in watched]:
                watched.append(Process(stat[1], f"slurmstepd (rank {r}'s)"))
        if args.netns:
            for pid in sorted(netns_pids(args.netns)[1] - ns_before):
                stat = stat_of(pid)
                if stat and pid not in [p.pid for p in watched]:
                    watched.append(Process(pid, stat[3]))

        victim_pid, victim_host = ranks[VICTIM]
        if args.fault == "cut":
            check(victim_host == "node1", f"rank {VICTIM} runs on {victim_host}, expected node1")
            link_down = True
            for link in cut_links:
                subprocess.run(["ip", "-n", f"{tag}-node1", "link", "set", link, "down"], check=True)
        elif args.fault not in SELF_FAULTS:
            os.kill(victim_pid, signal.SIGKILL if args.fault == "kill" else signal.SIGSTOP)
        fault_time = time.monotonic()
        if args.fault in SELF_FAULTS:
            with job.lock:
                fault_time = next(t for t, line in job.lines if re.search(SELF_FAULTS[args.fault][1], line))
        print(f"fault: {args.fault} rank {VICTIM} (pid {victim_pid} on {victim_host}) at +0.0 s "
              f"({time.monotonic() - fault_time:.1f} s ago)", flush=True)

        # Until everything is gone, or the bound has passed.
        while True:
            now = time.monotonic() - fault_time
            job.proc.poll()  # reaps the launcher
            for p in watched:
                if p.gone_after is None and not p.running():
                    p.gone_after = now
            others = [p.gone_after for p in watched if not expected_leftover(p)]
            if all(p.gone_after is not None for p in watched) or now > bound:
                break
            if None not in others and now > max(others, default=0) + LEFTOVER_WATCH:
                break
            time.sleep(0.05)
        job.reader.join(timeout=5)
    finally:
        # The link back up first: what was left on node1 (a slurmstepd) can then tell the
        # controller that its step ended, and the nodes are idle again for the next test.
        if link_down:
            for link in cut_links:
                subprocess.run(["ip", "-n", f"{tag}-node1", "link", "set", link, "up"])
        left = [p for p in watched if p.running()]
        for p in left:
            p.kill()
        if job.proc.poll() is None:
            job.proc.kill()
            job.proc.wait()
        if link_down and args.slurm:
            wait_for_idle_nodes(args.slurm, env)
        if args.slurm and left:
            ctl = [os.path.join(args.slurm, "ctl")] if args.netns else []
            subprocess.run(ctl + ["scancel", "--full", f"--user={os.getuid()}"], env=env)

    output = job.text()
    print("---- the job's output, without progress lines ----")
    print("\n".join(line for line in output.splitlines() if not re.search(r"rank \d+ iter \d+$", line)))
    print("----")
    for p in watched:
        when = f"gone after {p.gone_after:.1f} s" if p.gone_after is not None else "still running"
        print(f"  {p.what} pid {p.pid}: {when}")
    print(f"launcher exit code: {job.proc.returncode}")

    late = [p for p in watched if p.gone_after is None and not expected_leftover(p)]
    for p in watched:
        if p.gone_after is None and expected_leftover(p):
            print(f"left running ({leftover_owner}, expected): {p.what} pid {p.pid} at the end of the watch - "
                  "killed by this test")
    ended = [p.gone_after for p in watched if p.gone_after is not None]
    seconds = max(ended) if not late else bound
    expected = [f"{p.name} pid {p.pid}" for p in watched if p.gone_after is None and expected_leftover(p)]
    print(f"fault-time: {name} {seconds:.1f} s bound {bound:.0f} s" + (" (NOT all gone)" if late else "") +
          (f" (left running: {', '.join(expected)})" if expected else ""))
    problems = [f"{p.what} pid {p.pid} still running {bound:.0f} s after the fault" for p in late]
    if job.proc.returncode == 0:
        problems.append("the launcher exited 0")
    problems += clear_line_problems(output, args.launcher, args.fault, victim_host)
    if problems:
        fail("; ".join(problems))
    print("PASSED")


def run_slow_case(args):
    """A healthy job that is only slow: it must complete (see SLOW_CALLS)."""
    if not args.netns:
        skip("a slow link needs the namespace hosts (--netns), whose links tools/cluster/shape.sh shapes")
    require_cluster(argparse.Namespace(state=args.netns), "namespace hosts")
    if args.slurm:
        require_cluster(argparse.Namespace(state=args.slurm), "SLURM cluster")
    args.kolo_timeout = SLOW_DATA_TIMEOUT
    shape = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "cluster", "shape.sh")
    subprocess.run([shape, args.netns, "--rate", SLOW_RATE], check=True)
    try:
        env = environment(args)
        job = Job(command(args, env), env)
        try:
            job.proc.wait(timeout=SLOW_BOUND)
        except subprocess.TimeoutExpired:
            job.proc.kill()
            job.proc.wait()
            fail(f"the job did not end within {SLOW_BOUND} s", job.text())
        job.reader.join(timeout=5)
    finally:
        subprocess.run([shape, args.netns, "--clear"])
    output = job.text()
    print(output)
    call = SLOW_CALLS[args.fault][0]
    took = {int(rank): (float(seconds), verdict) for rank, what, seconds, verdict in SLOW_LINE.findall(output)
            if what == call}
    problems = []
    if job.proc.returncode != 0:
        problems.append(f"the launcher exited {job.proc.returncode}")
    if KOLO_FATAL.search(output):
        problems.append(f"kolo ended a healthy job: {KOLO_FATAL.search(output).group(0)}")
    for rank in range(RANKS):
        if rank not in took:
            problems.append(f"rank {rank} did not report its {call}")
        elif took[rank][1] != "correct":
            problems.append(f"rank {rank}'s {call} gave wrong values")
        elif took[rank][0] < 3 * SLOW_DATA_TIMEOUT:
            problems.append(f"rank {rank}'s {call} took {took[rank][0]} s, not the three data timeouts "
                            f"({3 * SLOW_DATA_TIMEOUT} s) this case is about: shape the link slower or send more")
    if took:
        waits = len(re.findall(r"but every rank answers a roll call: waiting on", output))
        print(f"slow-time: {args.name} {call} {min(t for t, _ in took.values()):.1f}-"
              f"{max(t for t, _ in took.values()):.1f} s at {SLOW_RATE} (data timeout {SLOW_DATA_TIMEOUT} s; "
              f"{waits} roll calls answered by every rank)")
    if problems:
        fail("; ".join(problems))
    print("PASSED")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("launcher", choices=["mpirun", "kolorun", "srun", "kolorun-srun"])
    parser.add_argument("fault", choices=["kill", "stop", "cut"] + list(SELF_FAULTS) + list(SLOW_CALLS))
    parser.add_argument("--name", default="", help="the case's name in the fault-time line")
    parser.add_argument("--loop", required=True, help="fault_loop")
    parser.add_argument("--work", required=True, help="a folder for data")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--mpirun-flags", default="", help="plain mpirun's flags (tests/CMakeLists.txt)")
    parser.add_argument("--kolorun", default="")
    parser.add_argument("--mnist", default="", help="run examples/mnist instead of fault_loop")
    parser.add_argument("--mnist-args", default="", help="more flags for examples/mnist (one string)")
    parser.add_argument("--netns", default="", help="the namespace hosts' state folder")
    parser.add_argument("--slurm", default="", help="the SLURM cluster's state folder")
    parser.add_argument("--whole-node", action="store_true",
                        help="cut: take node1's management link (mgmt0, SLURM's traffic) down too")
    parser.add_argument("--kolo-timeout", type=float, default=5,
                        help="KOLO_CONTROL_TIMEOUT_SECONDS and KOLO_DATA_TIMEOUT_SECONDS")
    args = parser.parse_args()
    args.name = args.name or f"{args.launcher}-{args.fault}"
    os.makedirs(args.work, exist_ok=True)
    if args.launcher.startswith("kolorun"):
        check(args.kolorun, f"{args.launcher} needs --kolorun")
    if args.launcher in ("srun", "kolorun-srun") and not args.slurm:
        fail(f"{args.launcher} needs --slurm")
    if args.fault in SLOW_CALLS:
        run_slow_case(args)
    else:
        run_case(args)


if __name__ == "__main__":
    main()
