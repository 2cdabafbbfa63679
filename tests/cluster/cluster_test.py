#!/usr/bin/env python3
"""Runs kolo on the fake cluster of tools/cluster/ for real and checks what comes out.

    cluster_test.py CASE --repo SRC --state DIR [--script F] [--mnist EXE] [--demo EXE] [--kolorun EXE]

Cases (CTest runs the *-up and *-down ones as fixture set-up and clean-up):
  slurm-up, slurm-down    start / stop a 2-node SLURM cluster (munge, slurmctld, 2 slurmd)
  sbatch                  `sbatch --wait SCRIPT` (a job script of examples/slurm/, given the
                          short-run mnist flags): the job succeeds, ran 4 tasks on node[0-1],
                          and its output ends with the mnist summary for 4 ranks and an
                          accuracy well above chance
  srun-mnist              `srun -N 2 -n 2 mnist` (short run): the summary for 2 ranks
  slurm-netns-up          start a 2-node SLURM cluster on the namespace hosts of --netns
                          (slurm-up.sh --netns; stopped by slurm-down)
  slurm-netns-srun        `srun -N 2 -n 2 hostname` on it, from node0: one task on each node
  netns-up, netns-down    create / remove two namespace hosts node0, node1
  netns-kolorun           `kolorun -np 4 -H node0:2,node1:2 allreduce_demo` across them (mpirun
                          when --kolorun is not given): the demo's OK, and each host's eth0
                          sent at least the 4,000,000 bytes of the demo's vector (a host's
                          result depends on every value of the other host's ranks, so no
                          allreduce algorithm can send less)

Exit 77 (CTest SKIP) with the reason when the machine cannot run the case: the set-up case
records the reason next to STATE, and the cases that need the cluster repeat it.
"""
import argparse
import gzip
import os
import re
import struct
import subprocess
import sys
import time

SKIP = 77
SUMMARY = re.compile(r"^test accuracy (\d\.\d{4}) on [\d,]+ images - .* - (\d+) ranks x (\d+) threads?$", re.M)
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
SUBSET = {"train": 2048, "t10k": 500}  # images of each split the short runs use
# What launchers put before each line of a rank: srun --label "3: ", kolorun "[3]<stdout>:".
RANK_LABEL = re.compile(r"^(\d+: |\[\d+\]<std(out|err)>:)", re.M)
CHANCE = 0.1


def fail(message, output=""):
    if output:
        print("---- output ----\n" + output.rstrip() + "\n----------------")
    print("FAILED: " + message)
    sys.exit(1)


def skip(message):
    print("SKIP: " + message)
    sys.exit(SKIP)


def run(cmd, timeout, env=None, **kwargs):
    """Runs cmd with its output captured; a timeout is a test failure, never a hang."""
    print("+ " + " ".join(cmd), flush=True)
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, env=env, **kwargs)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        fail(f"{cmd[0]} did not finish within {timeout} s", out)


# ---- fixtures ----------------------------------------------------------------------------

def unavailable_file(state):
    return state.rstrip("/") + ".unavailable"


def bring_up(args, script, extra):
    os.makedirs(os.path.dirname(args.state) or ".", exist_ok=True)
    reason_file = unavailable_file(args.state)
    if os.path.exists(reason_file):
        os.remove(reason_file)
    result = run([os.path.join(args.repo, "tools/cluster", script)] + extra + [args.state], timeout=900)
    print(result.stdout, end="")
    if result.returncode == SKIP:
        lines = result.stdout.strip().splitlines()
        reason = re.sub(r"^\[.*?\] SKIP: ", script + ": ", lines[-1]) if lines else script + " cannot run here"
        with open(reason_file, "w") as f:
            f.write(reason + "\n")
        skip(reason)
    if result.returncode != 0:
        fail(f"{script} exited with {result.returncode}")


def tear_down(args, script):
    result = run([os.path.join(args.repo, "tools/cluster", script), args.state], timeout=120)
    print(result.stdout, end="")
    if result.returncode != 0:
        fail(f"{script} exited with {result.returncode}")


