#!/usr/bin/python3
"""PyTorch's side of bench/models/compare_models.py: the same configuration as
bench/models/model_benchmark, printed as the same JSON line. Needs Debian's python3-torch.

    /usr/bin/python3 bench/models/bench_pytorch.py --model resnet18 --batch 32 --size 32 --classes 10 \
        --threads 2 --mode train --steps 10
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "parity"))
from export_fixtures import make_net  # the same nets kolo-parity checks against


def status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mode", default="train", choices=["train", "infer"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    # Peak memory as model_benchmark measures it: above the level before the net exists.
    before = status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    net = make_net(a.model, a.classes)
    channels = 1 if a.model == "mnist_convnet" else 3
    x = (torch.arange(a.batch * channels * a.size * a.size) * 7919 % 1000).float().div(1000).sub(0.5)
    x = x.reshape(a.batch, channels, a.size, a.size)
    y = torch.arange(a.batch) % a.classes
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    train = a.mode == "train"
    net.train(train)

    def step():
        if not train:
            with torch.no_grad():
                net(x)
            return
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    print(json.dumps({"framework": "pytorch", "model": a.model, "mode": a.mode, "batch": a.batch, "size": a.size,
                      "threads": a.threads, "step_ms_min": round(times[0], 3),
                      "step_ms_median": round(times[len(times) // 2], 3),
                      "images_per_s": round(a.batch / times[len(times) // 2] * 1e3, 1),
                      "peak_mb": round(status_mb("VmHWM") - before, 1)}))


if __name__ == "__main__":
    main()
