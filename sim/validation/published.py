#!/usr/bin/python3
"""Validates kolo-sim against published scaling tables: for each table, kolo-sim is run
with that table's own one-GPU time and the cluster's hardware file, with no parameter
fitted to the table, and its prediction is set beside the published number.

    sim/validation/published.py [--kolo-sim PATH] [--loader-cpu-ms MS] [--out FILE.md]

    --kolo-sim       the simulator (default: build/sim/kolo-sim under the repository root,
                     found from this script's location)
    --loader-cpu-ms  the CPU ms to load one ImageNet image (table b); by default it is
                     measured on this machine by sim/validation/measure_loader.py (one
                     core: JPEG decode + RandomResizedCrop + flip + ToTensor + Normalize)
    --out FILE.md    also write the report there, and the plot of predicted against
                     published speedup beside it (FILE.png); default: print only

Tables:
  (a) Keras ResNet50V2 (stand-in: the resnet50 profile), CIFAR-10 resized to 128x128
      (50,000 images), batch 256 per GPU, data in memory, nodes of 4 V100
      (v100_nvlink2_edr): epoch 45 s, 24 s, 12 s on 1, 2, 4 GPUs.
  (b) PyTorch ResNet-18 on ImageNet (1,281,167 images), batch 32 per GPU, 16 loader
      workers per node, 4 x V100 nodes (v100_nvlink2_edr): one node with 1-4 GPUs (epoch
      57:46, 37:12, 32:57, 32:06), and 1-16 nodes of 4 GPUs (speedup over one node 1.92,
      3.74, 7.13, 13.86 at 2, 4, 8, 16 nodes).
  (c) Horovod (Sergeev & Del Balso 2018, arXiv:1802.05799; Horovod's docs/benchmarks):
      128 servers of 4 Pascal GPUs on 25 Gbit/s RoCE (pascal_25g_roce), TensorFlow
      tf_cnn_benchmarks, batch 64 per GPU, synthetic data: scaling efficiency at 512 GPUs
      about 90% for Inception V3 and ResNet-101, 68% for VGG-16.

A prediction that misses by more than 10% is followed by a sensitivity table: the model
term suspected of the miss is varied (loader CPU per image, jitter and stragglers, link
bandwidth, fusion threshold) and the prediction shown at each setting. The sensitivity
tables are diagnosis, not calibration: the main tables never use their settings.

Runs in well under two minutes on two cores.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MISS = 10.0  # percent

# ---- one-GPU throughputs for table (c) -----------------------------------------------
# TensorFlow's benchmarks page (tensorflow.org/performance/benchmarks, "Details for NVIDIA
# DGX-1 (NVIDIA Tesla P100)", training, synthetic data, batch 64 per GPU, 1 GPU).
# The page has two revisions: May 2017 (InceptionV3 142, ResNet-50 219, ResNet-152 91.8,
# VGG16 154) and a later one (142, 238, 95.6, 132). The brief's figures are used:
# InceptionV3 142, VGG16 154 (May 2017), ResNet-50 238 and ResNet-152 95.6 (later).
P100_IMAGES_PER_S = {"inception_v3": 142.0, "vgg16": 154.0, "resnet50": 238.0, "resnet152": 95.6}


def profile_flops(model):
    with open(os.path.join(REPO, "sim", "profiles", model + ".json")) as f:
        return json.load(f)["forward_flops_per_image"]


def resnet101_images_per_s():
    """No published single-P100 ResNet-101 figure was found: interpolate the time per image
    between ResNet-50 and ResNet-152 by the profiles' forward FLOPs (time linear in FLOPs)."""
    f50, f101, f152 = (profile_flops(m) for m in ("resnet50", "resnet101", "resnet152"))
    t50, t152 = 1 / P100_IMAGES_PER_S["resnet50"], 1 / P100_IMAGES_PER_S["resnet152"]
    t101 = t50 + (f101 - f50) / (f152 - f50) * (t152 - t50)
    return 1 / t101, (f50, f101, f152)


