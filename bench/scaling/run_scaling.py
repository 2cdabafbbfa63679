#!/usr/bin/python3
"""Times a kolo training job over a list of rank counts and placements, then writes a
CSV, prints a table and draws the plots (epoch time and speedup against ideal, efficiency).

  bench/scaling/run_scaling.py --ranks 1,2,4                      # this machine
  bench/scaling/run_scaling.py --ranks 1,2,4 --placements netns --links none,10gbit,1gbit
  bench/scaling/run_scaling.py --ranks 2,4 --placements local,slurm --epochs 3 --out results/
  bench/scaling/run_scaling.py --ranks 1,2 --model resnet18 --batch 16 --steps 10

Placements (placements.py): local (kolorun on this machine), netns (namespace hosts with
veth links, shaped per --links), slurm (a SLURM cluster, salloc + kolorun). The clusters
are made by tools/cluster/ for the experiment and removed after it (root needed).

Each run trains --model with --batch images per rank per step and --threads compute
threads per rank (programs.py): mnist_convnet with examples/mnist on --images images per
epoch shared by the ranks, for --epochs epochs (the first of several is not timed); the
ResNets with bench/synthetic_benchmark for --steps steps on every rank. Rank 0's
KOLO_TIMELINE gives the fused bytes per step and the time spent in allreduces.

Output in --out: scaling.csv, scaling.md (the table), scaling.png, and runs/ (each run's
output, metrics and timeline). --from-csv redoes the table and the plot from a scaling.csv.
"""
import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import placements  # noqa: E402
import programs  # noqa: E402
import report  # noqa: E402
import timeline_stats  # noqa: E402


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's layout, and shows each flag's default where it has one."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, "", False, argparse.SUPPRESS) and "default" not in text:
            text += " (default: %(default)s)"
        return text


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--model", default="mnist_convnet", help="mnist_convnet, resnet18, resnet50, ...")
    p.add_argument("--program", default="auto", choices=["auto", *programs.PROGRAMS],
                   help="the training program (auto: mnist for mnist_convnet, else synthetic_benchmark)")
    p.add_argument("--ranks", default="1,2,4", help="rank counts, comma-separated")
    p.add_argument("--placements", default="local", help="local, netns, slurm (comma-separated)")
    p.add_argument("--links", default="none",
                   help="netns link rates, comma-separated: none (unshaped), 1gbit, 10gbit, 25gbit...")
    p.add_argument("--delay", default="", help="netns one-way link delay, e.g. 100us (needs sch_netem)")
    p.add_argument("--hosts", type=int, default=2, help="namespace hosts / SLURM nodes")
    p.add_argument("--batch", type=int, default=64, help="images per rank per step")
    p.add_argument("--epochs", type=int, default=2, help="mnist: epochs per run")
    p.add_argument("--images", type=int, default=8192, help="mnist: training images per epoch, all ranks together")
    p.add_argument("--steps", type=int, default=20, help="synthetic_benchmark: timed steps per run")
    p.add_argument("--warmup-steps", type=int, default=3, help="synthetic_benchmark: untimed steps first")
    p.add_argument("--image-size", type=int, default=32, help="synthetic_benchmark: ResNet input size")
    p.add_argument("--threads", type=int, default=1, help="compute threads per rank")
    p.add_argument("--repeat", type=int, default=1, help="runs per configuration (the median is kept)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds one run may take")
    p.add_argument("--build", default=os.path.join(placements.REPO, "build"))
    p.add_argument("--out", default="", help="output folder (default: scaling-MODEL-DATE)")
    p.add_argument("--title", default="")
    p.add_argument("--from-csv", default="", metavar="CSV",
                   help="run nothing: compute the speedups, the table and the plot again from an earlier "
                        "scaling.csv (into --out, default: the CSV's folder)")
    args = p.parse_args(argv)
    try:
        args.ranks = sorted({int(n) for n in args.ranks.split(",")})
    except ValueError:
        p.error(f"--ranks '{args.ranks}': expected numbers like 1,2,4")
    if args.ranks[0] < 1:
        p.error("--ranks must be positive")
    args.placements = [x for x in args.placements.split(",") if x]
    args.links = [x for x in args.links.split(",") if x]
    for name, value in (("--hosts", args.hosts), ("--batch", args.batch), ("--epochs", args.epochs),
                        ("--images", args.images), ("--threads", args.threads), ("--repeat", args.repeat),
                        ("--steps", args.steps), ("--image-size", args.image_size)):
        if value < 1:
            p.error(f"{name} must be at least 1")
    args.build = os.path.abspath(args.build)
    default_out = (os.path.dirname(os.path.abspath(args.from_csv)) if args.from_csv
                   else f"scaling-{args.model}-{time.strftime('%Y%m%d-%H%M%S')}")
    args.out = os.path.abspath(args.out or default_out)
    return args


