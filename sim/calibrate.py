#!/usr/bin/python3
"""Calibrates the simulator to this machine in one command, from short runs:

    sim/calibrate.py [--build build] [--out sim/hardware/this_machine.json]

1. Links: kolo-sim-probe times kolo's allreduce of 4 KiB to 16 MiB at np 2 (kolorun);
   `kolo-sim fit-link` fits the ring's latency and bandwidth to it (np 2 has a core per
   rank; np 4 shares the 2 cores, which the simulator models as devices_per_node).
2. Compute: bench/scaling's run of the MNIST net at np 1 (examples/mnist, --images per
   epoch, batch 64, the median of 3 runs) gives the training time per image on one rank.
3. Communication beside compute: kolo-sim-probe --under-compute at np 2 measures how many
   times longer an allreduce takes while the ranks compute on every core (the median of
   3 runs: one run once read 2 where all others read 100-200); far above 1
   (the collective's CPU work waits for the compute), the file says
   "comm_overlaps_compute": false.
4. Variation between ranks: sim/validation/measure_variation.py at np 1 and 2, 5 runs each
   (interleaved: np 1, np 2, np 1, ...) of the MNIST job with every rank's timeline: each
   np 2 run's variation not shared by the step's other rank, as the model's jitter
   (cv / sqrt(1 - 1/p)); the file's "variation" is their median and its range their lowest
   and highest. The same runs give "compute_slowdown_when_busy": the median over the
   repeats of a rank's median compute per step at np 2 (both cores computing) over that at
   np 1 in the same repeat (at least 1), and its range for kolo-sim's band, the lowest and
   highest of those ratios (the lowest may be below 1: a pair whose np 1 met the machine's
   slower minute). Pairs run together, because this machine drifts by 10-30 % within
   minutes: a ratio of two rank counts should compare runs made together.

It writes the hardware file (with the measured numbers as its sources) and prints the
compute figure to give kolo-sim (--one-device-images-per-s) and the np 4 samples beside
the fit's prediction for them.
"""
import argparse
import csv
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TAG = re.compile(r"^\[\d+\]<stdout>:", re.M)
REPEATS = 5  # of the variation runs at np 1 and 2, interleaved

sys.path.insert(0, os.path.join(HERE, "validation"))
import measure_variation  # noqa: E402