# ---- running kolo-sim -----------------------------------------------------------------
class Sim:
    def __init__(self, path):
        self.path = path
        self.calls = 0
        self.seconds = 0.0

    def run(self, args):
        """Runs kolo-sim once; returns its rows (one per rank count) as dicts with ranks,
        nodes, epoch_s, images_per_s (from --csv, 6 digits) and comm_share, loader_wait
        (from the printed table)."""
        with tempfile.TemporaryDirectory() as tmp:
            csv_path = os.path.join(tmp, "rows.csv")
            command = [self.path] + [str(a) for a in args] + ["--csv", csv_path]
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            self.seconds += time.perf_counter() - start
            self.calls += 1
            if done.returncode != 0:
                raise RuntimeError(f"kolo-sim failed ({done.returncode}): {' '.join(command)}\n{done.stderr}")
            with open(csv_path) as f:
                rows = [{"ranks": int(r["ranks"]), "nodes": int(r["nodes"]), "epoch_s": float(r["epoch_s"]),
                         "images_per_s": float(r["images_per_s"]), "comm_share": float(r["comm_share"]),
                         "efficiency_p10": float(r["efficiency_p10"]), "efficiency_p90": float(r["efficiency_p90"])}
                        for r in csv.DictReader(f)]
        printed = [line.split("|")[1:-1] for line in done.stdout.splitlines()
                   if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
        for row, cells in zip(rows, printed):
            row["loader_wait"] = float(cells[7])
        return rows

    def by_ranks(self, args):
        return {r["ranks"]: r for r in self.run(args)}


def speedup_band(row, ratio):
    """The p10-p90 of a speedup over the first row of its run, from the efficiency band."""
    return row["efficiency_p10"] * ratio, row["efficiency_p90"] * ratio


def command_text(args):
    return "build/sim/kolo-sim " + " ".join(str(a) for a in args)


def err(pred, pub):
    return 100.0 * (pred - pub) / pub


def fmt(x, digits=2):
    return f"{x:.{digits}f}"


def mmss(s):
    return f"{int(s // 60)}:{int(round(s % 60)):02d}"


class Report:
    def __init__(self):
        self.lines = []
        self.points = []  # (label, published speedup, predicted speedup, table)
        self.rows = []    # every compared row, for the summary

    def add(self, *lines):
        self.lines.extend(lines)

    def table(self, header, rows):
        self.add("| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for r in rows:
            self.add("| " + " | ".join(r) + " |")
        self.add("")

    def compare(self, table, rows):
        """rows: (configuration, published, predicted, digits, is_speedup, text_pub, text_pred, band, note):
        band is the prediction's p10-p90 (lo, hi) or None; note marks a row that is not held out."""
        out, misses = [], []
        for conf, pub, pred, digits, speedup, tpub, tpred, band, note in rows:
            e = err(pred, pub)
            miss = abs(e) > MISS
            inside = "" if band is None else ("yes" if band[0] <= pub <= band[1] else "no")
            out.append([conf + (f" ({note})" if note else ""), tpub or fmt(pub, digits), tpred or fmt(pred, digits),
                        "" if band is None else f"{fmt(band[0], digits)}–{fmt(band[1], digits)}", inside,
                        f"{e:+.1f}" + (" **miss**" if miss else "")])
            self.rows.append((table, conf, pub, pred, e, note))
            if speedup is not None:
                self.points.append((conf, speedup[0], speedup[1], table, band))
            if miss:
                misses.append(conf)
        self.table(["configuration", "published", "predicted (median)", "p10–p90", "published inside", "error (%)"], out)
        return misses

    def text(self):
        return "\n".join(self.lines) + "\n"


# ---- table (a) ------------------------------------------------------------------------
def table_a(sim, rep):
    args = ["--hardware", "v100_nvlink2_edr", "--model", "resnet50", "--batch", 256, "--images", 50000,
            "--one-device-epoch-s", 45, "--ranks", "1,2,4"]
    r = sim.by_ranks(args)
    rep.add("## (a) Keras ResNet50V2, CIFAR-10 at 128x128, batch 256 per GPU, 4 x V100 node", "",
            "Stand-in profile: `resnet50` (torchvision's ResNet-50 v1, 25.6 M parameters at 224x224; Keras' "
            "ResNet50V2 has the same convolutions and about as many parameters, with batch norm moved before "
            "each convolution). The profile's FLOPs are for 224x224, "
            "but with the 1-GPU epoch given only the relative timing of the gradients matters. Data in memory: "
            "no loader. Full epoch simulated.", "",
            f"`{command_text(args)}`", "")
    pub_epoch = {1: 45.0, 2: 24.0, 4: 12.0}
    rows = [(f"{n} GPU{'s' if n > 1 else ''}: epoch (s)", pub_epoch[n], r[n]["epoch_s"], 2, None, None, None, None, "")
            for n in (1, 2, 4)]
    for n in (2, 4):
        pub = pub_epoch[1] / pub_epoch[n]
        pred = r[n]["images_per_s"] / r[1]["images_per_s"]
        rows.append((f"{n} GPUs: speedup over 1", pub, pred, 2, (pub, pred), None, None, speedup_band(r[n], n), ""))
    misses = rep.compare("a", rows)
    steps4 = 50000 // (256 * 4)
    rep.add(f"Note: kolo-sim runs whole steps only (50,000 // (256 x n)), so its 4-GPU epoch covers "
            f"{steps4 * 256 * 4:,} images, not 50,000 ({100 * (1 - steps4 * 1024 / 50000):.1f}% fewer); Keras runs "
            f"the last partial batch too. At the same throughput the full 50,000 images would take "
            f"{50000 / r[4]['images_per_s']:.2f} s on 4 GPUs.", "")
    if misses:
        rep.add("Sensitivity: none defined for this table (the miss is not expected).", "")
    return r


# ---- table (b) ------------------------------------------------------------------------
B_BASE = ["--hardware", "v100_nvlink2_edr", "--model", "resnet18", "--batch", 32, "--images", 1281167,
          "--one-device-epoch-s", 3466, "--max-steps", 400]


def table_b(sim, rep, loader_ms, loader_info):
    pub_epoch = {1: 57 * 60 + 46, 2: 37 * 60 + 12, 3: 32 * 60 + 57, 4: 32 * 60 + 6}
    pub_speedup = {2: 1.55, 3: 1.75, 4: 1.80}
    pub_nodes = {2: 1.92, 4: 3.74, 8: 7.13, 16: 13.86}
    one = B_BASE + ["--loader-cpu-ms", loader_ms, "--ranks", "1,2,3,4"]
    many = B_BASE + ["--loader-cpu-ms", loader_ms, "--ranks", "4,8,16,32,64"]
    r1 = sim.by_ranks(one)
    rm = sim.by_ranks(many)
    rep.add("## (b) PyTorch ResNet-18, ImageNet, batch 32 per GPU, 4 x V100 nodes", "",
            f"Loader CPU per image: **{loader_ms:.3f} ms**, {loader_info}. "
            "Loader cores per node: `loader_cores_per_node` = 32 from the hardware file (kolo-sim has no "
            "worker count: the published runs' 16 loader workers per node are not an input). Full epochs "
            "simulated.", "",
            f"`{command_text(one)}`", "", f"`{command_text(many)}`", "")
    rows = [(f"1 node, {n} GPU{'s' if n > 1 else ''}: epoch (m:s)", pub_epoch[n], r1[n]["epoch_s"], 0, None,
             mmss(pub_epoch[n]), mmss(r1[n]["epoch_s"]), None, "") for n in (1, 2, 3, 4)]
    for n in (2, 3, 4):
        pred = r1[n]["images_per_s"] / r1[1]["images_per_s"]
        rows.append((f"1 node, {n} GPUs: speedup over 1 GPU", pub_speedup[n], pred, 2, (pub_speedup[n], pred), None, None,
                     speedup_band(r1[n], n), ""))
    for nodes in (2, 4, 8, 16):
        pred = rm[4 * nodes]["images_per_s"] / rm[4]["images_per_s"]
        rows.append((f"{nodes} nodes x 4 GPUs: speedup over 1 node", pub_nodes[nodes], pred, 2,
                     (pub_nodes[nodes], pred), None, None, speedup_band(rm[4 * nodes], nodes), ""))
    misses = rep.compare("b", rows)
    rep.add("Loader wait share in the predicted 1-node runs: "
            + ", ".join(f"{n} GPU: {r1[n]['loader_wait']:.3f}" for n in (1, 2, 3, 4)) + ".", "")

    single = [m for m in misses if m.startswith("1 node")]
    multi = [m for m in misses if "nodes x 4" in m]
    if single:
        pub_ips4 = 1281167 / pub_epoch[4]
        rep.add("### Sensitivity (b), one node: the loader's CPU per image", "",
                f"Missed: {', '.join(single)}. The published 1-node runs flatten at "
                f"{pub_ips4:.0f} images/s ({pub_speedup[4]:.2f}x); in kolo-sim a node loads at most "
                f"32 cores / loader-cpu-ms images/s, which would need {32e3 / pub_ips4:.0f} ms of CPU per image "
                f"(or {16e3 / pub_ips4:.0f} ms if only 16 workers' cores were busy), against the "
                f"{loader_ms:.2f} ms measured here. Speedup over 1 GPU at each setting:", "")
        out, fits = [], []
        # Coarse, then 1 ms steps around the cost at which the cap meets the published 4-GPU rate.
        for ms in (loader_ms, 5, 10, 20, 30, 40, 48, 50, 51, 52, 53, 54, 56, 60):
            r = sim.by_ranks(B_BASE + ["--loader-cpu-ms", ms, "--ranks", "1,2,3,4"])
            s = {n: r[n]["images_per_s"] / r[1]["images_per_s"] for n in (2, 3, 4)}
            worst = max(abs(err(s[n], pub_speedup[n])) for n in (2, 3, 4))
            fits.append((worst, ms))
            out.append([f"{ms:g}" + (" (measured)" if ms == loader_ms else ""),
                        *(f"{s[n]:.2f} ({err(s[n], pub_speedup[n]):+.0f}%)" for n in (2, 3, 4)),
                        mmss(r[4]["epoch_s"]), f"{r[4]['loader_wait']:.2f}", f"{worst:.0f}"])
        out.append(["published", "1.55", "1.75", "1.80", "32:06", "", ""])
        rep.table(["--loader-cpu-ms", "2 GPUs", "3 GPUs", "4 GPUs", "4-GPU epoch", "4-GPU loader wait", "max error (%)"], out)
        best_worst, best_ms = min(fits)
        within = [ms for worst, ms in fits if worst <= 10]
        if within:
            shape = (f"Every setting from {min(within):g} to {max(within):g} ms puts all three speedups within "
                     f"±10% (best {best_ms:g} ms, {best_worst:.0f}%): the published bend (1.55, 1.75, 1.80) lies "
                     "within ±10% of kolo-sim's hard cap, min(compute, cores / cost), flat from 2 GPUs on, so "
                     "the cap's shape is not what misses; the cost is, "
                     f"about {best_ms / loader_ms:.0f}x the measurement. That window "
                     "is read off the rows it would be judged by, so it is not a default.")
        else:
            shape = (f"The closest setting in the sweep, {best_ms:g} ms ({best_ms / loader_ms:.0f}x the measurement), "
                     f"still misses one row by {best_worst:.0f}%.")
        rep.add(f"The loader term is the one responsible. At the measured {loader_ms:.2f} ms the node is "
                f"compute-bound (speedup n). {shape} The measurement leaves out reading the JPEG from storage, "
                "the DataLoader's per-sample Python and inter-process overhead, the training processes' own CPU "
                "use, and the published nodes' CPUs (unknown, likely older than this machine's); kolo-sim has no "
                "term for a worker count (16 per node) either.", "")
    if multi:
        rep.add("### Sensitivity (b), 1-16 nodes: step-time variation and the link", "",
                f"Missed: {', '.join(multi)}. With one node's run compute-bound and EDR InfiniBand carrying "
                "ResNet-18's 47 MB of gradients in a few ms, kolo-sim predicts nearly linear scaling. "
                "Speedup over one node at each setting (jitter and stragglers act on each rank's compute; "
                "seed 1; full epochs):", "")
        out, fits = [], []
        settings = [("defaults (as above)", []), ("--jitter 0.02", ["--jitter", 0.02]), ("--jitter 0.05", ["--jitter", 0.05]),
                    ("--jitter 0.10", ["--jitter", 0.10]), ("--jitter 0.15", ["--jitter", 0.15]),
                    ("--stragglers 0.01 (2x slower)", ["--stragglers", 0.01]),
                    ("--stragglers 0.02 (2x slower)", ["--stragglers", 0.02]),
                    ("--link-GBps 6.25 (EDR / 2)", ["--link-GBps", 6.25]),
                    ("--link-GBps 1.25 (EDR / 10, i.e. 10 Gbit/s)", ["--link-GBps", 1.25])]
        for name, extra in settings:
            r = sim.by_ranks(B_BASE + ["--loader-cpu-ms", loader_ms, "--ranks", "4,8,16,32,64"] + extra)
            s = {k: r[4 * k]["images_per_s"] / r[4]["images_per_s"] for k in (2, 4, 8, 16)}
            worst = max(abs(err(s[k], pub_nodes[k])) for k in (2, 4, 8, 16))
            fits.append((worst, name))
            out.append([name] + [f"{s[k]:.2f} ({err(s[k], pub_nodes[k]):+.0f}%)" for k in (2, 4, 8, 16)] + [f"{worst:.1f}"])
        out.append(["published", "1.92", "3.74", "7.13", "13.86", ""])
        rep.table(["setting", "2 nodes", "4 nodes", "8 nodes", "16 nodes", "max error (%)"], out)
        best_worst, best_name = min(fits)
        rep.add(f"Closest: `{best_name}`, every row within {best_worst:.1f}%. The term responsible is step-time "
                "variation between ranks: each step waits for the slowest rank, and kolo-sim's defaults have "
                "none (jitter 0, no stragglers). A slower link also bends the curve, but EDR would have to "
                "deliver a tenth of its rate; halving it changes little, since ResNet-18's 47 MB of gradients "
                "allreduce in a few ms against an 87 ms step. The published nodes were loader-bound, and "
                "plausibly a loader's batch times vary more than a GPU's compute.", "")
    return r1, rm


# ---- table (c) ------------------------------------------------------------------------
C_MODELS = [("Inception V3", "inception_v3", 0.90), ("ResNet-101", "resnet101", 0.90), ("VGG-16", "vgg16", 0.68)]
# sim/defaults.json's jitter was set on this table (its "sources" say so): not held out.
TRAINING_TABLE = "c"


def c_args(model, ips, ranks, extra=()):
    return ["--hardware", "pascal_25g_roce", "--model", model, "--batch", 64, "--images", 1281167,
            "--one-device-images-per-s", f"{ips:.4g}", "--ranks", ranks, "--max-steps", 30] + list(extra)


def table_c(sim, rep):
    r101, (f50, f101, f152) = resnet101_images_per_s()
    ips = dict(P100_IMAGES_PER_S)
    ips["resnet101"] = r101
    rep.add("## (c) Horovod paper: 512 Pascal GPUs (128 servers of 4), 25 Gbit/s RoCE, TensorFlow, batch 64 per GPU", "",
            "Published: about 90% scaling efficiency at 512 GPUs for Inception V3 and ResNet-101 and 68% for "
            "VGG-16, on 128 servers of 4 Pascal GPUs joined by a RoCE-capable 25 Gbit/s network. Source used: "
            "Horovod's README / docs/benchmarks (the 512-GPU chart and its caption), whose reproduction recipe is "
            "tf_cnn_benchmarks with `--batch_size 64` and synthetic data. The arXiv paper (1802.05799) itself "
            "could not be read here; a third-party summary of it puts its own charts at up to 128 GPUs (88% for "
            "Inception V3 and ResNet-101 over TCP, a few % more over RDMA, and ~30% more for VGG-16 with "
            "RDMA), consistent with the README's figures. The hardware file pascal_25g_roce has "
            "`ranks_per_node` 4, which matches. Images per epoch 1,281,167; `--max-steps 30`.", "",
            "One-GPU throughput (no 1-GPU figure is in the paper): TensorFlow's benchmarks page, Tesla P100 "
            "(DGX-1), training, synthetic data, batch 64: Inception V3 142 images/s, VGG-16 154 (May 2017 revision; "
            "a later revision lists 132), ResNet-50 238, ResNet-152 95.6. ResNet-101 is not listed and no "
            f"published single-P100 figure was found: it is **interpolated** between ResNet-50 and ResNet-152, time per "
            f"image linear in the profiles' forward FLOPs ({f50 / 1e9:.2f}, {f101 / 1e9:.2f}, {f152 / 1e9:.2f} GFLOP): "
            f"**{r101:.1f} images/s**. Those are DGX-1 (P100 SXM2) figures; the paper's servers may have had PCIe "
            "P100s (the hardware file assumes so), somewhat slower, which would raise the predicted efficiency.", "",
            "Efficiency at 512 = images/s(512) / (512 x images/s(1)), both from kolo-sim.", "")
    base, at512, rows = {}, {}, []
    for name, model, pub in C_MODELS:
        args = c_args(model, ips[model], "1,512")
        r = sim.by_ranks(args)
        base[model] = r[1]["images_per_s"]
        at512[model] = r[512]
        eff = r[512]["images_per_s"] / (512 * r[1]["images_per_s"])
        band = (r[512]["efficiency_p10"], r[512]["efficiency_p90"])
        note = "training: the jitter default was set on this table" if TRAINING_TABLE == "c" else ""
        rows.append((f"{name}, 512 GPUs: efficiency", pub, eff, 3, (pub * 512, eff * 512), f"{pub:.2f}", f"{eff:.3f}",
                     band, note))
        rep.add(f"`{command_text(args)}`", "")
    misses = rep.compare("c", rows)
    rep.add("Predicted allreduce share of the time at 512: " +
            ", ".join(f"{n} {at512[m]['comm_share']:.2f}" for n, m, _ in C_MODELS) +
            " (the collectives overlap the backward pass; the share is of wall time).", "")
    if misses:
        rep.add("### Sensitivity (c): what moves the efficiency at 512", "",
                f"Missed: {', '.join(misses)}. Efficiency at 512 GPUs at each setting (one term changed at a time; "
                "the 1-GPU baseline is the run without variation, whose throughput no setting here changes; "
                "jitter and stragglers with seed 1):", "")
        settings = [("defaults (as above)", [], None),
                    ("--jitter 0.02", ["--jitter", 0.02], None), ("--jitter 0.03", ["--jitter", 0.03], None),
                    ("--jitter 0.04", ["--jitter", 0.04], None), ("--jitter 0.05", ["--jitter", 0.05], None),
                    ("--jitter 0.10", ["--jitter", 0.10], None),
                    ("--stragglers 0.001 --straggler-slowdown 1.5", ["--stragglers", 0.001, "--straggler-slowdown", 1.5], None),
                    ("--link-GBps 2.5 (20 Gbit/s achieved)", ["--link-GBps", 2.5], None),
                    ("--link-GBps 2.0 (16 Gbit/s achieved)", ["--link-GBps", 2.0], None),
                    ("--link-GBps 1.0", ["--link-GBps", 1.0], None),
                    ("--link-latency-us 10", ["--link-latency-us", 10], None),
                    ("--fusion-threshold-mb 0", ["--fusion-threshold-mb", 0], None),
                    ("--fusion-threshold-mb 16", ["--fusion-threshold-mb", 16], None),
                    ("1-GPU VGG-16 at 132 images/s (later revision)", [], {"vgg16": 132.0})]
        out = []
        closest = {m: (1e9, "") for _, m, _ in C_MODELS}
        for label, extra, override in settings:
            cells = [label]
            for name, model, pub in C_MODELS:
                if override is not None and model not in override:
                    cells.append("")
                    continue
                if override:
                    r = sim.by_ranks(c_args(model, override[model], "1,512", extra))
                    eff = r[512]["images_per_s"] / (512 * r[1]["images_per_s"])
                else:
                    r = sim.by_ranks(c_args(model, ips[model], "512", extra))
                    eff = r[512]["images_per_s"] / (512 * base[model])
                e = err(eff, pub)
                if extra and abs(e) < closest[model][0]:
                    closest[model] = (abs(e), label)
                cells.append(f"{eff:.3f} ({e:+.0f}%)")
            out.append(cells)
        out.append(["published"] + [f"{pub:.2f}" for _, _, pub in C_MODELS])
        rep.table(["setting"] + [n for n, _, _ in C_MODELS], out)
        rep.add("Closest single change: " + "; ".join(
            f"{n}: `{closest[m][1]}` ({closest[m][0]:.0f}% off)" for n, m, _ in C_MODELS) + ".", "")
        rep.add("Inception V3 and ResNet-101: the term responsible is step-time variation (jitter or "
                "stragglers), which kolo-sim's defaults leave out: at 512 ranks every step waits for the "
                "slowest of 512, and a 0.1% chance per rank per step of a 1.5x slower step puts a straggler "
                "in 40% of the steps. The one change that brings both to ~90% together is a jitter of "
                "0.03-0.04. The link is not the term: their gradients (95 and 178 MB) allreduce within the "
                "backward pass at 512 GPUs; a link at a third of the rate (1 GB/s) does bring ResNet-101 to "
                "~89%, but leaves Inception V3 at 100%, unlike the published pair.", "",
                "VGG-16: the term responsible is the link's achieved bandwidth. Its 553 MB of gradients take "
                "about 355 ms to ring-allreduce at the 3.125 GB/s line rate, more than its whole backward "
                "pass (277 ms at 154 images/s), so about 90 ms per step cannot be hidden; at ~2.5 GB/s (80% "
                "of 25 Gbit/s, plausible for RoCE's headers and the NCCL 2 rings of the time) the prediction "
                "meets the published 68%. The VGG-16 prediction is as sensitive to the 1-GPU throughput: "
                "with the benchmark page's later 132 images/s (more compute to hide the allreduce behind) it "
                "misses by more. Fusion hardly matters for VGG-16's 32 large tensors.", "")
    return base, at512


# ---- the plot -------------------------------------------------------------------------
def short_label(conf, table):
    conf = conf.replace(": speedup over 1 GPU", "").replace(": speedup over 1 node", "").replace(
        ": speedup over 1", "").replace(", 512 GPUs: efficiency", "").replace(" x 4 GPUs", "x4")
    return f"{table}: {conf}"


def plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"a": ("o", "tab:blue", "(a) Keras ResNet50V2, 1 V100 node"),
              "b": ("s", "tab:orange", "(b) PyTorch ResNet-18, V100 nodes"),
              "c": ("^", "tab:green", "(c) Horovod paper, 512 P100s")}
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.8))
    panels = [(axes[0], ("a", "b"), (0, 17), "(a), (b): speedup over 1 GPU or 1 node"),
              (axes[1], ("c",), (300, 530), "(c): speedup at 512 GPUs = efficiency x 512")]
    for ax, tables, (lo, hi), title in panels:
        xs = [lo, hi]
        ax.plot(xs, xs, color="black", lw=1, label="predicted = published")
        ax.fill_between(xs, [x * 0.9 for x in xs], [x * 1.1 for x in xs], color="0.85", label="±10%")
        for table in reversed(tables):  # (a) over (b): its points sit on (b)'s
            marker, color, label = styles[table]
            pts = [p for p in points if p[3] == table]
            # The p10-p90 band of each prediction as a vertical bar.
            banded = [p for p in pts if p[4] is not None]
            ax.errorbar([p[1] for p in banded], [p[2] for p in banded],
                        yerr=[[max(0.0, p[2] - p[4][0]) for p in banded], [max(0.0, p[4][1] - p[2]) for p in banded]],
                        fmt="none", ecolor=color, elinewidth=1, capsize=3, zorder=2)
            if table == "a":
                ax.scatter([p[1] for p in pts], [p[2] for p in pts], marker=marker, facecolors="none", edgecolors=color,
                           linewidths=1.5, s=110, label=label, zorder=4)
            else:
                ax.scatter([p[1] for p in pts], [p[2] for p in pts], marker=marker, color=color, s=45, label=label, zorder=3)
            for i, (conf, pub, pred, _, _) in enumerate(pts):
                if table == "c":
                    offset, ha = (8, 2 - 12 * i), "left"
                elif table == "a":
                    offset, ha = (8, -14), "left"
                elif conf.startswith("1 node"):
                    offset, ha = (-8, 2), "right"
                else:
                    offset, ha = (8, 2), "left"
                ax.annotate(short_label(conf, table), (pub, pred), textcoords="offset points", xytext=offset,
                            ha=ha, fontsize=7)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_xlabel("published speedup")
        ax.set_ylabel("kolo-sim predicted speedup")
        ax.set_title(title, fontsize=10)
        ax.legend(loc="upper left", fontsize=8)
        ax.grid(True, alpha=0.3)
    fig.suptitle("kolo-sim against published scaling (each table's own 1-GPU time, one set of defaults; bars: p10-p90)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def measure_loader():
    script = os.path.join(HERE, "measure_loader.py")
    done = subprocess.run([sys.executable, script, "--json"], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    info = (f"measured on this machine by `sim/validation/measure_loader.py` (one core, median of "
            f"{len(result['rounds_ms'])} rounds; JPEG {result['size']}, {result['jpeg_kb_mean']} KB, "
            f"{result['content']} content; torch {result['torch']})")
    return result["loader_cpu_ms"], info


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kolo-sim", default=os.path.join(REPO, "build", "sim", "kolo-sim"))
    parser.add_argument("--loader-cpu-ms", type=float, help="skip the measurement and use this")
    parser.add_argument("--out", help="write the markdown report here and the plot beside it (.png)")
    args = parser.parse_args(argv)
    if not os.access(args.kolo_sim, os.X_OK):
        sys.exit(f"published.py: no kolo-sim at {args.kolo_sim} (build it: ninja -C build kolo-sim)")

    start = time.perf_counter()
    if args.loader_cpu_ms is not None:
        loader_ms, loader_info = args.loader_cpu_ms, "given with --loader-cpu-ms"
    else:
        loader_ms, loader_info = measure_loader()
    sim = Sim(args.kolo_sim)
    rep = Report()
    version = subprocess.run([args.kolo_sim, "--version"], capture_output=True, text=True).stdout.strip()
    rep.add("# kolo-sim against published scaling tables", "",
            f"Written by `sim/validation/published.py` ({version}). Each table uses its own 1-GPU time, "
            "the cluster's hardware file (sim/hardware/) and kolo-sim's defaults (sim/defaults.json: variation "
            "between ranks, the share of each link's line rate a collective achieves), one set for every table. "
            "Every default comes from a measurement or a cited source except the jitter, which was set on table "
            "(c), marked as such: tables (a) and (b) are held out. The prediction is the median of "
            "kolo-sim's 10 runs (seeds, and jitters across the default's range); p10–p90 is their spread. "
            f"Error = (predicted - published) / published; a row beyond ±{MISS:.0f}% is marked **miss** and "
            "followed by a sensitivity table.", "")
    table_a(sim, rep)
    table_b(sim, rep, loader_ms, loader_info)
    table_c(sim, rep)

    rep.add("## Summary", "")
    held_out = [r for r in rep.rows if not r[5]]
    within = sum(1 for r in held_out if abs(r[4]) <= MISS)
    rep.add(f"Held out (tables (a) and (b)): {within} of {len(held_out)} within ±{MISS:.0f}%. Misses: " +
            (", ".join(f"({t}) {c} {e:+.0f}%" for t, c, _, _, e, _ in held_out if abs(e) > MISS) or "none") + ".", "")
    for t, c, pub, pred, e, note in rep.rows:
        if note:
            rep.add(f"Training, not a prediction: ({t}) {c}, {pred:.3f} against {pub:.2f} ({e:+.1f}%).", "")
    png = None
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        png = os.path.splitext(args.out)[0] + ".png"
        plot(rep.points, png)
        rep.add(f"Plot: `{os.path.basename(png)}` (predicted against published speedup, ±10% band, each prediction's "
                "p10–p90 as a bar).", "")
    rep.add(f"{sim.calls} kolo-sim runs, {sim.seconds:.1f} s in kolo-sim, {time.perf_counter() - start:.1f} s in all.")
    text = rep.text()
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"\nwrote {args.out} and {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
