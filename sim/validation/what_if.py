#!/usr/bin/python3
"""What a user would change, and what it buys: kolo-sim sweeps of kolo's settings at 64 and
512 GPUs on the two published clusters, and the best setting found for each.

    sim/validation/what_if.py [--kolo-sim PATH] [--max-steps 20] [--jobs 2] [--out FILE.md]

Cases (one-GPU throughput given, so only kolo's settings and the cluster change):
  v100_nvlink2_edr  ResNet-50, batch 32 per GPU, 360 images/s on one V100: table (a) of
                    published.py (Keras ResNet50V2, 50,000 images in 45 s at 128x128 =
                    1,111 images/s) scaled to 224x224 by the pixel count (x (128/224)^2 =
                    363 images/s), an assumption: compute proportional to pixels.
  pascal_25g_roce   the Horovod paper's models at batch 64 per GPU, with published.py's
                    one-P100 throughputs: Inception V3 142, ResNet-101 136.4 (interpolated
                    by FLOPs), VGG-16 154 images/s.

Settings swept (kolo's defaults in brackets): fusion threshold 0, 1, 4, 16, [64], 128 MiB;
cycle time 0.5, [1], 2, 5 ms; hierarchical allreduce [off] / on; fp16 gradient compression
[off] / on; batch per GPU 32, 64, 128 ([32] on the V100s, [64] on the Pascal cluster, the
paper's). First each setting alone from the defaults, then a coordinate search (each
setting in turn at its best, the others held, until nothing improves by more than 0.2%;
then any change whose undoing costs less than 0.2% is undone)
twice: with the batch held at its default (a batch change changes the optimisation, not
only the speed) and with it free.

Each case is run in two models of the cluster: "plain", without variation between ranks
(--jitter 0), and "varied", kolo-sim's defaults (sim/defaults.json: the default jitter, the
median of its band). Both have the links at the share of their line rate the defaults give.
One run each (--band-runs 1); the main recommendation should hold in both.

What the numbers do not include: kolo-sim's compute time per image does not depend on the
batch (a GPU is often somewhat faster per image at larger batches, so batch gains are
understated); fp16 here is compression of the gradients on the wire only (no mixed
precision compute). 512 V100s is 128 nodes, beyond the 16 the hardware file describes:
kolo-sim extrapolates the same nodes and links. Each run simulates --max-steps steps and
scales them to the epoch; differences under ~0.5% are within the cycle-time phase noise of
the simulation and are reported as no gain.

Runs in about a minute on two cores.
"""
import argparse
import concurrent.futures
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from published import P100_IMAGES_PER_S, Sim, resnet101_images_per_s  # noqa: E402

V100_RESNET50_IMAGES_PER_S = 360.0  # see the docstring: 50,000 / 45 s x (128/224)^2 = 363

KNOBS = [
    ("fusion", "fusion threshold (MiB)", [0, 1, 4, 16, 64, 128]),
    ("cycle", "cycle time (ms)", [0.5, 1, 2, 5]),
    ("hier", "hierarchical", [False, True]),
    ("fp16", "fp16 compression", [False, True]),
    ("batch", "batch per GPU", [32, 64, 128]),
]
NOISE = 0.5  # percent: below this, "no gain"
# Two models of the cluster: without variation between ranks, and kolo-sim's defaults (the
# default jitter: its band's median run). One run each.
SCENARIOS = [("plain", "without variation between ranks (--jitter 0)",
              {hw: ["--jitter", 0, "--band-runs", 1] for hw in ("v100_nvlink2_edr", "pascal_25g_roce")}),
             ("varied", "kolo-sim's defaults (variation between ranks)",
              {hw: ["--band-runs", 1] for hw in ("v100_nvlink2_edr", "pascal_25g_roce")})]
STEP = 0.2   # percent: the coordinate search moves only for more than this


class Case:
    def __init__(self, hardware, label, model, name, images_per_s, batch):
        self.hardware, self.label, self.model, self.name = hardware, label, model, name
        self.images_per_s, self.default_batch = images_per_s, batch

    def defaults(self):
        return {"fusion": 64, "cycle": 1, "hier": False, "fp16": False, "batch": self.default_batch}


def describe(s):
    parts = [f"fusion {s['fusion']:g} MiB", f"cycle {s['cycle']:g} ms", "hierarchical" if s["hier"] else "flat",
             "fp16" if s["fp16"] else "fp32", f"batch {s['batch']}"]
    return ", ".join(parts)


