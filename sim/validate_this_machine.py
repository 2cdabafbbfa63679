#!/usr/bin/python3
"""The simulator against this machine: calibrate (sim/calibrate.py), predict bench/scaling's
runs of the MNIST net, and compare with fresh measurements; then check one of kolo-sim's
recommendations on the namespace hosts.

    sim/validate_this_machine.py [--rounds 3] [--links none,1gbit] [--build build] [--out FILE.md]

1. local np 1, 2, 4 (run_scaling.py --ranks 1,2,4): np 2 and 4 predicted from the
   calibrated sim/hardware/this_machine.json and, as the published tables give kolo-sim
   their own 1-GPU time, the one-device time per image of the same round's np 1: the mean
   of an np 1 run just before its np 2 and np 4 and one just after them. This machine's
   speed drifts by 10-30 % within minutes (np 1 by up to 40 % within one validation); the
   calibration's own np 1 ran minutes before. Each row's error is the median of its
   rounds' errors; a last column gives the error with a busy-node slowdown (a rank's
   compute with both cores computing over that alone) measured in the round itself, just
   before its runs, instead of the calibration's, to tell whether that drifts too;
2. with --links (root): np 2 and 4 over two namespace hosts (run_scaling.py --placements
   netns), unshaped and at each shaped rate, each round's baseline its np 1 on one host
   (before and after, as above). The link between the hosts is calibrated
   once, unshaped, with kolo-sim-probe at np 2 (one rank a host); a shaped rate is given
   to kolo-sim as --link-GBps (a line rate: kolo-sim's Ethernet share of it applies), with
   the shaper's token bucket (--link-burst-bytes, tools/cluster/shape.sh's), not fitted. The hosts share this machine's cores: each host
   is given 1 device. Whether communication overlaps compute is measured at each rate as
   sim/calibrate.py measures it on one host (kolo-sim-probe --under-compute), how late a
   collective submitted mid-compute starts (kolo-sim-probe --start-delay), and the
   share of each shaped rate kolo's allreduce achieves is checked against kolo-sim's
   Ethernet share (kolo-sim-probe back to back at 64 KiB, 256 KiB and 1 MiB);
3. with --links: for the synthetic benchmark's MNIST net at np 2 over the hosts at the
   slowest rate, kolo-sim ranks four settings (defaults, fp16 compression, a 5 ms cycle
   time, no fusion) from a profile of an np 1 timeline; each is then measured there.
Each round runs every configuration once; the rounds' spread is the noise band.
Nothing is fitted to the np 2 and np 4 rows. Each row also gets kolo-sim's p10-p90 band
(over seeds and the measured ranges of the jitter and of the busy-node slowdown) and how
many rounds fell inside it; a second table gives every round, np 1 inputs included.
"""
import argparse
import atexit
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench", "scaling"))
import calibrate  # noqa: E402
import placements  # noqa: E402

TAG = re.compile(r"^\[\d+\]<stdout>:", re.M)
RATE = re.compile(r"^(\d+(?:\.\d+)?)(gbit|mbit)$")


