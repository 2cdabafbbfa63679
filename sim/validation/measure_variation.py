#!/usr/bin/python3
"""How much the ranks' step times vary, measured from kolo timelines of real runs, and how
the slowest of p ranks grows with p: the data behind kolo-sim's variation term.

    sim/validation/measure_variation.py [--build build] [--ranks 1,2,4] [--epochs 4]
                                        [--repeats N] [--load] [--out FILE.md] [--json FILE.json]

Runs bench/scaling's MNIST job (examples/mnist, batch 64 per rank, 8,192 images an epoch,
one thread per rank) under kolorun at each rank count with KOLO_TIMELINE=DIR/tl.{rank}.json,
so that every rank writes its own timeline. With --load, each rank count runs a second time
beside a busy-looping process (started here, ended here by PID): a machine whose cores are
also doing something else. With --repeats N the rank counts run in turn N times (1, 2, 4,
1, 2, 4, ...), so that each repeat's np 2 / np 1 compute ratio (busy_ratios) compares runs
made minutes apart at most.

From rank r's timeline, step k's gradients are the tensors allreduced once a step (NEGOTIATE_ALLREDUCE
starts when the program submits one). Its compute time is

    compute(r, k) = last submission of step k − end of rank r's last collective of step k−1

(the optimizer's update, forward and backward: everything the rank does on its own), and
the step's time is what the whole job took. The first step of every epoch (start-up,
evaluation) is left out. Reported per run:
  - the distribution of compute / its median over a rank's steps (p10, p90, p99, max, and
    the relative standard deviation cv), pooled over the ranks;
  - the part no other rank shares: each rank's deviation from the step's mean over ranks
    (what makes ranks wait for each other; at np 1 there is none to tell apart, so the
    np 1 figure is the whole variation);
  - the slowest of p: mean over steps of max_r compute(r, k) / mean compute, measured at
    np p, beside two predictions from the one-rank distribution: resampling (the mean
    maximum of p draws from the measured values) and the normal closed form 1 + cv·e(p)
    that kolo-sim uses (e(p): the mean maximum of p standard normal draws), and e(p) and
    the resampled growth at p up to 1,024.
The defaults kolo-sim takes from this are in docs/simulator.md ("Variation between ranks").
"""
import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "scaling"))
from timeline_stats import load_all_events  # noqa: E402
IMAGES, BATCH = 8192, 64


def expected_max_normal(p):
    """E[max of p independent standard normal draws], by integrating x·p·φ(x)·Φ(x)^(p−1)."""
    if p == 1:
        return 0.0
    total, h = 0.0, 1e-3
    x = -10.0
    while x < 10.0:
        phi = math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        cdf = 0.5 * (1 + math.erf(x / math.sqrt(2)))
        total += x * p * phi * cdf ** (p - 1) * h
        x += h
    return total


def resampled_max(values, p, draws=4000, seed=1):
    """Mean of the maximum of p draws (with replacement) from values."""
    rng = random.Random(seed)
    return statistics.fmean(max(rng.choice(values) for _ in range(p)) for _ in range(draws))


def quantile(values, q):
    s = sorted(values)
    i = q * (len(s) - 1)
    lo = int(math.floor(i))
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (i - lo)


def steps_of(path):
    """[(last submission, end of the last collective)] per step, in µs, from one rank's
    timeline. A step's gradients: the lanes with an ALLREDUCE as many times as the most
    frequent one (once a step)."""
    events = load_all_events(path)
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name" and e.get("ph") == "M"}
    by_lane = {}
    for e in events:
        if e.get("ph") == "X" and e["tid"] in lanes and e["tid"] != 0:
            by_lane.setdefault(e["tid"], []).append(e)
    reduced = {tid: [e for e in evs if e["name"] == "ALLREDUCE"] for tid, evs in by_lane.items()}
    steps = max(len(v) for v in reduced.values())
    grads = [tid for tid, v in reduced.items() if len(v) == steps]
    negotiations = {tid: [e for e in by_lane[tid] if e["name"].startswith("NEGOTIATE")] for tid in grads}
    out = []
    for k in range(steps):
        last_submit = max(negotiations[tid][k]["ts"] for tid in grads)
        done = max(reduced[tid][k]["ts"] + reduced[tid][k]["dur"] for tid in grads)
        out.append((last_submit, done))
    return out