def changes(s, base):
    out = []
    if s["fusion"] != base["fusion"]:
        out.append(f"fusion {s['fusion']:g} MiB")
    if s["cycle"] != base["cycle"]:
        out.append(f"cycle {s['cycle']:g} ms")
    if s["hier"] != base["hier"]:
        out.append("hierarchical" if s["hier"] else "flat")
    if s["fp16"] != base["fp16"]:
        out.append("fp16 on" if s["fp16"] else "fp16 off")
    if s["batch"] != base["batch"]:
        out.append(f"batch {s['batch']}")
    return ", ".join(out) or "defaults"


class Runner:
    def __init__(self, kolo_sim, max_steps, jobs):
        self.sim = Sim(kolo_sim)  # counts the runs and their time
        self.max_steps, self.jobs = max_steps, jobs
        self.cache = {}

    def args(self, case, ranks, s, scenario):
        a = ["--hardware", case.hardware, "--model", case.model, "--batch", s["batch"], "--images", 1281167,
             "--one-device-images-per-s", f"{case.images_per_s:.4g}", "--ranks", ranks, "--max-steps", self.max_steps,
             "--fusion-threshold-mb", s["fusion"], "--cycle-time-ms", s["cycle"]]
        if s["hier"]:
            a.append("--hierarchical")
        if s["fp16"]:
            a.append("--fp16")
        a += SCENARIOS[scenario][2].get(case.hardware, [])
        return [str(x) for x in a]

    def _run(self, args):
        row = self.sim.run(args)[-1]
        return row["images_per_s"], row["comm_share"]

    def evaluate(self, case, ranks, settings_list, scenario):
        """(images/s, allreduce share) for each settings dict (cached), run `jobs` at a time."""
        todo = []
        for s in settings_list:
            key = (scenario, case.hardware, case.model, ranks, tuple(sorted(s.items())))
            if key not in self.cache and key not in [k for k, _ in todo]:
                todo.append((key, s))
        if todo:
            with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as pool:
                results = list(pool.map(lambda ks: self._run(self.args(case, ranks, ks[1], scenario)), todo))
            for (key, _), result in zip(todo, results):
                self.cache[key] = result
        return [self.cache[(scenario, case.hardware, case.model, ranks, tuple(sorted(s.items())))] for s in settings_list]


def coordinate_search(runner, case, ranks, start, knobs, scenario):
    best = dict(start)
    best_ips = runner.evaluate(case, ranks, [best], scenario)[0][0]
    for _ in range(4):
        moved = False
        for key, _, values in knobs:
            trials = [dict(best, **{key: v}) for v in values]
            results = runner.evaluate(case, ranks, trials, scenario)
            ips, s = max(((r[0], t) for r, t in zip(results, trials)), key=lambda x: x[0])
            if ips > best_ips * (1 + STEP / 100):
                best, best_ips, moved = s, ips, True
        if not moved:
            break
    # Drop a change that no longer earns its keep (taken early, made moot by a later one).
    defaults = case.defaults()
    for key, _, _ in knobs:
        if best[key] != defaults[key]:
            trial = dict(best, **{key: defaults[key]})
            ips = runner.evaluate(case, ranks, [trial], scenario)[0][0]
            if ips >= best_ips * (1 - STEP / 100):
                best, best_ips = trial, ips
    return best, best_ips


