#!/usr/bin/env python3
"""Runs examples/cifar10_resnet under mpirun at np 2 and checks what it prints.

    cifar10_resnet_example_test.py CASE --exe build/examples/cifar10_resnet/cifar10_resnet --work DIR \
                             --mpiexec mpirun --mpiexec-flags "--oversubscribe --bind-to none"

Cases:
  synthetic    no --data-dir: says the data is synthetic; ResNet-18 at 16x16 on 32
               images for 4 epochs: epoch lines, finite losses that fall (the net
               memorises the random labels), img/s > 0, the summary and the epoch table.
  file         a tiny CIFAR-10-format folder this script writes (1 label byte + 3,072
               pixel bytes per record): the header names it and its sizes, 4 steps per
               epoch, val_acc reported; the archive's parent folder works too, and
               --steps-per-epoch cuts an epoch short.
  bad-data     missing folder, empty folder, no test_batch.bin, a truncated file, a bad
               label, fewer images than --steps-per-epoch needs: each fails with one message
               naming the folder or file and the problem.
  bad-flags    unknown model, --steps-per-epoch with --train-limit or too large, --image-size
               too large: one clear message.
"""
import math
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_runner import check, fails_once, fresh, run_case, run_ok  # noqa: E402
from mnist_example_test import epoch_lines  # noqa: E402

SUMMARY_LINE = re.compile(r"^test accuracy (\d\.\d{4}) on ([\d,]+) images - (\d+) epochs? in ")
TABLE_ROW = re.compile(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+|nan|inf) \| (\d\.\d{4}) \|(?: (\d\.\d{4}) \|)?$")
RECORD = 1 + 3 * 32 * 32

# Tiny runs: ResNet-18 on 16x16 inputs, 1 thread per rank, a rate small enough for batch 8.
SMALL = ["--model", "resnet18", "--image-size", "16", "--batch-size", "8", "--threads", "1", "--lr", "0.01",
         "--progress", "off"]


def write_cifar_file(path, count, seed, bad_label_at=-1, extra_bytes=0):
    """count records; class k has a bright band in rows 3k..3k+2 of every channel, over noise."""
    rng = random.Random(seed)
    out = bytearray()
    for i in range(count):
        label = rng.randrange(10)
        out.append(12 if i == bad_label_at else label)
        for _ in range(3):
            plane = bytearray(rng.randrange(100) for _ in range(32 * 32))
            for row in range(3 * label, 3 * label + 3):
                plane[row * 32:(row + 1) * 32] = bytes(200 + rng.randrange(50) for _ in range(32))
            out += plane
    out += bytes(extra_bytes)
    with open(path, "wb") as f:
        f.write(out)


def table_rows(out):
    return [TABLE_ROW.match(line) for line in out.splitlines() if TABLE_ROW.match(line)]


# ---- cifar10_resnet ---------------------------------------------------------------------------

def cifar_synthetic(runner, work):
    out = run_ok(runner, *SMALL, "--train-limit", "32", "--epochs", "4", "--no-augment", "--schedule", "constant")
    check("SYNTHETIC data (no --data-dir)" in out.splitlines()[0], "the first line does not say the data is synthetic",
          out)
    check("32 training and 6 test images; resnet18 (11,181,642 parameters) on 3x16x16 inputs" in out, "header", out)
    lines = epoch_lines(out)
    check(len(lines) == 4, "expected 4 epoch lines", out)
    check(all(m.group(3) == "2" for m in lines), "32 images, 2 ranks, 8 per rank: expected 2 steps per epoch", out)
    losses = [float(m.group(4)) for m in lines]
    check(all(math.isfinite(x) and 0 < x < 20 for x in losses), f"losses not finite and sane: {losses}")
    check(losses[-1] < 0.8 * losses[0], f"the loss did not fall: {losses}")
    check(all(int(m.group(7).replace(",", "")) > 0 for m in lines), "an epoch reports 0 img/s", out)
    check(len([l for l in out.splitlines() if SUMMARY_LINE.match(l)]) == 1, "no summary line", out)
    rows = table_rows(out)
    check([int(r.group(1)) for r in rows] == [1, 2, 3, 4] and all(r.group(6) is None for r in rows),
          "expected the epoch table (epoch, time, img/s, loss, acc; no val_acc for synthetic data)", out)
    for row, line in zip(rows, lines):
        check(float(row.group(3)) > 0 and abs(float(row.group(4)) - float(line.group(4))) < 1e-4,
              f"table row {row.group(0)} does not match {line.group(0)}", out)
    check(re.search(r"^mean of epochs 2-4: [\d.]+ s, [\d.]+ img/s$", out, re.M), "no mean line under the table", out)


