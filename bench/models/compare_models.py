#!/usr/bin/env python3
"""Runs kolo's model layer and PyTorch on the same configurations, alternating in the same
run, and prints throughput ratios (kolo / PyTorch; > 1 is faster) and peak memory (above
the process before the net was built). Each measurement is a fresh process.

    bench/models/compare_models.py [--build build] [--steps 10] [--rounds 3] [--only resnet18]

Configurations (docs/perf.md, "Model layer on the CPU"): MNIST net batch 100 28×28, ResNet-18 batch 32 32×32 (10 classes),
ResNet-50 batch 16 32×32 (1000 classes); 1 and 2 threads; train and infer.

The machines this runs on are shared and noisy (a step's time swings by ±50 % between
identical runs), so each configuration runs `rounds` times, kolo and PyTorch back to back
in alternating order, and the ratio reported is the median of the rounds' ratios.
"""
import argparse
import json
import os
import statistics
import subprocess

CONFIGS = [("mnist_convnet", 100, 28, 10), ("resnet18", 32, 32, 10), ("resnet50", 16, 32, 1000)]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="", help="one model, e.g. resnet18")
    ap.add_argument("--mode", default="", choices=["", "train", "infer"])
    a = ap.parse_args()
    kolo = [os.path.join(a.build, "bench", "models", "model_benchmark")]
    torch = ["/usr/bin/python3", os.path.join(HERE, "bench_pytorch.py")]
    print("| model | mode | threads | kolo img/s | PyTorch img/s | kolo / PyTorch | kolo peak MB | PyTorch peak MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for model, batch, size, classes in CONFIGS:
        if a.only and model != a.only:
            continue
        for mode in ("train", "infer"):
            if a.mode and mode != a.mode:
                continue
            for threads in (1, 2):
                args = ["--model", model, "--batch", str(batch), "--size", str(size), "--classes", str(classes),
                        "--threads", str(threads), "--mode", mode, "--steps", str(a.steps)]
                ks, ps = [], []
                for r in range(a.rounds):
                    first, second = (kolo, torch) if r % 2 == 0 else (torch, kolo)
                    x, y = run(first + args), run(second + args)
                    k, p = (x, y) if first is kolo else (y, x)
                    ks.append(k)
                    ps.append(p)
                ratio = statistics.median(k["images_per_s"] / p["images_per_s"] for k, p in zip(ks, ps))
                print("| %s b%d %d×%d | %s | %d | %.0f | %.0f | **%.2f** | %.0f | %.0f |" % (
                    model, batch, size, size, mode, threads,
                    statistics.median(k["images_per_s"] for k in ks), statistics.median(p["images_per_s"] for p in ps),
                    ratio, max(k["peak_mb"] for k in ks), max(p["peak_mb"] for p in ps)), flush=True)


if __name__ == "__main__":
    main()