def plot(summary, path):
    """Efficiency with kolo's defaults and with the best settings found (batch held), per
    cluster, model and size, in each model of the cluster."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(SCENARIOS), figsize=(11, 4.5), sharey=True)
    for k, ax in enumerate(axes):
        rows = [r for r in summary if r[2] == k]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r[3] / r[4] for r in rows], 0.4, label="kolo's defaults")
        ax.bar([x + 0.2 for x in xs], [r[6] / r[4] for r in rows], 0.4, label="best found")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{r[0].name}\n{r[1]} GPUs" for r in rows], fontsize=7)
        ax.set_title(SCENARIOS[k][1], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("scaling efficiency")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kolo-sim", default=os.path.join(REPO, "build", "sim", "kolo-sim"))
    parser.add_argument("--max-steps", type=int, default=20, help="steps simulated per run (default 20)")
    parser.add_argument("--jobs", type=int, default=2, help="kolo-sim runs at once (default 2)")
    parser.add_argument("--out", help="also write the markdown report here")
    args = parser.parse_args(argv)
    if not os.access(args.kolo_sim, os.X_OK):
        sys.exit(f"what_if.py: no kolo-sim at {args.kolo_sim} (build it: ninja -C build kolo-sim)")

    start = time.perf_counter()
    r101, _ = resnet101_images_per_s()
    cases = [
        Case("v100_nvlink2_edr", "4 x V100 / NVLink 2 / EDR IB", "resnet50", "ResNet-50", V100_RESNET50_IMAGES_PER_S, 32),
        Case("pascal_25g_roce", "4 x P100 / PCIe / 25G RoCE", "inception_v3", "Inception V3", P100_IMAGES_PER_S["inception_v3"], 64),
        Case("pascal_25g_roce", "4 x P100 / PCIe / 25G RoCE", "resnet101", "ResNet-101", r101, 64),
        Case("pascal_25g_roce", "4 x P100 / PCIe / 25G RoCE", "vgg16", "VGG-16", P100_IMAGES_PER_S["vgg16"], 64),
    ]
    runner = Runner(args.kolo_sim, args.max_steps, args.jobs)
    lines = ["# What-if: kolo's settings at 64 and 512 GPUs", "",
             f"Written by `sim/validation/what_if.py` (`--max-steps {args.max_steps}`). Throughput is kolo-sim's "
             "images/s for the whole job; efficiency = images/s / (GPUs x one-GPU images/s); gain is over kolo's "
             "defaults (fusion 64 MiB, cycle 1 ms, flat allreduce, no fp16, the case's usual batch). "
             f"Gains under {NOISE}% are within the simulation's noise and count as none. One-GPU throughputs: "
             f"ResNet-50 on a V100 {V100_RESNET50_IMAGES_PER_S:g} images/s (table (a)'s 1,111 images/s at 128x128 "
             "scaled by pixels to 224x224, an assumption); on a P100, published.py's (Inception V3 142, ResNet-101 "
             f"{r101:.1f} interpolated by FLOPs, VGG-16 154). 512 V100s = 128 nodes, beyond the hardware file's 16: "
             "kolo-sim extrapolates. kolo-sim's compute per image does not depend on the batch, and its fp16 is "
             "gradient compression only. See the script's docstring for more.", ""]
    summary, avoid, batch_alone = [], {}, {}
    for case in cases:
        for ranks in (64, 512):
            base = case.defaults()
            ideal = ranks * case.images_per_s
            lines += [f"## {case.name} on {case.hardware} ({case.label}), {ranks} GPUs", ""]
            for k, (tag, text, extra) in enumerate(SCENARIOS):
                (ips, comm), = runner.evaluate(case, ranks, [base], k)
                lines.append(f"Defaults, {text}: {ips:,.0f} images/s, efficiency {ips / ideal:.3f}, "
                             f"allreduce share {comm:.2f}.")
                lines.append("")
            lines += ["Each setting alone (the others at their defaults), in both models:", "",
                      "| setting | value | images/s | efficiency | gain (%) | images/s, varied | efficiency, varied | gain (%), varied |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|"]
            base_ips = [runner.evaluate(case, ranks, [base], k)[0][0] for k in range(len(SCENARIOS))]
            losses = []
            for key, label, values in KNOBS:
                trials = [dict(base, **{key: v}) for v in values]
                per = [runner.evaluate(case, ranks, trials, k) for k in range(len(SCENARIOS))]
                for i, v in enumerate(values):
                    shown = ("on" if v else "off") if isinstance(v, bool) else f"{v:g}"
                    mark = " (default)" if v == base[key] else ""
                    cells = []
                    for k in range(len(SCENARIOS)):
                        ips = per[k][i][0]
                        cells += [f"{ips:,.0f}", f"{ips / ideal:.3f}", f"{100 * (ips / base_ips[k] - 1):+.1f}"]
                    lines.append(f"| {label} | {shown}{mark} | " + " | ".join(cells) + " |")
                    worst = min(100 * (per[k][i][0] / base_ips[k] - 1) for k in range(len(SCENARIOS)))
                    if key == "batch" and worst >= NOISE:
                        batch_alone.setdefault((case.name, ranks), []).append(
                            (v, [100 * (per[k][i][0] / base_ips[k] - 1) for k in range(len(SCENARIOS))]))
                    if worst < -1.0 and key != "batch":
                        losses.append((worst, f"{label} {shown}"))
            avoid[(case.name, ranks)] = sorted(losses)
            lines.append("")
            fixed_knobs = [kn for kn in KNOBS if kn[0] != "batch"]
            for k, (tag, text, extra) in enumerate(SCENARIOS):
                best_fixed, ips_fixed = coordinate_search(runner, case, ranks, base, fixed_knobs, k)
                best_free, ips_free = coordinate_search(runner, case, ranks, best_fixed, KNOBS, k)
                if ips_free < ips_fixed:
                    best_free, ips_free = best_fixed, ips_fixed
                for what, s_, ips in (("batch held", best_fixed, ips_fixed), ("batch free", best_free, ips_free)):
                    gain = 100 * (ips / base_ips[k] - 1)
                    if gain < NOISE:
                        lines.append(f"Best found, {text}, {what}: nothing beats the defaults by {NOISE}% or more "
                                     f"(best: {changes(s_, base)}, {gain:+.1f}%).")
                    else:
                        lines.append(f"Best found, {text}, {what}: **{changes(s_, base)}** ({describe(s_)}): "
                                     f"{ips:,.0f} images/s, efficiency {ips / ideal:.3f}, gain **{gain:+.1f}%**.")
                    lines.append("")
                summary.append((case, ranks, k, base_ips[k], ideal, best_fixed, ips_fixed, best_free, ips_free, base))

    lines += ["## Summary: the recommendation for each cluster and size", "",
              "| cluster | model | GPUs | model of the cluster | defaults: images/s (eff.) | best, batch held (eff.) | gain (%) | best, batch free (eff.) | gain (%) |",
              "|---|---|---:|---|---:|---|---:|---|---:|"]
    for case, ranks, k, base_ips, ideal, bf, ipf, bb, ipb, base in summary:
        gf, gb = 100 * (ipf / base_ips - 1), 100 * (ipb / base_ips - 1)
        held = f"{changes(bf, base)} ({ipf / ideal:.3f})" if gf >= NOISE else f"defaults ({base_ips / ideal:.3f})"
        free = f"{changes(bb, base)} ({ipb / ideal:.3f})" if gb >= NOISE else f"defaults ({base_ips / ideal:.3f})"
        lines.append(f"| {case.hardware} | {case.name} | {ranks} | {SCENARIOS[k][0]} | {base_ips:,.0f} ({base_ips / ideal:.3f}) | "
                     f"{held} | {gf:+.1f} | {free} | {gb:+.1f} |")
    lines += ["", "Recommendations (a change is recommended when it gains at least "
              f"{NOISE}% in both models of the cluster; losses are the worst of the two models):", ""]
    for i in range(0, len(summary), len(SCENARIOS)):
        group = summary[i:i + len(SCENARIOS)]
        case, ranks = group[0][0], group[0][1]
        picks = {changes(g[5], g[9]) for g in group}
        gains = [100 * (g[6] / g[3] - 1) for g in group]
        free_gains = [100 * (g[8] / g[3] - 1) for g in group]
        if len(picks) == 1 and min(gains) >= NOISE:
            rec = f"use **{picks.pop()}** ({' / '.join(f'{x:+.0f}%' for x in gains)} in the plain / varied model)"
        else:
            rec = "keep kolo's defaults (no setting gains 0.5% in both models)"
        if min(free_gains) >= NOISE + max(gains):
            rec += f"; with the batch free: {changes(group[0][7], group[0][9])}"
        for b, g in batch_alone.get((case.name, ranks), []):
            rec += f"; a batch of {b} per GPU alone gains {' / '.join(f'{x:+.0f}%' for x in g)}"
        bad = avoid.get((case.name, ranks), [])
        if bad:
            rec += "; avoid " + ", ".join(f"{name} ({loss:+.1f}%)" for loss, name in bad[:4])
        lines.append(f"- {case.hardware}, {case.name}, {ranks} GPUs: {rec}.")
    lines += ["", "Models of the cluster: " + "; ".join(f"{tag}: {text}" for tag, text, _ in SCENARIOS) + ".", "",
              f"{runner.sim.calls} kolo-sim runs, {runner.sim.seconds:.1f} s of kolo-sim time, "
              f"{time.perf_counter() - start:.1f} s in all."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        png = os.path.splitext(args.out)[0] + ".png"
        plot(summary, png)
        with open(args.out, "w") as f:
            f.write(text.rstrip("\n") + f"\n\nPlot: `{os.path.basename(png)}` (efficiency, defaults against the best "
                    "found with the batch held).\n")
        print(f"\nwrote {args.out} and {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
