#!/usr/bin/python3
"""Weak-scaling efficiency of kolo against PyTorch DDP (gloo) on this machine, measured in
the same run (issue 5's benchmark):

    tools/compare_scaling.py [--build build] [--rounds 5] [--only resnet18]

For each net (the MNIST net, batch 64 per rank, 28x28; ResNet-18, batch 32 per rank,
32x32, 10 classes) it runs Horovod's synthetic benchmark at np 1 and np 2 with 1 compute
thread per rank: kolo's examples/synthetic_benchmark under mpirun, and tools/ddp_benchmark.py
(DistributedDataParallel on gloo, the same net definitions and step). The throughput of a
run is the median of its timed iterations' img/s (rank 0's clock, after the warmup
batches) times the ranks; weak-scaling efficiency = throughput(np 2) / (2 x throughput(np 1)).

The machine is shared and noisy, so the four runs of a net are repeated --rounds times in
an order that rotates every round, efficiencies are computed within each round (runs
minutes apart see similar load) and the medians over rounds are reported, with the load
average before and after.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {  # model: (batch per rank, image size, classes)
    "mnist_convnet": (64, 28, 10),
    "resnet18": (32, 32, 10),
}
ITER_LINE = re.compile(r"^Iter #\d+: ([\d.]+) img/sec per rank$", re.M)
CPU_LINE = re.compile(r"^CPU time per image on rank 0: ([\d.]+) ms$", re.M)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="one net: " + ", ".join(CONFIGS))
    p.add_argument("--warmup", type=int, default=3, help="warmup batches")
    p.add_argument("--batches-per-iter", type=int, default=3)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--timeout", type=float, default=600, help="seconds one run may take")
    a = p.parse_args(argv)
    if a.only and a.only not in CONFIGS:
        p.error(f"--only {a.only}: one of {', '.join(CONFIGS)}")
    return a


def benchmark_args(model, a):
    batch, size, classes = CONFIGS[model]
    return ["--model", model, "--batch-size", str(batch), "--image-size", str(size), "--classes", str(classes),
            "--threads", "1", "--num-warmup-batches", str(a.warmup),
            "--num-batches-per-iter", str(a.batches_per_iter), "--num-iters", str(a.iters)]


def kolo_command(a, ranks, args):
    mpirun = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    return mpirun + [os.path.join(a.build, "examples", "synthetic_benchmark", "synthetic_benchmark")] + args


def ddp_command(ranks, args):
    return ["/usr/bin/python3", os.path.join(ROOT, "tools", "ddp_benchmark.py"), "--np", str(ranks)] + args


def measure(command, ranks, timeout):
    """(all ranks' img/s: the median timed iteration of rank 0 times the ranks, rank 0's CPU ms per image)."""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    rates, cpu = [float(x) for x in ITER_LINE.findall(done.stdout)], CPU_LINE.search(done.stdout)
    if done.returncode != 0 or not rates or not cpu:
        sys.exit(f"failed (exit status {done.returncode}): {' '.join(command)}\n{done.stdout}")
    return ranks * statistics.median(rates), float(cpu.group(1))


def load_average():
    with open("/proc/loadavg") as f:
        return " / ".join(f.read().split()[:3])


def median_row(model, rates, cpu):
    """One table row from the rounds' figures; efficiencies are computed within each round."""
    efficiency = {n: [two / (2 * one) for one, two in zip(rates[(n, 1)], rates[(n, 2)])] for n in ("kolo", "ddp")}
    ratio = statistics.median(k / d for k, d in zip(efficiency["kolo"], efficiency["ddp"]))
    med = {key: statistics.median(values) for key, values in rates.items()}
    cpu_med = {key: statistics.median(values) for key, values in cpu.items()}
    batch, size, _ = CONFIGS[model]
    cells = [f"{model} b{batch} {size}x{size}"]
    for n in ("kolo", "ddp"):
        cells += [f"{med[(n, 1)]:.1f}", f"{med[(n, 2)]:.1f}", f"**{statistics.median(efficiency[n]):.2f}**"]
    cells.append(f"**{ratio:.2f}**")
    cells += [f"{cpu_med[(n, 1)]:.2f} → {cpu_med[(n, 2)]:.2f}" for n in ("kolo", "ddp")]
    return "| " + " | ".join(cells) + " |"


def main():
    a = parse_args()
    print(f"load average (1/5/15 min) before: {load_average()}", flush=True)
    rows = []
    for model in CONFIGS:
        if a.only and model != a.only:
            continue
        args = benchmark_args(model, a)
        runs = [("kolo", 1, kolo_command(a, 1, args)), ("kolo", 2, kolo_command(a, 2, args)),
                ("ddp", 1, ddp_command(1, args)), ("ddp", 2, ddp_command(2, args))]
        rates = {(name, ranks): [] for name, ranks, _ in runs}
        cpu = {(name, ranks): [] for name, ranks, _ in runs}
        for r in range(a.rounds):
            for name, ranks, command in runs[r % 4:] + runs[:r % 4]:  # a different first run every round
                rate, cpu_ms = measure(command, ranks, a.timeout)
                rates[(name, ranks)].append(rate)
                cpu[(name, ranks)].append(cpu_ms)
            eff = {n: rates[(n, 2)][-1] / (2 * rates[(n, 1)][-1]) for n in ("kolo", "ddp")}
            print(f"{model} round {r + 1}: " + ", ".join(f"{n} np{k} {v[-1]:.1f}" for (n, k), v in rates.items()) +
                  f" img/s; efficiency kolo {eff['kolo']:.2f}, DDP {eff['ddp']:.2f}; load {load_average()}",
                  flush=True)
        rows.append(median_row(model, rates, cpu))
    print(f"load average (1/5/15 min) after: {load_average()}")
    print(f"\nmedians over {a.rounds} rounds; img/s of all ranks together; efficiency = np2 / (2 x np1), "
          "per round; CPU ms per image: rank 0's process, timed iterations, np1 → np2\n")
    print("| net, batch per rank | kolo np1 | kolo np2 | kolo efficiency | DDP np1 | DDP np2 | DDP efficiency "
          "| kolo eff. / DDP eff. | kolo CPU ms/img | DDP CPU ms/img |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
