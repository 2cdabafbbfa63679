#!/usr/bin/env python3
"""Runs bench/synthetic_benchmark (Horovod's synthetic benchmark) under mpirun at np 2 and
checks what it prints.

    synthetic_benchmark_test.py CASE --exe build/bench/synthetic_benchmark/synthetic_benchmark \
                                --work DIR --mpiexec mpirun --mpiexec-flags "--oversubscribe"

Cases:
  format       the MNIST net: Horovod's lines (Model, Batch size, Iter #i ... img/sec per
               rank, Img/sec per rank: mean +-1.96 std, Total img/sec on 2 rank(s)), printed
               once, with the mean, spread and total consistent with the iterations, and
               rank 0's CPU time per image.
  resnet-fp16  ResNet-18 at 16x16 with --fp16-allreduce runs and reports img/s > 0.
  sync-only    the MNIST net with --sync-only (compare_scaling.py's "sync only" row): says
               so in the header and reports its figures.
  bad-flags    unknown model, the MNIST net at another size, --sync-only with
               --fp16-allreduce: one clear message.
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_runner import check, fails_once, run_case, run_ok  # noqa: E402


def benchmark_figures(out, ranks, iters):
    rates = [float(x) for x in re.findall(r"^Iter #\d+: ([\d.]+) img/sec per rank$", out, re.M)]
    check(len(rates) == iters and out.count("Iter #0:") == 1, f"expected {iters} 'Iter #i' lines, printed once", out)
    check(re.findall(r"^Iter #(\d+):", out, re.M) == [str(i) for i in range(iters)], "iterations misnumbered", out)
    check(all(r > 0 for r in rates), f"img/s not positive: {rates}", out)
    mean = re.search(r"^Img/sec per rank: ([\d.]+) \+-([\d.]+)$", out, re.M)
    total = re.search(rf"^Total img/sec on {ranks} rank\(s\): ([\d.]+) \+-([\d.]+)$", out, re.M)
    check(mean and total, "no 'Img/sec per rank: M +-C' or 'Total img/sec on N rank(s): T +-C' line", out)
    expected_mean, expected_conf = statistics.mean(rates), 1.96 * statistics.pstdev(rates)
    # The printed rates are rounded to 0.1: allow that much.
    check(abs(float(mean.group(1)) - expected_mean) <= 0.1 and abs(float(mean.group(2)) - expected_conf) <= 0.25,
          f"mean +- 1.96 std of {rates} is {expected_mean:.1f} +-{expected_conf:.1f}, printed {mean.group(0)}", out)
    check(abs(float(total.group(1)) - ranks * float(mean.group(1))) <= 0.1 * ranks + 0.05,
          "the total is not ranks x the mean", out)
    cpu = re.search(r"^CPU time per image on rank 0: ([\d.]+) ms$", out, re.M)
    check(cpu and float(cpu.group(1)) > 0, "no 'CPU time per image on rank 0: X ms' line", out)
    return rates


def bench_format(runner, work):
    out = run_ok(runner, "--model", "mnist_convnet", "--batch-size", "16", "--num-warmup-batches", "1",
                 "--num-batches-per-iter", "2", "--num-iters", "4", "--threads", "1")
    head = out.splitlines()[:5]
    check(head[:2] == ["Model: mnist_convnet", "Batch size: 16"], "header lines", out)
    check(head[2].startswith("Number of ranks: 2 (1 thread each), images 1x28x28, 10 classes"), "ranks line", out)
    check(head[3:] == ["Running warmup...", "Running benchmark..."], "warmup and benchmark lines", out)
    benchmark_figures(out, 2, 4)


def bench_resnet_fp16(runner, work):
    out = run_ok(runner, "--model", "resnet18", "--batch-size", "4", "--image-size", "16", "--classes", "10",
                 "--num-warmup-batches", "1", "--num-batches-per-iter", "1", "--num-iters", "2", "--threads", "1",
                 "--fp16-allreduce")
    check("images 3x16x16, 10 classes, fp16 allreduce" in out, "header: input and compression", out)
    benchmark_figures(out, 2, 2)


def bench_sync_only(runner, work):
    out = run_ok(runner, "--model", "mnist_convnet", "--batch-size", "8", "--num-warmup-batches", "1",
                 "--num-batches-per-iter", "2", "--num-iters", "2", "--threads", "1", "--sync-only")
    check("10 classes, sync only (no gradient averaged)" in out, "header: sync only", out)
    benchmark_figures(out, 2, 2)


def bench_bad_flags(runner, work):
    fails_once(runner, "synthetic_benchmark", ["--model", "vgg16"], "vgg16")
    fails_once(runner, "synthetic_benchmark", ["--model", "mnist_convnet", "--image-size", "32"],
               "--image-size 32: mnist_convnet takes 28x28 images only")
    fails_once(runner, "synthetic_benchmark", ["--model", "mnist_convnet", "--sync-only", "--fp16-allreduce"],
               "--sync-only averages no gradient")


CASES = {"format": bench_format, "resnet-fp16": bench_resnet_fp16, "sync-only": bench_sync_only, "bad-flags": bench_bad_flags}


if __name__ == "__main__":
    run_case(CASES, __doc__)