def require_cluster(args, what):
    """Skips, with the set-up's reason, when the fixture could not start the cluster."""
    reason_file = unavailable_file(args.state)
    if os.path.exists(reason_file):
        with open(reason_file) as f:
            skip(f.read().strip())
    if not os.path.exists(os.path.join(args.state, "env.sh")):
        skip(f"no {what} running in {args.state} (its set-up test did not run or failed)")


# ---- SLURM -------------------------------------------------------------------------------

def fashion_subset(work):
    """The first images of Debian's Fashion-MNIST as plain IDX files in work/fashion-subset
    (made once): every rank of a short run then reads a few MB, not the whole set."""
    folder = os.path.join(work, "fashion-subset")
    if os.path.exists(os.path.join(folder, "complete")):
        return folder
    if not os.path.isdir(FASHION_MNIST):
        skip(f"{FASHION_MNIST} not found (Debian package dataset-fashion-mnist)")
    os.makedirs(folder, exist_ok=True)
    for split, count in SUBSET.items():
        for kind, item_bytes in (("images-idx3", 28 * 28), ("labels-idx1", 1)):
            with gzip.open(os.path.join(FASHION_MNIST, f"{split}-{kind}-ubyte.gz")) as f:
                header_words = 4 if kind.startswith("images") else 2
                header = bytearray(f.read(4 * header_words))
                header[4:8] = struct.pack(">I", count)
                body = f.read(count * item_bytes)
            with open(os.path.join(folder, f"{split}-{kind}-ubyte"), "wb") as out:
                out.write(bytes(header) + body)
    open(os.path.join(folder, "complete"), "w").close()
    return folder


def short_mnist(args):
    """A short mnist run: one epoch over the subset (8 steps at 4 ranks of 64 images)."""
    return ["--epochs", "1", "--data-dir", fashion_subset(args.work)]


def slurm_env(args):
    env = dict(os.environ)
    env["SLURM_CONF"] = os.path.join(args.state, "slurm.conf")
    env["KOLO_TOOL_BUILD_DIR"] = args.build
    return env


def check_summary(output, ranks):
    found = SUMMARY.findall(RANK_LABEL.sub("", output))
    check(found, "no 'test accuracy ...' summary line in the output", output)
    accuracy, got_ranks, _ = found[-1]
    check(int(got_ranks) == ranks, f"the summary says {got_ranks} ranks, expected {ranks}", output)
    # Eight steps of SGD already beat guessing clearly (0.28 at 4 ranks on Fashion-MNIST).
    check(float(accuracy) > 2 * CHANCE, f"test accuracy {accuracy} is not above twice chance ({2 * CHANCE})",
          output)


def check(condition, message, output=""):
    if not condition:
        fail(message, output)


def case_sbatch(args):
    require_cluster(args, "SLURM cluster")
    check(args.script, "sbatch needs --script")
    script = args.script
    name = os.path.splitext(os.path.basename(script))[0]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    out_file = os.path.join(work, "job.out")
    if os.path.exists(out_file):
        os.remove(out_file)
    start = time.monotonic()
    result = run(["sbatch", "--wait", "--chdir", work, "--output", out_file, script] + short_mnist(args),
                 timeout=240, env=slurm_env(args))
    output = open(out_file).read() if os.path.exists(out_file) else "(no job output file)"
    print(output, end="")
    print(f"sbatch --wait returned {result.returncode} after {time.monotonic() - start:.1f} s")
    check(result.returncode == 0, f"sbatch --wait exited with {result.returncode}", result.stdout + output)
    check(re.search(r"^job \d+: 4 tasks on node\[0-1\]", output, re.M),
          "the job did not report 4 tasks on node[0-1]", output)
    check_summary(output, ranks=4)


def case_slurm_netns_up(args):
    check(args.netns, "slurm-netns-up needs --netns")
    require_cluster(argparse.Namespace(state=args.netns), "namespace hosts")
    bring_up(args, "slurm-up.sh", ["--netns", args.netns, "--hosts", "2", "--slots", "2"])


def case_slurm_netns_srun(args):
    require_cluster(args, "SLURM cluster on the namespace hosts")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    result = run([os.path.join(args.state, "launch"), "srun", "-N", "2", "-n", "2", "--label", "hostname"],
                 timeout=60, env=env)
    print(result.stdout, end="")
    check(result.returncode == 0, f"srun exited with {result.returncode}", result.stdout)
    check(sorted(result.stdout.split("\n")[:-1]) == ["0: node0", "1: node1"],
          "expected '0: node0' and '1: node1' (each task in its node's namespace)", result.stdout)