def busy_ratios(runs):
    """Per repeat, idle: np 2's median compute per step over np 1's, the two run together."""
    by = {(r["repeat"], r["ranks"]): r["median_compute_ms"] for r in runs if not r["load"]}
    return [by[(i, 2)] / by[(i, 1)] for i in sorted({i for i, _ in by}) if (i, 1) in by and (i, 2) in by]


def run_job(build, ranks, epochs, workdir, load):
    mnist = os.path.join(build, "examples", "mnist", "mnist")
    limit = IMAGES // (BATCH * ranks) * BATCH * ranks
    command = [os.path.join(build, "launcher", "kolorun"), "-np", str(ranks), "--oversubscribe", mnist, "--epochs", str(epochs),
               "--batch-size", str(BATCH), "--threads", "1", "--train-limit", str(limit), "--test-limit", "1000",
               "--progress", "off"]
    env = dict(os.environ, KOLO_TIMELINE=os.path.join(workdir, "tl.{rank}.json"))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load else None
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    if done.returncode != 0:
        sys.exit(f"measure_variation: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return limit // (BATCH * ranks)


def analyse(workdir, ranks, steps_per_epoch):
    per_rank = [steps_of(os.path.join(workdir, f"tl.{r}.json")) for r in range(ranks)]
    steps = min(len(s) for s in per_rank)
    kept = [k for k in range(1, steps) if k % steps_per_epoch != 0]
    compute = [[per_rank[r][k][0] - per_rank[r][k - 1][1] for k in kept] for r in range(ranks)]
    relative = []
    for r in range(ranks):
        median = statistics.median(compute[r])
        relative += [c / median for c in compute[r]]
    independent = []
    slowest = []
    for i in range(len(kept)):
        values = [compute[r][i] for r in range(ranks)]
        mean = statistics.fmean(values)
        independent += [v / mean - 1 for v in values]
        slowest.append(max(values))
    mean_compute = statistics.fmean(c for r in range(ranks) for c in compute[r])
    return {
        "ranks": ranks, "steps": len(kept),
        "median_compute_ms": statistics.median(c for r in range(ranks) for c in compute[r]) / 1e3,
        "cv": statistics.pstdev(relative) / statistics.fmean(relative),
        "p10": quantile(relative, 0.10), "p90": quantile(relative, 0.90), "p99": quantile(relative, 0.99),
        "max": max(relative),
        "cv_independent": statistics.pstdev(independent) if ranks > 1 else None,
        # A deviation from the mean of p ranks has variance (1 - 1/p)·σ² when each rank's
        # has σ²: the model's jitter is σ.
        "jitter": statistics.pstdev(independent) / math.sqrt(1 - 1 / ranks) if ranks > 1 else None,
        "slowest_of_p": statistics.fmean(slowest) / mean_compute,
        "relative": relative,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--load", action="store_true", help="also run each beside a busy-looping process")
    parser.add_argument("--repeats", type=int, default=1, help="run each configuration this many times")
    parser.add_argument("--out", help="write the markdown report here")
    parser.add_argument("--json", help="write the measured figures here (kolo-sim's defaults come from them)")
    args = parser.parse_args(argv)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    runs = []
    for load in ([False, True] if args.load else [False]):
        # Repeats are interleaved (1, 2, 1, 2, ...), not blocked: this machine drifts by 10-30 %
        # within minutes, and a ratio between rank counts should compare runs made together.
        for repeat, ranks in [(i, int(r)) for i in range(args.repeats) for r in args.ranks.split(",")]:
            with tempfile.TemporaryDirectory() as work:
                spe = run_job(args.build, ranks, args.epochs, work, load)
                result = analyse(work, ranks, spe)
            result["load"] = load
            result["repeat"] = repeat
            runs.append(result)
            print(f"np {ranks}{' under load' if load else ''}: cv {result['cv']:.4f}, "
                  f"slowest-of-p {result['slowest_of_p']:.4f}", file=sys.stderr)

    lines = ["# The ranks' step-time variation, measured", "",
             f"`sim/validation/measure_variation.py --ranks {args.ranks} --epochs {args.epochs}"
             f"{' --load' if args.load else ''}{f' --repeats {args.repeats}' if args.repeats > 1 else ''}` on {cpu} ({os.cpu_count()} CPUs): bench/scaling's MNIST job "
             f"(batch {BATCH} per rank, {IMAGES:,} images an epoch, one thread a rank), every rank's timeline "
             "(KOLO_TIMELINE=tl.{rank}.json). Compute = a rank's optimizer update, forward and backward in a "
             "step (its last submission − the end of its previous step's last collective); relative to the "
             "rank's median. The first step of each epoch is left out.", "",
             "| run | steps × ranks | median compute (ms) | cv | p10 | p90 | p99 | max | cv, not shared by the step's other ranks | as the model's jitter σ | slowest of p / mean, measured | resampled from np 1 | normal: 1 + cv·e(p) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    # The first np 1 run of each condition is the one-rank distribution the others are
    # compared with.
    base = {load: next((r for r in runs if r["ranks"] == 1 and r["load"] == load), None) for load in (False, True)}
    for r in runs:
        one = base[r["load"]]
        p = r["ranks"]
        resampled = resampled_max(one["relative"], p) / statistics.fmean(one["relative"]) if one else float("nan")
        normal = 1 + (one["cv"] if one else r["cv"]) * expected_max_normal(p)
        r["resampled_from_np1"], r["normal_from_np1"] = resampled, normal
        independent = "" if r["cv_independent"] is None else f"{r['cv_independent']:.4f} | {r['jitter']:.4f}"
        lines.append(f"| np {p}{', under load' if r['load'] else ''} | {r['steps']} × {p} | {r['median_compute_ms']:.2f} | "
                     f"{r['cv']:.4f} | {r['p10']:.3f} | {r['p90']:.3f} | {r['p99']:.3f} | {r['max']:.3f} | "
                     f"{independent or ' | '} | "
                     f"{r['slowest_of_p']:.4f} | {resampled:.4f} | {normal:.4f} |")
    ratios = busy_ratios(runs)
    if ratios:
        lines += ["", "A rank's compute when both cores compute: each repeat's median compute per step at np 2 "
                  "over that at np 1 in the same repeat (run minutes apart at most): "
                  f"{', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f} (kolo-sim's "
                  "compute_slowdown_when_busy, which sim/calibrate.py measures this way)."]
    lines += ["", "How the one-rank distribution becomes the slowest of p at large p (np 1, idle): the mean "
              "maximum of p draws, resampled from the measured values and from the normal of the same cv "
              "(kolo-sim's model). Resampling cannot go past the largest value measured, so at large p it "
              "is a lower bound.", "",
              "| p | e(p) | normal: 1 + cv·e(p) | resampled |", "|---:|---:|---:|---:|"]
    one = base[False]
    if one:
        for p in (2, 4, 16, 64, 256, 512, 1024):
            lines.append(f"| {p} | {expected_max_normal(p):.3f} | {1 + one['cv'] * expected_max_normal(p):.4f} | "
                         f"{resampled_max(one['relative'], p, draws=1000) / statistics.fmean(one['relative']):.4f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu, "runs": [{k: v for k, v in r.items() if k != "relative"} for r in runs]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