def probe(build, ranks):
    command = [os.path.join(build, "launcher", "kolorun"), "-np", str(ranks), "--oversubscribe",
               os.path.join(build, "sim", "kolo-sim-probe"), "--reps", "30"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"calibrate: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    lines = [line for line in TAG.sub("", done.stdout).splitlines() if re.match(r"^\d+,\d+,", line)]
    if not lines:
        sys.exit(f"calibrate: no samples from {' '.join(command)}:\n{done.stdout}")
    return lines


def fit(build, samples):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("\n".join(samples) + "\n")
        path = f.name
    try:
        done = subprocess.run([os.path.join(build, "sim", "kolo-sim"), "fit-link", "--collective", "ring_allreduce", path],
                              capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    if done.returncode != 0:
        sys.exit(f"calibrate: kolo-sim fit-link failed:\n{done.stderr}")
    return json.loads(done.stdout)


# An allreduce this many times slower (or more) beside compute than idle waits for the
# compute: its CPU work competes with it. Below, the collective progresses while the ranks
# compute (a slow link bounds it, not the CPU). Measured at 75-200 on shared memory and on
# an unshaped veth link here, 5 at 1 Gbit/s and 1.3-1.8 at 100 Mbit/s.
OVERLAP_BELOW = 2


def overlaps_compute(slowdown):
    """A hardware file's "comm_overlaps_compute" from kolo-sim-probe --under-compute's figure."""
    return slowdown < OVERLAP_BELOW


def comm_slowdown_under_compute(command, env=None, runs=3):
    """The median of `runs` runs of `command` (kolo-sim-probe --under-compute at np 2 under a
    launcher), and the runs: the figure decides whether communication overlaps compute, and
    one run read 2 where every other read 100-200."""
    slowdowns = []
    for _ in range(runs):
        done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, **env) if env else None)
        m = re.search(r"comm_slowdown,([\d.]+)", TAG.sub("", done.stdout))
        if done.returncode != 0 or not m:
            sys.exit(f"calibrate: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        slowdowns.append(float(m.group(1)))
    return statistics.median(slowdowns), slowdowns


def probe_under_compute(build):
    """The probe's command (np 2, this machine), for comm_slowdown_under_compute."""
    return [os.path.join(build, "launcher", "kolorun"), "-np", "2", os.path.join(build, "sim", "kolo-sim-probe"),
            "--under-compute"]


def variation(build, repeats=REPEATS, epochs=4):
    """(the np 2 runs' jitters, sorted; the pairs' np 2 / np 1 compute ratios, in repeat
    order) from measure_variation.py's interleaved runs."""
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "variation.json")
        command = [sys.executable, os.path.join(HERE, "validation", "measure_variation.py"), "--ranks", "1,2",
                   "--repeats", str(repeats), "--epochs", str(epochs), "--build", build, "--json", path]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            sys.exit(f"calibrate: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        with open(path) as f:
            runs = json.load(f)["runs"]
    jitters = sorted(r["jitter"] for r in runs if r["ranks"] == 2)
    ratios = measure_variation.busy_ratios(runs)
    if not jitters or not ratios:
        sys.exit(f"calibrate: {' '.join(command)} gave no np 1 / np 2 pair to measure the variation from")
    return jitters, ratios


def compute_per_image(build, images):
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, os.path.join(ROOT, "bench", "scaling", "run_scaling.py"), "--ranks", "1",
                   "--images", str(images), "--epochs", "3", "--repeat", "3", "--build", build, "--out", out]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            sys.exit(f"calibrate: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        with open(os.path.join(out, "scaling.csv")) as f:
            row = next(csv.DictReader(f))
    return float(row["epoch_s"]) / float(row["images"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=os.path.join(HERE, "hardware", "this_machine.json"))
    p.add_argument("--images", type=int, default=8192, help="MNIST images per epoch of the compute run")
    args = p.parse_args()
    today = datetime.date.today().isoformat()

    np2 = probe(args.build, 2)
    link = fit(args.build, np2)
    np4 = probe(args.build, 4)
    seconds_per_image = compute_per_image(args.build, args.images)
    slowdown, slowdowns = comm_slowdown_under_compute(probe_under_compute(args.build))
    jitters, pair_ratios = variation(args.build)
    busy = max(1.0, statistics.median(pair_ratios))  # a rank computing beside others is not faster
    cores = os.cpu_count() or 1
    hardware = {
        "name": f"this machine ({cores} cores, Open MPI 4.1), calibrated {today}",
        "ranks_per_node": 4,
        "nodes": 1,
        "devices_per_node": cores,
        "intra_node": {"kind": "shared_memory", "latency_us": round(link["latency_us"], 3),
                       "bandwidth_GBps": round(link["bandwidth_GBps"], 3), "achieved_fraction": 1.0},
        "inter_node": {"kind": "ethernet", "latency_us": 12.5, "bandwidth_GBps": 2.8, "achieved_fraction": 1.0},
        "loader_cores_per_node": cores,
        "comm_overlaps_compute": overlaps_compute(slowdown),
        "collectives": "mpi",
        "compute_slowdown_when_busy": round(busy, 3),
        # The band's range: the repeats' lowest and highest (below 1 when np 1 met the slower
        # moment of the pair).
        "compute_slowdown_low": round(min(pair_ratios), 3),
        "compute_slowdown_high": round(max(max(pair_ratios), busy), 3),
        "variation": {"jitter": round(jitters[len(jitters) // 2], 4), "jitter_low": round(jitters[0], 4),
                      "jitter_high": round(jitters[-1], 4)},
        "device_tflops": 0.05,
        "sources": {
            "ranks_per_node": "bench/scaling runs np 1, 2 and 4 on this machine (docs/scaling.md)",
            "devices_per_node": "os.cpu_count(): the ranks share the cores (one compute thread each)",
            "intra_node.latency_us": f"sim/calibrate.py {today}: kolo allreduce at np 2, 4 KiB-16 MiB, "
                                     f"ring fit (rms {link['rms_residual_us']:.3g} us, max error "
                                     f"{100 * link['max_relative_error']:.0f} %): " + "; ".join(np2),
            "intra_node.bandwidth_GBps": "the same fit",
            "intra_node.achieved_fraction": "1: the fit is of the bandwidth kolo's allreduce achieves",
            "inter_node.achieved_fraction": "1: measured figures (below), not a line rate",
            "collectives": "kolo's CPU path: ops/mpi_backend.cc over Open MPI 4.1 (its own ring from 64 KiB a rank, "
                           "MPI_Allreduce below)",
            "comm_overlaps_compute": f"sim/calibrate.py {today}: kolo-sim-probe --under-compute at np 2, the median of "
                                     f"{len(slowdowns)} runs: a 1 MiB allreduce takes {slowdown:.0f} times longer while "
                                     "the ranks compute on every core (runs: "
                                     + ", ".join(f"{x:.0f}" for x in slowdowns) + ")",
            "compute_slowdown_when_busy": f"sim/calibrate.py {today}: sim/validation/measure_variation.py --ranks 1,2 "
                                          f"--repeats {REPEATS} (interleaved), the median over repeats of a rank's median compute "
                                          "per step at np 2 over np 1 in the same repeat: "
                                          + ", ".join(f"{r:.3f}" for r in pair_ratios)
                                          + ("" if statistics.median(pair_ratios) >= 1 else " (median below 1: taken as 1)"),
            "compute_slowdown_low": "the lowest of those repeats' ratios",
            "compute_slowdown_high": "the highest of those repeats' ratios (at least the value)",
            "variation": f"sim/calibrate.py {today}: sim/validation/measure_variation.py --ranks 1,2 --repeats {REPEATS}, the "
                         "model's jitter from each run's variation not shared between the ranks: "
                         + ", ".join(f"{j:.4f}" for j in jitters),
            "inter_node.latency_us": "the raw MPI baseline: MPI_Allreduce np=2 btl tcp 4 KiB median 25.9 us "
                                     "= 2 alpha; namespace hosts talk TCP over veth (not calibrated)",
            "inter_node.bandwidth_GBps": "the raw MPI baseline: MPI_Allreduce np=2 btl tcp 1 MiB median "
                                         "374.9 us (not calibrated)",
            "loader_cores_per_node": "os.cpu_count()",
            "device_tflops": "unused here: kolo-sim is given the measured time per image (--one-device-images-per-s)",
        },
    }
    with open(args.out, "w") as f:
        json.dump(hardware, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}")
    print(f"links (np 2 fit): latency {link['latency_us']:.3g} us, bandwidth {link['bandwidth_GBps']:.3g} GB/s, "
          f"max error {100 * link['max_relative_error']:.0f} %")
    print("np 4 samples (bytes,ranks,seconds), for comparison with the model's sharing of the cores: " + "; ".join(np4))
    print(f"compute: {seconds_per_image * 1e3:.4f} ms per image at np 1: "
          f"kolo-sim --one-device-images-per-s {1 / seconds_per_image:.1f}")


if __name__ == "__main__":
    main()