@dataclass(order=True)
class Run:
    epoch_s: float          # training time of one epoch (median over the timed epochs)
    images: float           # per epoch, all ranks
    fused_bytes_per_step: float
    allreduce_s_per_step: float
    comm_share: float
    load: float             # the machine's 1-minute load average when the run ended


def run_once(args, program, placement, ranks, links, run_dir):
    os.makedirs(run_dir, exist_ok=True)
    metrics, timeline = os.path.join(run_dir, "metrics.csv"), os.path.join(run_dir, "timeline.json")
    for stale in (metrics, timeline):
        if os.path.exists(stale):
            os.remove(stale)
    argv = program.arguments(args.build, args, ranks, metrics)
    cmd, extra_env = placement.command(ranks, argv)
    env = dict(os.environ, KOLO_TIMELINE=timeline, **extra_env)
    env.pop("SLURM_JOB_ID", None)  # a harness started inside an allocation still places by itself
    with open(os.path.join(run_dir, "output.log"), "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        # Its own process group, so that a timeout or Ctrl-C ends the launcher and all it
        # started; but the caller's session, whose scheduling priority then applies (Linux
        # shares the CPU between sessions, "autogroups", before it looks at nice values).
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, process_group=0)
        try:
            code = proc.wait(timeout=args.timeout)
        except BaseException:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            raise
    with open(os.path.join(run_dir, "output.log")) as f:
        output = f.read()
    if code != 0:
        tail = "".join(output.splitlines(keepends=True)[-15:])
        raise RuntimeError(f"{placement.name} np {ranks} ({links} links) exited with {code}; last lines of "
                           f"{run_dir}/output.log:\n{tail}")
    measured = program.read(output, metrics, args, ranks)
    per_step, allreduce, share = timeline_stats.summarize(timeline, measured.train_seconds, measured.steps)
    return Run(epoch_s=measured.epoch_s, images=measured.images, fused_bytes_per_step=per_step,
               allreduce_s_per_step=allreduce, comm_share=share, load=os.getloadavg()[0])