def run(command, timeout, env=None):
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    if done.returncode != 0:
        sys.exit(f"validate: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def gbytes_per_s(rate):
    m = RATE.match(rate)
    if not m:
        sys.exit(f"validate: link rate '{rate}': expected e.g. 1gbit or 100mbit")
    return float(m.group(1)) * (1.0 if m.group(2) == "gbit" else 1e-3) / 8


def shaper_burst_bytes(rate):
    """The bucket tools/cluster/shape.sh gives tbf at this rate: about 1 ms of traffic, at
    least 128 KiB. kolo-sim sends that many bytes at the unshaped link's speed after an
    idle time (--link-burst-bytes)."""
    return max(131072, int(gbytes_per_s(rate) * 1e9 / 1000))


def shaped_flags(rate):
    return [] if rate == "none" else ["--link-GBps", gbytes_per_s(rate), "--link-burst-bytes", shaper_burst_bytes(rate)]


def kolo_sim(args, *flags):
    """kolo-sim's rows: {ranks: (epoch_s, images_per_s, (efficiency p10, p90) or None)}.
    The band's column is found by its header: kolo-sim prints it only for a band of runs."""
    table = run([os.path.join(args.build, "sim", "kolo-sim"), *map(str, flags)], 60)
    rows, band_column = {}, None
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == "ranks":
            band_column = cells.index("efficiency p10-p90") if "efficiency p10-p90" in cells else None
        elif len(cells) > 3 and cells[0].isdigit():
            band = tuple(float(x) for x in cells[band_column].split("-")) if band_column else None
            rows[int(cells[0])] = (float(cells[2]), float(cells[3]), band)
    return rows


def busy_slowdown(args):
    """A rank's compute per step with both cores computing over that alone, measured now
    as sim/calibrate.py measures compute_slowdown_when_busy (measure_variation.py: the MNIST
    job at np 1 and then np 2 on this machine, from their timelines), in one pair of
    shorter runs. At least 1, as the calibration takes it."""
    _, ratios = calibrate.variation(args.build, repeats=1, epochs=2)
    return max(1.0, ratios[0])


def scaling_rounds(args, extra, link_settings=(None,)):
    """{(placement, links, ranks): [epoch_s per round]} from run_scaling.py: per round and
    link setting, np 1, 2 and 4, then np 1 again, under the key ranks "1 after". The
    round's one-device input is the mean of its two np 1 runs (np1_of), which bracket
    the runs it predicts: this machine's np 1 drifts by up to 40 % within minutes. The
    busy-node slowdown is measured in each round too, just before its runs (busy_slowdown),
    under the key ("busy", links), to compare with the calibration's."""
    measured = {}
    for _ in range(args.rounds):
        for links in link_settings:
            shaped = ["--links", links] if links else []
            measured.setdefault(("busy", links or "-"), []).append(busy_slowdown(args))
            for ranks, label in (("1,2,4", None), ("1", "1 after")):
                with tempfile.TemporaryDirectory() as out:
                    run([sys.executable, os.path.join(ROOT, "bench", "scaling", "run_scaling.py"), "--images",
                         str(args.images), "--batch", str(args.batch), "--epochs", "3", "--build", args.build, "--out",
                         out, "--ranks", ranks, *shaped, *extra], 1800)
                    with open(os.path.join(out, "scaling.csv")) as f:
                        for row in csv.DictReader(f):
                            key = (row["placement"], row["links"], label or int(row["ranks"]))
                            measured.setdefault(key, []).append(float(row["epoch_s"]))
    return measured


def hardware_with_busy(path, busy, out):
    """A copy of the hardware file `path` at `out` whose busy-node slowdown is `busy`; its
    band (compute_slowdown_low and _high) keeps the calibration's spread, relative to the
    new value."""
    with open(path) as f:
        hw = json.load(f)
    scale = busy / hw["compute_slowdown_when_busy"]
    value = round(busy, 3)
    hw["compute_slowdown_when_busy"] = value
    hw["compute_slowdown_low"] = min(value, round(hw.get("compute_slowdown_low", value) * scale, 3))
    hw["compute_slowdown_high"] = max(value, round(hw.get("compute_slowdown_high", value) * scale, 3))
    hw["sources"]["compute_slowdown_when_busy"] = ("sim/validate_this_machine.py: measured in the round, just "
                                                   "before its runs (busy_slowdown)")
    with open(out, "w") as f:
        json.dump(hw, f, indent=2)
    return out


def np1_of(measured, placement, links):
    """Per round, the one-device input (the mean of the np 1 runs before and after the
    round's np 2 and np 4), and the per-round table's cells ("before / after")."""
    runs = list(zip(measured[(placement, links, 1)], measured[(placement, links, "1 after")]))
    return [(before + after) / 2 for before, after in runs], [f"{a:.3f} / {b:.3f}" for a, b in runs]


def band(times):
    median = statistics.median(times)
    return median, f"{min(times):.3f}–{max(times):.3f} (±{50 * (max(times) - min(times)) / median:.1f} %)"


def row(label, times, predictions, points, rounds):
    """times and predictions: one per round, in round order; a prediction is (epoch, (p10
    epoch, p90 epoch), the busy-node slowdown measured in the round, the epoch predicted
    with that instead of the calibration's). Appends the row's rounds to `rounds` for the
    per-round table."""
    predicted = [p[0] for p in predictions]
    points.append((label, times, statistics.median(predicted)))
    rounds.append((label, [f"{t:.3f} → {p:.3f} ({100 * (p - t) / t:+.1f} %), band {lo:.3f}–{hi:.3f}, "
                           f"busy {busy:.3f}" for t, (p, (lo, hi), busy, _) in zip(times, predictions)]))
    median, spread = band(times)

    def error(epochs):
        return statistics.median(100 * (p - t) / t for p, t in zip(epochs, times))

    inside = sum(lo <= t <= hi for t, (_, (lo, hi), _, _) in zip(times, predictions))
    lo, hi = (statistics.median(p[1][i] for p in predictions) for i in (0, 1))
    return (f"| {label} | {median:.3f} | {spread} | {statistics.median(predicted):.3f} | {lo:.3f}–{hi:.3f} | "
            f"{inside} of {len(times)} | {error(predicted):+.1f} % | {error([p[3] for p in predictions]):+.1f} % |")


def rounds_table(rounds, count):
    """Each round of each row: measured → predicted (error), and the np 1 input."""
    lines = ["Each round, measured epoch (s) → predicted (error), and the busy-node slowdown measured in the round; "
             "the np 1 rows, run before and after the round's "
             "np 2 and np 4, give the one-device input (their mean) of the rows below them:", "",
             "| run | " + " | ".join(f"round {i + 1}" for i in range(count)) + " |",
             "|---|" + "---|" * count]
    return lines + [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rounds]


def plot(points, path):
    """Measured epoch times (median, min-max bar) beside kolo-sim's, one pair per run."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    xs = range(len(points))
    medians = [statistics.median(t) for _, t, _ in points]
    ax.errorbar([x - 0.1 for x in xs], medians,
                yerr=[[m - min(t) for m, (_, t, _) in zip(medians, points)],
                      [max(t) - m for m, (_, t, _) in zip(medians, points)]],
                fmt="o", capsize=4, label="measured (median, min–max)")
    ax.plot([x + 0.1 for x in xs], [p for _, _, p in points], "s", label="kolo-sim")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([label.replace(", ", "\n") for label, _, _ in points], fontsize=8)
    ax.set_ylabel("epoch (s)")
    ax.set_title("kolo-sim against this machine: the MNIST net, bench/scaling's default run")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def probe_samples(args, cluster, flags, timeout):
    """kolo-sim-probe's "bytes,2,seconds" lines at np 2 over the hosts, as they are shaped."""
    command, env = cluster.command(2, [os.path.join(args.build, "sim", "kolo-sim-probe"), *flags])
    return [line for line in TAG.sub("", run(command, timeout, env)).splitlines() if re.match(r"^\d+,2,", line)]


def netns_hardware(args, cluster, local_file):
    """This machine as two namespace hosts: the local file's links inside a host, the
    veth link between hosts fitted from kolo-sim-probe at np 2, one rank a host."""
    cluster.shape("", "")
    samples = probe_samples(args, cluster, ["--reps", "30"], 300)
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("\n".join(samples) + "\n")
    try:
        fit = json.loads(run([os.path.join(args.build, "sim", "kolo-sim"), "fit-link", f.name], 60))
    finally:
        os.unlink(f.name)
    with open(local_file) as f:
        hw = json.load(f)
    cores = hw["devices_per_node"]
    hw.update({"name": "this machine as 2 namespace hosts (veth, TCP)", "ranks_per_node": 2, "nodes": 2,
               "devices_per_node": max(1, cores // 2), "loader_cores_per_node": max(1, cores // 2)})
    hw["inter_node"] = {"kind": "ethernet", "latency_us": round(fit["latency_us"], 3),
                        "bandwidth_GBps": round(fit["bandwidth_GBps"], 3), "achieved_fraction": 1.0}
    hw["sources"] = dict(hw["sources"], **{
        "devices_per_node": "the hosts share this machine's cores: half each",
        "inter_node.latency_us": "sim/validate_this_machine.py: kolo allreduce at np 2 over two namespace hosts, "
                                 "unshaped, ring fit: " + "; ".join(samples),
        "inter_node.bandwidth_GBps": "the same fit"})
    workdir = tempfile.mkdtemp(prefix="kolo-sim-netns-")
    atexit.register(shutil.rmtree, workdir, True)  # the rates' files beside it are read until the end
    path = os.path.join(workdir, "netns.json")
    with open(path, "w") as f:
        json.dump(hw, f, indent=2)
    return path, fit


def hardware_at_rate(args, cluster, netns_file, rate):
    """The namespace hosts' file for links at `rate`, with "comm_overlaps_compute" measured
    there as sim/calibrate.py measures it on one host (kolo-sim-probe --under-compute at
    np 2, here one rank a host): an unshaped veth link is the CPU's copy, which waits for
    the compute, while a slow shaped link moves the bytes itself. Returns (path, the
    probes' median, the probes)."""
    cluster.shape("" if rate == "none" else rate, "")
    command, env = cluster.command(2, [os.path.join(args.build, "sim", "kolo-sim-probe"), "--under-compute"])
    slowdown, slowdowns = calibrate.comm_slowdown_under_compute(command, env)
    cluster.shape("", "")
    with open(netns_file) as f:
        hw = json.load(f)
    hw["comm_overlaps_compute"] = calibrate.overlaps_compute(slowdown)
    hw["sources"]["comm_overlaps_compute"] = (
        f"sim/validate_this_machine.py: kolo-sim-probe --under-compute at np 2 over the hosts at {rate} links, the "
        f"median of {len(slowdowns)} runs: {slowdown:.3g} times slower beside compute (runs: "
        + ", ".join(f"{x:.3g}" for x in slowdowns) + ")")
    path = os.path.join(os.path.dirname(netns_file), f"netns_{rate}.json")
    with open(path, "w") as f:
        json.dump(hw, f, indent=2)
    return path, slowdown, slowdowns


def start_delay_at_rate(args, cluster, path, rate):
    """Writes into the rate's hardware file (`path`) how late a collective submitted while
    every core computes starts there (kolo-sim-probe --start-delay at np 2 over the hosts):
    kolo-sim applies it where the file says communication overlaps compute. Returns the
    probe's (delay, idle, computing), in ms."""
    cluster.shape("" if rate == "none" else rate, "")
    command, env = cluster.command(2, [os.path.join(args.build, "sim", "kolo-sim-probe"), "--start-delay"])
    out = TAG.sub("", run(command, 300, env))
    cluster.shape("", "")
    figures = {k: float(v) for k, v in re.findall(r"start_(\w+)_ms,([\d.]+)", out)}
    if set(figures) != {"delay", "idle", "computing"}:
        sys.exit(f"validate: no start_delay_ms/start_idle_ms/start_computing_ms lines from the probe:\n{out}")
    with open(path) as f:
        hw = json.load(f)
    hw["comm_start_delay_ms"] = round(figures["delay"], 3)
    hw["sources"]["comm_start_delay_ms"] = (
        f"sim/validate_this_machine.py: kolo-sim-probe --start-delay at np 2 over the hosts at {rate} links: a 4 KiB "
        f"allreduce submitted as both ranks start 20 ms of compute is done after {figures['computing']:.3g} ms, "
        f"after {figures['idle']:.3g} ms on idle ranks (medians of 60 steps)")
    with open(path, "w") as f:
        json.dump(hw, f, indent=2)
    return figures["delay"], figures["idle"], figures["computing"]


ACHIEVED_SIZES = (65536, 262144, 1048576)  # around the MNIST net's 249 KB of gradients
BUCKET_PROBE_BYTES = 262144  # past shape.sh's 128 KiB bucket, below tbf's queue (20 ms: 250 KB at 100 Mbit/s)


def probe_seconds(samples):
    """{bytes: seconds} from kolo-sim-probe's np 2 lines ("bytes,2,seconds")."""
    out = {}
    for sample in samples:
        size, ranks, seconds = sample.split(",")
        if int(ranks) == 2:
            out[int(size)] = float(seconds)
    return out


def achieved_fractions(samples, rate):
    """{bytes: share of the line rate achieved} from kolo-sim-probe's np 2 lines: at np 2
    each rank sends the whole vector once (a ring's two halves, or recursive doubling's one
    exchange), so the rate achieved is bytes / seconds."""
    line = gbytes_per_s(rate) * 1e9
    return {size: size / seconds / line for size, seconds in probe_seconds(samples).items()}


def bucket_bytes(back_to_back_s, after_idle_s, size):
    """The bytes a shaper's bucket let through free, as kolo's allreduce gets them: one of
    `size` after the link was idle saves (back_to_back - after_idle) seconds against one
    behind a drained bucket, worth that many bytes at the drained rate (size / back_to_back)."""
    return max(0.0, (back_to_back_s - after_idle_s) * size / back_to_back_s)


def achieved_at_rate(args, cluster, rate):
    """What kolo's allreduce achieves of a shaped link's line rate, back to back (the shaper's
    bucket drained), at np 2 over the hosts, and what the bucket gives it after 40 ms idle
    (at BUCKET_PROBE_BYTES): checks of kolo-sim's Ethernet share and of the bucket it is
    given (shape.sh's), not inputs. Returns ({bytes: share}, free bytes or None)."""
    cluster.shape(rate, "")
    flags = ["--reps", "20", "--sizes", ",".join(map(str, ACHIEVED_SIZES))]
    runs = [probe_samples(args, cluster, flags + idle, 600) for idle in ([], ["--idle-ms", "40"])]
    cluster.shape("", "")
    back_to_back, after_idle = (probe_seconds(samples) for samples in runs)
    free = (bucket_bytes(back_to_back[BUCKET_PROBE_BYTES], after_idle[BUCKET_PROBE_BYTES], BUCKET_PROBE_BYTES)
            if BUCKET_PROBE_BYTES in back_to_back and BUCKET_PROBE_BYTES in after_idle else None)
    return achieved_fractions(runs[0], rate), free


def synthetic_images_per_s(args, cluster, ranks, env, fp16):
    bench = [os.path.join(args.build, "bench", "synthetic_benchmark", "synthetic_benchmark"), "--model", "mnist_convnet",
             "--batch-size", "32", "--threads", "1", "--num-warmup-batches", "5", "--num-batches-per-iter", "10",
             "--num-iters", "5"] + (["--fp16-allreduce"] if fp16 else [])
    command, launch_env = cluster.command(ranks, bench)
    out = run(command, 600, dict(launch_env, **env))
    m = re.search(r"Total img/sec on \d+ rank\(s\): ([\d.]+)", TAG.sub("", out))
    if not m:
        sys.exit(f"validate: no 'Total img/sec' line in:\n{out}")
    return float(m.group(1))


# What a user might change, as kolo-sim flags and as the settings of a real run.
CANDIDATES = [
    ("kolo's defaults", [], {}, False),
    ("fp16 compression", ["--fp16"], {}, True),
    ("cycle time 5 ms", ["--cycle-time-ms", 5], {"KOLO_CYCLE_TIME": "5"}, False),
    ("no fusion", ["--fusion-threshold-mb", 0], {"KOLO_FUSION_THRESHOLD": "0"}, False),
]


def recommendation_check(args, cluster, hardware, rate):
    """kolo-sim's ranking of CANDIDATES for the synthetic MNIST net at np 2 over the hosts
    at `rate`, against each one measured there."""
    with tempfile.TemporaryDirectory() as work:
        timeline, profile = os.path.join(work, "timeline.json"), os.path.join(work, "profile.json")
        bench = [os.path.join(args.build, "bench", "synthetic_benchmark", "synthetic_benchmark"), "--model",
                 "mnist_convnet", "--batch-size", "32", "--threads", "1", "--num-warmup-batches", "5",
                 "--num-batches-per-iter", "10", "--num-iters", "5"]
        run([os.path.join(args.build, "launcher", "kolorun"), "-np", "1", *bench], 300, {"KOLO_TIMELINE": timeline})
        run([sys.executable, os.path.join(HERE, "profile_from_timeline.py"), timeline, "--batch", "32", "--out", profile],
            60)
        predicted = {}
        for name, flags, _, _ in CANDIDATES:
            predicted[name] = kolo_sim(args, "--hardware", hardware, "--model", profile, "--batch", 32, "--images",
                                       32 * 2 * 500, "--ranks", 2, "--gpus-per-node", 1, *shaped_flags(rate),
                                       *flags)[2][1]
    cluster.shape(rate, "")
    measured = {name: [] for name, _, _, _ in CANDIDATES}
    for _ in range(args.rounds):
        for name, _, env, fp16 in CANDIDATES:
            measured[name].append(synthetic_images_per_s(args, cluster, 2, env, fp16))
    cluster.shape("", "")
    base = CANDIDATES[0][0]
    pick = max(predicted, key=predicted.get)
    best = max(measured, key=lambda n: statistics.median(measured[n]))
    lines = [f"kolo-sim's ranking of four settings for the synthetic benchmark's MNIST net (batch 32, profile from an "
             f"np 1 timeline) at np 2 over two namespace hosts at {rate}, each measured there {args.rounds} times:", "",
             "| setting | predicted images/s | vs defaults | measured images/s, median (min–max) | vs defaults |",
             "|---|---:|---:|---:|---:|"]
    for name, _, _, _ in CANDIDATES:
        m = statistics.median(measured[name])
        lines.append(f"| {name} | {predicted[name]:.0f} | {100 * (predicted[name] / predicted[base] - 1):+.1f} % | "
                     f"{m:.0f} ({min(measured[name]):.0f}–{max(measured[name]):.0f}) | "
                     f"{100 * (m / statistics.median(measured[base]) - 1):+.1f} % |")
    lines += ["", f"kolo-sim recommends **{pick}**; the fastest measured was **{best}**."]
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--images", type=int, default=8192)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--links", default="", help="also the namespace hosts at these rates, e.g. none,1gbit (root)")
    p.add_argument("--out", default="", help="also write the tables to this markdown file, and a plot beside it (.png)")
    args = p.parse_args()
    links = [x for x in args.links.split(",") if x]
    for rate in links:
        if rate != "none":
            gbytes_per_s(rate)

    calibration = run([sys.executable, os.path.join(HERE, "calibrate.py"), "--build", args.build,
                       "--images", str(args.images)], 900)
    calibrated_rate = float(re.search(r"--one-device-images-per-s ([\d.]+)", calibration).group(1))

    points = []  # (label, measured epoch times, predicted) for the plot
    rounds = []  # (label, [per-round cell]) for the per-round table
    # Whole steps only, as kolo-sim runs them: the epoch's images are the steps' images.
    images = args.images // args.batch * args.batch

    def per_round(np1_times, busy_times, ranks, hardware, *flags):
        """kolo-sim's epoch at `ranks` for each round, from that round's np 1 epoch (from its
        images/s, printed to 0.1, rather than its epoch, printed to 0.01 s), and its band:
        the epochs at the efficiency's p90 and p10 (against kolo-sim's np 1, which is the
        round's np 1 itself: one rank has no variation); then the round's busy-node slowdown
        and the epoch predicted with it instead of the calibration's."""
        out = []
        for np1, busy in zip(np1_times, busy_times):
            def rows_with(hardware_file):
                return kolo_sim(args, "--hardware", hardware_file, *flags, "--ranks", f"1,{ranks}", "--model",
                                "mnist_convnet", "--batch", args.batch, "--images", args.images,
                                "--one-device-images-per-s", images / np1)
            rows = rows_with(hardware)
            one = images / rows[1][1]
            p10, p90 = rows[ranks][2] or (rows[ranks][1] / (ranks * rows[1][1]),) * 2
            with tempfile.TemporaryDirectory() as work:
                own = rows_with(hardware_with_busy(hardware, busy, os.path.join(work, "hardware.json")))
            out.append((images / rows[ranks][1], (one / (ranks * p90), one / (ranks * p10)), busy,
                        images / own[ranks][1]))
        return out

    local_file = os.path.join(HERE, "hardware", "this_machine.json")
    measured = scaling_rounds(args, [])
    local_np1, local_np1_cells = np1_of(measured, "local", "-")
    lines = [f"Calibration: {calibration.strip().splitlines()[1]}; np 1 compute {1e3 / calibrated_rate:.4f} ms per "
             f"image in the calibration's run, {1e3 * statistics.median(local_np1) / images:.4f} ms in the local "
             "rounds' np 1 runs. Each round's prediction takes that round's np 1 epoch (the mean of its np 1 "
             "runs before and after its np 2 and np 4) as kolo-sim's one-device input; the error is the median of "
             "the rounds' errors, so it need not be the error of the predicted median against the measured one. "
             "The last column predicts with a busy-node slowdown measured in the round itself, just before its "
             "runs (the MNIST job at np 1 and np 2, 2 epochs each, one pair where the calibration takes the median "
             "of five), instead of the calibration's.", "",
             f"| run | measured epoch (s), median of {args.rounds} | noise band (min–max) | predicted (s), median | "
             "predicted p10–p90 (medians of rounds) | measured inside the round's band | error, median of rounds | "
             "error with the round's busy-node slowdown |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    rounds.append(("local np 1, before / after", local_np1_cells))
    for ranks in (2, 4):
        lines.append(row(f"local np {ranks}", measured[("local", "-", ranks)],
                         per_round(local_np1, measured[("busy", "-")], ranks, local_file), points, rounds))

    if links:
        with placements.NamespaceHosts(args.build, 2, 2) as cluster:
            netns_file, fit = netns_hardware(args, cluster, local_file)
            hardware = {rate: hardware_at_rate(args, cluster, netns_file, rate) for rate in links}
            achieved = {rate: achieved_at_rate(args, cluster, rate) for rate in links if rate != "none"}
            delays = {rate: start_delay_at_rate(args, cluster, hardware[rate][0], rate) for rate in links}
        verdicts = [f"{rate} links {h[1]:.3g} times slower ({'overlaps' if calibrate.overlaps_compute(h[1]) else 'waits'})"
                    for rate, h in hardware.items()]
        lines[0] += (f" Between the namespace hosts (np 2, unshaped): latency {fit['latency_us']:.3g} us, "
                     f"bandwidth {fit['bandwidth_GBps']:.3g} GB/s. An allreduce between them beside compute "
                     "(kolo-sim-probe --under-compute at np 2, median of 3), each rate's hardware file saying "
                     f"whether communication overlaps compute (below {calibrate.OVERLAP_BELOW} times slower): "
                     + ", ".join(verdicts) + ". How late a collective submitted mid-compute starts (kolo-sim-probe "
                     "--start-delay at np 2: a 4 KiB allreduce done after, computing against idle; kolo-sim applies "
                     "it where communication overlaps compute): "
                     + ", ".join(f"{rate} links {d:.1f} ms ({c:.1f} against {i:.1f})" for rate, (d, i, c) in delays.items())
                     + ".")
        if achieved:
            with open(os.path.join(HERE, "defaults.json")) as f:
                share = json.load(f)["achieved_fraction"]["ethernet"]
            lines[0] += (" What kolo's allreduce achieves of a shaped link's rate (kolo-sim-probe at np 2 between the "
                         "hosts, 20 back to back, at " + " / ".join(f"{b // 1024} KiB" for b in ACHIEVED_SIZES) +
                         f"; kolo-sim takes Ethernet's {share:g}): "
                         + "; ".join(f"{rate} " + " / ".join(f"{fractions.get(b, float('nan')):.2f}" for b in ACHIEVED_SIZES)
                                     for rate, (fractions, _) in achieved.items()) + ". What the shaper's bucket gives "
                         f"it after 40 ms idle (a {BUCKET_PROBE_BYTES // 1024} KiB allreduce against one back to back, "
                         "the time saved at the drained rate; kolo-sim is given shape.sh's bucket): "
                         + "; ".join(f"{rate} {'?' if free is None else f'{free / 1024:.0f} KiB'} "
                                     f"(shape.sh's {shaper_burst_bytes(rate) // 1024} KiB)"
                                     for rate, (_, free) in achieved.items()) + ".")
        netns = scaling_rounds(args, ["--placements", "netns", "--hosts", "2"], links)
        for rate_name in links:
            np1, cells = np1_of(netns, "netns", rate_name)  # one rank on one host: the round's baseline
            rounds.append((f"netns np 1, {rate_name} links, before / after", cells))
            for ranks in (2, 4):
                sim = per_round(np1, netns[("busy", rate_name)], ranks, hardware[rate_name][0], "--gpus-per-node",
                                ranks // 2, *shaped_flags(rate_name))
                lines.append(row(f"netns np {ranks}, {rate_name} links", netns[("netns", rate_name, ranks)], sim,
                                 points, rounds))
    lines += [""] + rounds_table(rounds, args.rounds)
    if links:
        slowest = min((r for r in links if r != "none"), key=gbytes_per_s, default=None)
        if slowest:
            with placements.NamespaceHosts(args.build, 2, 2) as cluster:
                lines += [""] + recommendation_check(args, cluster, hardware[slowest][0], slowest)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        png = os.path.splitext(args.out)[0] + ".png"
        plot(points, png)
        with open(args.out, "w") as f:
            f.write("# kolo-sim against this machine\n\n`sim/validate_this_machine.py " +
                    " ".join(sys.argv[1:]) + f"`; plot: `{os.path.basename(png)}`.\n\n" + text)


if __name__ == "__main__":
    main()