def case_srun_mnist(args):
    require_cluster(args, "SLURM cluster")
    check(args.mnist, "srun-mnist needs --mnist")
    result = run(["srun", "-N", "2", "-n", "2", "--label", args.mnist, "--threads", "1", "--progress", "off"] +
                 short_mnist(args),
                 timeout=180, env=slurm_env(args))
    print(result.stdout, end="")
    check(result.returncode == 0, f"srun exited with {result.returncode}", result.stdout)
    check_summary(result.stdout, ranks=2)


# ---- namespace hosts ------------------------------------------------------------------------

def tx_bytes(args, host):
    result = run([os.path.join(args.state, "on"), host, "cat", "/sys/class/net/eth0/statistics/tx_bytes"],
                 timeout=30)
    check(result.returncode == 0, f"cannot read {host}'s eth0 counters", result.stdout)
    return int(result.stdout.split()[-1])


def case_netns_kolorun(args):
    require_cluster(args, "namespace hosts")
    check(args.demo, "netns-kolorun needs --demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}  # not inside a job
    hosts = ["node0", "node1"]
    before = {h: tx_bytes(args, h) for h in hosts}
    if args.kolorun:
        env["KOLO_MPIRUN"] = os.path.join(args.state, "mpirun")
        cmd = [args.kolorun, "-np", "4", "-H", "node0:2,node1:2", args.demo]
    else:
        cmd = [os.path.join(args.state, "mpirun"), "-np", "4", "-H", "node0:2,node1:2", args.demo]
    result = run(cmd, timeout=120, env=env)
    print(result.stdout, end="")
    check(result.returncode == 0, f"{os.path.basename(cmd[0])} exited with {result.returncode}", result.stdout)
    output = RANK_LABEL.sub("", result.stdout)
    check("kolo allreduce demo: 4 ranks" in output and re.search(r"^OK$", output, re.M),
          "the demo did not print '4 ranks' and OK", result.stdout)
    vector_bytes = 1_000_000 * 4
    for h in hosts:
        sent = tx_bytes(args, h) - before[h]
        print(f"{h} eth0 sent {sent:,} bytes (at least {vector_bytes:,} expected)")
        check(sent >= vector_bytes, f"{h} sent only {sent:,} bytes over its veth; the allreduce did not cross it")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case")
    parser.add_argument("--repo", required=True, help="the source tree (for tools/cluster)")
    parser.add_argument("--state", required=True, help="the cluster's state folder")
    parser.add_argument("--build", default="", help="the build folder (KOLO_TOOL_BUILD_DIR of the job scripts)")
    parser.add_argument("--work", default=".", help="a folder for job outputs")
    parser.add_argument("--script", default="", help="the job script for the sbatch case")
    parser.add_argument("--mnist", default="")
    parser.add_argument("--demo", default="")
    parser.add_argument("--kolorun", default="")
    parser.add_argument("--netns", default="", help="the namespace hosts' state folder (slurm-netns-*)")
    args = parser.parse_args()
    cases = {
        "slurm-up": lambda: bring_up(args, "slurm-up.sh", ["--hosts", "2", "--slots", "2"]),
        "slurm-down": lambda: tear_down(args, "slurm-down.sh"),
        "netns-up": lambda: bring_up(args, "netns-up.sh", ["--hosts", "2", "--slots", "2"]),
        "netns-down": lambda: tear_down(args, "netns-down.sh"),
        "slurm-netns-up": lambda: case_slurm_netns_up(args),
        "slurm-netns-srun": lambda: case_slurm_netns_srun(args),
        "sbatch": lambda: case_sbatch(args),
        "srun-mnist": lambda: case_srun_mnist(args),
        "netns-kolorun": lambda: case_netns_kolorun(args),
    }
    check(args.case in cases, f"unknown case '{args.case}' (one of {', '.join(cases)})")
    cases[args.case]()
    print("PASSED")


if __name__ == "__main__":
    main()