def row_of(args, placement, ranks, links, runs):
    """The configuration's median run (by epoch time)."""
    run = sorted(runs)[len(runs) // 2]
    return report.Row(placement=placement.name, links=links if placement.name == "netns" else "-",
                      ranks=ranks, nodes=placement.nodes(ranks), model=args.model, batch=args.batch,
                      threads=args.threads, images=round(run.images), epoch_s=run.epoch_s,
                      images_per_s=run.images / run.epoch_s, fused_bytes_per_step=run.fused_bytes_per_step,
                      allreduce_ms_per_step=1000 * run.allreduce_s_per_step, comm_share=run.comm_share,
                      runs=len(runs), load=run.load)


def run_experiment(args, program, rows):
    slots = -(-args.ranks[-1] // args.hosts)  # per host, enough for the largest run
    for name in args.placements:
        with placements.make(name, args.build, args.hosts, slots) as placement:
            settings = args.links if name == "netns" else ["none"]
            runs = {}  # (links, ranks) -> [Run]
            try:
                # Rounds over every configuration, so that a change in the machine's load
                # falls on all of them alike; each configuration keeps its median run.
                for rep in range(args.repeat):
                    for links in settings:
                        placement.shape("" if links == "none" else links, args.delay if name == "netns" else "")
                        for ranks in args.ranks:
                            run_dir = os.path.join(args.out, "runs", f"{name}-{links}-np{ranks}-{rep + 1}")
                            start = time.monotonic()
                            run = run_once(args, program, placement, ranks, links, run_dir)
                            runs.setdefault((links, ranks), []).append(run)
                            print(f"  round {rep + 1}: {name:5} {links:>7} links  np {ranks:2} on "
                                  f"{placement.nodes(ranks)} node(s): epoch {run.epoch_s:6.2f} s, "
                                  f"{run.images / run.epoch_s:7,.0f} img/s, comm {run.comm_share:5.1%}, "
                                  f"load {run.load:4.1f}  ({time.monotonic() - start:.0f} s)", flush=True)
            finally:
                rows.extend(row_of(args, placement, ranks, links, found)
                            for (links, ranks), found in runs.items())


def interrupt(signum, frame):
    raise KeyboardInterrupt


def write_results(args, rows):
    report.add_speedup(rows)
    os.makedirs(args.out, exist_ok=True)
    report.write_csv(rows, os.path.join(args.out, "scaling.csv"))
    text = report.table(rows)
    with open(os.path.join(args.out, "scaling.md"), "w") as f:
        f.write(text + "\n")
    loads = [r.load for r in rows]
    print(f"\n{text}\n\nload average after the runs: {min(loads):.1f} to {max(loads):.1f} "
          f"({os.cpu_count()} cores)\n")
    first = rows[0]
    title = args.title or (f"{first.model}, batch {first.batch}/rank, {first.threads} thread(s)/rank, "
                           f"{first.images} images/epoch")
    report.plot(rows, os.path.join(args.out, "scaling.png"), title, os.cpu_count())
    print(f"wrote {args.out}/scaling.csv, scaling.md, scaling.png")


def main(argv):
    args = parse_args(argv)
    try:
        import matplotlib  # noqa: F401  (checked now, not after an hour of runs)
    except ImportError:
        sys.exit(f"run_scaling: {sys.executable} has no matplotlib (Debian: apt-get install python3-matplotlib, "
                 "then run with /usr/bin/python3)")
    if args.from_csv:
        write_results(args, report.read_csv(args.from_csv))
        return
    try:
        program = programs.choose(args.program, args.model, args.build)
        for name in args.placements:
            placements.make(name, args.build, args.hosts, 1)
    except ValueError as e:
        sys.exit(f"run_scaling: {e}")
    # SIGTERM ends the experiment like Ctrl-C: runs are stopped, clusters torn down.
    signal.signal(signal.SIGTERM, interrupt)
    os.makedirs(args.out, exist_ok=True)
    amount = (f"{args.images} images/epoch, {args.epochs} epochs" if program.name == "mnist"
              else f"{args.steps} timed steps")
    print(f"scaling {args.model} ({program.name}): ranks {args.ranks}, placements {args.placements}, "
          f"batch {args.batch}/rank, {amount}, {args.threads} thread(s)/rank -> {args.out}", flush=True)
    rows, failure = [], None
    try:
        run_experiment(args, program, rows)
    except placements.PlacementUnavailable as e:
        failure = f"placement not available here: {e}"
    except (RuntimeError, ValueError) as e:
        failure = str(e)
    except KeyboardInterrupt:
        failure = "interrupted"
    if rows:
        write_results(args, rows)
    if failure:
        sys.exit(f"run_scaling: {failure}")


if __name__ == "__main__":
    main(sys.argv[1:])
