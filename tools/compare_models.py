#!/usr/bin/env python3
"""Runs kolo's model layer and PyTorch on the same configurations, one after the other in
the same run, and prints throughput ratios (kolo / PyTorch; > 1 is faster) and peak
memory (above the process before the net was built). Each configuration runs in a fresh process.

    tools/compare_models.py [--build build] [--steps 10] [--only resnet18]

Configurations (issue 4): MNIST net batch 100 28×28, ResNet-18 batch 32 32×32 (10 classes),
ResNet-50 batch 16 32×32 (1000 classes); 1 and 2 threads; train and infer.
"""
import argparse
import json
import os
import subprocess

CONFIGS = [("mnist_convnet", 100, 28, 10), ("resnet18", 32, 32, 10), ("resnet50", 16, 32, 1000)]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    print("| model | mode | threads | kolo img/s | PyTorch img/s | ratio | kolo peak MB | PyTorch peak MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for model, batch, size, classes in CONFIGS:
        if a.only and model != a.only:
            continue
        for mode in ("train", "infer"):
            for threads in (1, 2):
                args = ["--model", model, "--batch", str(batch), "--size", str(size), "--classes", str(classes),
                        "--threads", str(threads), "--mode", mode, "--steps", str(a.steps)]
                k = run([os.path.join(a.build, "examples", "model_benchmark")] + args)
                p = run(["/usr/bin/python3", os.path.join(ROOT, "tools", "bench_pytorch.py")] + args)
                print("| %s b%d %d×%d | %s | %d | %.0f | %.0f | **%.2f** | %.0f | %.0f |" % (
                    model, batch, size, size, mode, threads, k["images_per_s"], p["images_per_s"],
                    k["images_per_s"] / p["images_per_s"], k["peak_mb"], p["peak_mb"]), flush=True)


if __name__ == "__main__":
    main()