def cifar_file(runner, work):
    parent = os.path.join(work, "cifar")
    folder = os.path.join(parent, "cifar-10-batches-bin")  # as the archive unpacks
    os.makedirs(folder)
    write_cifar_file(os.path.join(folder, "data_batch_1.bin"), 64, seed=1)
    write_cifar_file(os.path.join(folder, "test_batch.bin"), 20, seed=2)
    out = run_ok(runner, *SMALL, "--data-dir", folder, "--epochs", "2")
    check(f"cifar10_resnet: {folder} (1 training file and test_batch.bin)" in out, "header: the folder", out)
    check("64 training and 20 test images" in out and "augmentation: random flip, random crop (padding 4)" in out,
          "header: sizes and augmentation", out)
    lines = epoch_lines(out)
    check(len(lines) == 2 and all(m.group(3) == "4" for m in lines), "expected 2 epochs of 4 steps", out)
    check(all(math.isfinite(float(m.group(4))) for m in lines), "a loss is not finite", out)
    rows = table_rows(out)
    check(len(rows) == 2 and all(r.group(6) is not None for r in rows), "the table has no val_acc column", out)
    check(rows[1].group(6) == lines[1].group(6), "the table's val_acc differs from the epoch line's", out)

    # The archive's parent folder works too; --steps-per-epoch cuts the epoch.
    out = run_ok(runner, *SMALL, "--data-dir", parent, "--epochs", "1", "--steps-per-epoch", "2")
    check(f"cifar10_resnet: {folder} (1 training file" in out, "the parent folder was not looked into", out)
    lines = epoch_lines(out)
    check(len(lines) == 1 and lines[0].group(3) == "2", "--steps-per-epoch 2: expected one epoch of 2 steps", out)


def cifar_bad_data(runner, work):
    hint = "cifar-10-binary.tar.gz"
    missing = os.path.join(work, "no-such-folder")
    fails_once(runner, "cifar10_resnet", ["--data-dir", missing], missing, "no such folder", hint)
    empty = fresh(os.path.join(work, "empty"))
    fails_once(runner, "cifar10_resnet", ["--data-dir", empty], empty, "no training file", hint)
    no_test = fresh(os.path.join(work, "no-test"))
    write_cifar_file(os.path.join(no_test, "data_batch_1.bin"), 4, seed=3)
    fails_once(runner, "cifar10_resnet", ["--data-dir", no_test], "no test_batch.bin")
    truncated = fresh(os.path.join(work, "truncated"))
    write_cifar_file(os.path.join(truncated, "data_batch_1.bin"), 4, seed=4, extra_bytes=100)
    write_cifar_file(os.path.join(truncated, "test_batch.bin"), 4, seed=5)
    fails_once(runner, "cifar10_resnet", ["--data-dir", truncated], os.path.join(truncated, "data_batch_1.bin"),
               f"size {4 * RECORD + 100} bytes is not a multiple of {RECORD}")
    bad_label = fresh(os.path.join(work, "bad-label"))
    write_cifar_file(os.path.join(bad_label, "data_batch_1.bin"), 4, seed=6)
    write_cifar_file(os.path.join(bad_label, "test_batch.bin"), 4, seed=7, bad_label_at=2)
    fails_once(runner, "cifar10_resnet", ["--data-dir", bad_label], os.path.join(bad_label, "test_batch.bin"),
               "label 12 at index 2")
    # Fewer images than --steps-per-epoch needs: said, not an epoch of fewer steps.
    small = fresh(os.path.join(work, "small"))
    write_cifar_file(os.path.join(small, "data_batch_1.bin"), 4, seed=8)
    write_cifar_file(os.path.join(small, "test_batch.bin"), 4, seed=9)
    fails_once(runner, "cifar10_resnet", ["--data-dir", small, "--steps-per-epoch", "50", "--batch-size", "4"],
               "--steps-per-epoch 50 needs", "has 4")


def cifar_bad_flags(runner, work):
    fails_once(runner, "cifar10_resnet", ["--model", "resnet9"], "resnet9")
    fails_once(runner, "cifar10_resnet", ["--steps-per-epoch", "2", "--train-limit", "64"], "--steps-per-epoch",
               "--train-limit")
    # Once an overflow, and an epoch of 50,000 synthetic images.
    fails_once(runner, "cifar10_resnet", ["--steps-per-epoch", "4611686018427387904"], "more than 2^31 images")
    fails_once(runner, "cifar10_resnet", ["--image-size", "100000"], "--image-size")


CASES = {"synthetic": cifar_synthetic, "file": cifar_file, "bad-data": cifar_bad_data, "bad-flags": cifar_bad_flags}


if __name__ == "__main__":
    run_case(CASES, __doc__)
