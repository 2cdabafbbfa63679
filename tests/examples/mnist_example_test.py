#!/usr/bin/env python3
"""Runs examples/mnist under mpirun and checks what it prints and writes.

    mnist_example_test.py CASE --exe build/examples/mnist/mnist --work DIR --mpiexec mpirun \
                          --mpiexec-flags "--oversubscribe --bind-to none"

Cases:
  learns-synthetic  2 ranks, 3 epochs on a small learnable IDX set this script writes
                    (train gzip, test plain): the output's format, a falling loss and
                    accuracy far above chance, the metrics CSV, the kept checkpoints.
  fashion-subset    2 ranks, 1 epoch on 4,096 Fashion-MNIST images (skipped, exit 77, when
                    Debian's dataset-fashion-mnist is not installed): accuracy above 0.5.
  resume            stopped after epoch 1 and resumed, a 3-epoch run ends with the same
                    checkpoint bytes as an uninterrupted one, and the same CSV rows.
  bad-flags         bad flags fail with a message naming the flag, printed once.
  missing-data      a missing --data-dir fails at once with one message naming the folder;
                    so does a training set smaller than one batch per rank.
  device            --device: a bad name fails once, naming the choices; cuda trains on a GPU
                    or, without one, fails once saying none is visible; cpu trains.
"""
import csv
import gzip
import os
import random
import re
import struct
import sys

from example_runner import SKIP, check, fresh, run_case
EPOCH_LINE = re.compile(
    r"^epoch (\d+)/(\d+) - ([\d,]+) steps - [\dhms.]+s - loss (\d+\.\d{4}) - acc (\d\.\d{4})"
    r" - val_acc (\d\.\d{4}) - ([\d,]+) img/s$")
SUMMARY_LINE = re.compile(
    r"^test accuracy (\d\.\d{4}) on ([\d,]+) images - (\d+) epochs? in \S+ \(total \S+\) - [\d,]+ img/s"
    r" - (\d+) ranks? x (\d+) threads?$")


# ---- a small learnable data set in the MNIST format ---------------------------------------

def write_idx(path, magic, dims, payload, compress):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(header + payload)


def write_synthetic_mnist(folder, train_count=1024, test_count=300, seed=5):
    """Class k is a bright 3-pixel-high bar at row 2 + 2k over uniform noise, but one label in
    five is drawn at random: chance is 0.1, the best possible accuracy about 0.82, so the
    loss keeps falling over a few epochs instead of reaching 0 in the first."""
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)

    def images_and_labels(count):
        pixels, labels = bytearray(), bytearray()
        for _ in range(count):
            label = rng.randrange(10)
            image = bytearray(rng.randrange(90) for _ in range(28 * 28))
            for row in range(2 + 2 * label, 5 + 2 * label):
                for col in range(4, 24):
                    image[row * 28 + col] = 150 + rng.randrange(100)
            pixels += image
            labels.append(rng.randrange(10) if rng.random() < 0.2 else label)
        return bytes(pixels), bytes(labels)

    for split, count, compress in (("train", train_count, True), ("t10k", test_count, False)):
        pixels, labels = images_and_labels(count)
        suffix = ".gz" if compress else ""
        write_idx(os.path.join(folder, f"{split}-images-idx3-ubyte{suffix}"), 0x803, (count, 28, 28), pixels, compress)
        write_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte{suffix}"), 0x801, (count,), labels, compress)


# ---- reading what it printed and wrote --------------------------------------------------------

def epoch_lines(output):
    return [EPOCH_LINE.match(line) for line in output.splitlines() if EPOCH_LINE.match(line)]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---- cases --------------------------------------------------------------------------------------

def learns_synthetic(runner, work):
    data = os.path.join(work, "data")
    write_synthetic_mnist(data)
    checkpoints, metrics = os.path.join(work, "checkpoints"), os.path.join(work, "metrics.csv")
    done = runner.run(2, "--data-dir", data, "--epochs", "3", "--batch-size", "32", "--threads", "1",
                      "--checkpoint-dir", checkpoints, "--metrics-csv", metrics)
    out = done.stdout
    check(done.returncode == 0, f"exit status {done.returncode}", out + done.stderr)
    check("\r" not in out, "a progress bar was drawn into a pipe", out)
    lines = epoch_lines(out)
    check(len(lines) == 3, "expected 3 epoch lines like 'epoch 1/3 - 16 steps - ...'", out)
    for i, m in enumerate(lines, 1):
        check(int(m.group(1)) == i and int(m.group(2)) == 3, f"epoch line {i} numbered {m.group(1)}/{m.group(2)}")
        # 1,024 images, 2 ranks, 32 per rank: 16 steps.
        check(m.group(3) == "16", f"epoch {i}: {m.group(3)} steps, expected 16")
    losses = [float(m.group(4)) for m in lines]
    check(losses[2] < losses[0] * 0.7, f"the loss did not fall: {losses}")
    val = float(lines[2].group(6))
    check(val > 0.6, f"val_acc {val} after 3 epochs: barely above chance (0.1)")
    summary = [SUMMARY_LINE.match(line) for line in out.splitlines() if SUMMARY_LINE.match(line)]
    check(len(summary) == 1, "no summary line like 'test accuracy 0.9 on 300 images - ...'", out)
    s = summary[0]
    check(s.group(1) == lines[2].group(6), "the summary's accuracy is not the last epoch's val_acc", out)
    check(s.group(2) == "300" and s.group(3) == "3" and s.group(4) == "2" and s.group(5) == "1",
          "summary: expected 300 test images, 3 epochs, 2 ranks x 1 threads", out)
    check("1,024 training and 300 test images" in out, "the header does not give the data set sizes", out)
    rows = read_csv(metrics)
    check([r["epoch"] for r in rows] == ["1", "2", "3"], f"metrics CSV epochs: {[r['epoch'] for r in rows]}")
    for r, m in zip(rows, lines):
        check(abs(float(r["loss"]) - float(m.group(4))) < 1e-4 and abs(float(r["val_acc"]) - float(m.group(6))) < 1e-4,
              f"CSV row {r} does not match the printed line {m.group(0)}")
    check(float(rows[2]["lr"]) < float(rows[0]["lr"]), "the cosine schedule did not lower the rate")
    kept = sorted(os.listdir(checkpoints))
    check(kept == ["checkpoint-epoch-0002.kolo", "checkpoint-epoch-0003.kolo"], f"checkpoint folder holds {kept}")


def fashion_subset(runner, work):
    folder = "/usr/share/datasets/fashion-mnist"
    if not os.path.isdir(folder):
        print(f"{folder} missing (Debian package dataset-fashion-mnist): skipped")
        sys.exit(SKIP)
    done = runner.run(2, "--epochs", "1", "--train-limit", "4096", "--test-limit", "1000", "--threads", "1")
    out = done.stdout
    check(done.returncode == 0, f"exit status {done.returncode}", out + done.stderr)
    lines = epoch_lines(out)
    check(len(lines) == 1 and lines[0].group(3) == "32", "expected one epoch of 32 steps", out)
    check(float(lines[0].group(6)) > 0.5, f"val_acc {lines[0].group(6)} on Fashion-MNIST after 4,096 images")
    check("4,096 training and 1,000 test images" in out, "header", out)


def resume(runner, work):
    data = os.path.join(work, "data")
    write_synthetic_mnist(data, train_count=512, test_count=100, seed=11)
    common = ["--data-dir", data, "--epochs", "3", "--batch-size", "16", "--threads", "1", "--seed", "3"]
    whole, parts = fresh(os.path.join(work, "whole")), fresh(os.path.join(work, "parts"))
    done = runner.run(2, *common, "--checkpoint-dir", whole, "--metrics-csv", os.path.join(whole, "m.csv"))
    check(done.returncode == 0, "the uninterrupted run failed", done.stdout + done.stderr)

    parts_flags = [*common, "--checkpoint-dir", parts, "--metrics-csv", os.path.join(parts, "m.csv")]
    done = runner.run(2, *parts_flags, "--stop-after-epoch", "1")
    check(done.returncode == 0, "the run stopped after epoch 1 failed", done.stdout + done.stderr)
    check(len(epoch_lines(done.stdout)) == 1 and "stopping after epoch 1" in done.stdout,
          "expected one epoch, then 'stopping after epoch 1'", done.stdout)
    check(not os.path.exists(os.path.join(parts, "checkpoint-epoch-0002.kolo")), "epoch 2 ran anyway")
    done = runner.run(2, *parts_flags, "--resume")
    check(done.returncode == 0, "the resumed run failed", done.stdout + done.stderr)
    lines = epoch_lines(done.stdout)
    check("resumed from " in done.stdout and [m.group(1) for m in lines] == ["2", "3"],
          "expected 'resumed from ...' then epochs 2 and 3", done.stdout)

    with open(os.path.join(whole, "checkpoint-epoch-0003.kolo"), "rb") as f:
        expected = f.read()
    with open(os.path.join(parts, "checkpoint-epoch-0003.kolo"), "rb") as f:
        got = f.read()
    check(len(expected) > 250_000, f"the checkpoint has {len(expected)} bytes: no parameters and momentum?")
    check(got == expected, "the resumed run's final checkpoint differs from the uninterrupted run's")
    a, b = read_csv(os.path.join(whole, "m.csv")), read_csv(os.path.join(parts, "m.csv"))
    check([r["epoch"] for r in b] == ["1", "2", "3"], f"resumed CSV epochs {[r['epoch'] for r in b]}")
    for ra, rb in zip(a, b):
        for key in ("steps", "lr", "loss", "acc", "val_acc"):
            check(ra[key] == rb[key], f"CSV {key} differs at epoch {ra['epoch']}: {ra[key]} vs {rb[key]}")

    # Resuming after the last epoch trains nothing and reports the same accuracy.
    done = runner.run(2, *parts_flags, "--resume")
    check(done.returncode == 0 and not epoch_lines(done.stdout), "a finished run trained again", done.stdout)
    check(f"test accuracy {b[2]['val_acc'][:6]}" in done.stdout, "a finished run reports another accuracy",
          done.stdout)

    # A new run (no --resume) in a folder with another run's checkpoints is refused, and
    # leaves them as they were.
    before = sorted(os.listdir(parts))
    done = runner.run(2, *parts_flags)
    check(done.returncode != 0 and "holds checkpoints of another run" in done.stdout + done.stderr,
          "a new run in a folder of checkpoints was not refused", done.stdout + done.stderr)
    check(sorted(os.listdir(parts)) == before, f"the refused run changed the folder: {sorted(os.listdir(parts))}")

    # A --checkpoint-dir that cannot be a folder is said before the first epoch, not after it.
    not_a_folder = os.path.join(work, "a-file")
    with open(not_a_folder, "w") as f:
        f.write("x")
    done = runner.run(2, *common, "--checkpoint-dir", not_a_folder)
    check(done.returncode != 0 and "cannot create the checkpoint folder" in done.stderr,
          "a file as --checkpoint-dir was not refused", done.stdout + done.stderr)
    check(not epoch_lines(done.stdout), "an epoch trained before the bad --checkpoint-dir was said", done.stdout)


def bad_flags(runner, work):
    cases = [
        (["--epochs", "abc"], r"--epochs"),
        (["--optimizer", "rmsprop"], r"rmsprop"),
        (["--batch-size", "0"], r"--batch-size"),
        (["--lr", "nan"], r"--lr: must be a finite number"),  # nan once read as "not given"
        (["--warmup-epochs", "inf"], r"--warmup-epochs: must be a finite number"),
        (["--resume"], r"--resume requires --checkpoint-dir"),
        (["--no-such-flag"], r"--no-such-flag"),
    ]
    for flags, expected in cases:
        done = runner.run(2, *flags, timeout=60)
        both = done.stdout + done.stderr
        check(done.returncode != 0, f"{flags}: exit status 0", both)
        hits = re.findall(expected, done.stderr)
        check(len(hits) >= 1, f"{flags}: stderr does not name {expected!r}", both)
        check(len(re.findall(r"^.*(?:Error|error).*$", done.stderr, re.M)) <= 2 and "Traceback" not in both,
              f"{flags}: error printed by more than one rank", both)
    done = runner.run(2, "--help", timeout=60)
    check(done.returncode == 0 and done.stdout.count("Usage:") == 1, "--help: printed once", done.stdout)


def missing_data(runner, work):
    missing = os.path.join(work, "no-such-folder")
    done = runner.run(2, "--data-dir", missing, timeout=60)
    check(done.returncode != 0, "exit status 0", done.stdout + done.stderr)
    check(done.stderr.count(missing) >= 1 and "dataset-fashion-mnist" in done.stderr,
          "the error names neither the folder nor where Fashion-MNIST comes from", done.stderr)
    check(done.stderr.count("mnist: error") == 1, "expected exactly one 'mnist: error' line", done.stderr)
    # Data, but less than one batch per rank: 100 images over 2 ranks, batches of 64.
    data = os.path.join(work, "data")
    write_synthetic_mnist(data, train_count=100, test_count=10)
    done = runner.run(2, "--data-dir", data, "--batch-size", "64", timeout=60)
    check(done.returncode != 0 and "smaller than one batch (--batch-size 64)" in done.stderr,
          "a training set without one full batch per rank is not reported", done.stdout + done.stderr)
    check(done.stderr.count("mnist: error") == 1, "expected exactly one 'mnist: error' line", done.stderr)
    # Test images of another shape: the error names that split (it once gave the train shape).
    write_idx(os.path.join(data, "t10k-images-idx3-ubyte"), 0x803, (10, 14, 56), bytes(10 * 14 * 56), False)
    done = runner.run(2, "--data-dir", data, timeout=60)
    check(done.returncode != 0 and "the t10k images are 1x14x56" in done.stderr,
          "an odd shape of the test images is not named", done.stdout + done.stderr)


def device_flag(runner, work):
    data = os.path.join(work, "data")
    write_synthetic_mnist(data, train_count=256, test_count=64)
    common = ["--data-dir", data, "--epochs", "1", "--batch-size", "32", "--threads", "1"]
    done = runner.run(2, *common, "--device", "tpu", timeout=60)
    check(done.returncode != 0 and "--device tpu: expected auto, cpu, cuda or cuda:N" in done.stderr,
          "--device tpu: no error naming the choices", done.stdout + done.stderr)
    check(done.stderr.count("mnist: error") == 1, "--device tpu: expected exactly one 'mnist: error' line", done.stderr)
    # With a GPU the run trains there; without one it fails at once, saying so.
    done = runner.run(2, *common, "--device", "cuda", timeout=120)
    if done.returncode == 0:
        check("computing on cuda:" in done.stdout, "--device cuda ran, but not on a GPU", done.stdout)
    else:
        check("--device cuda: no CUDA device is visible" in done.stderr,
              "--device cuda failed without saying that no GPU is visible", done.stdout + done.stderr)
        check(done.stderr.count("mnist: error") == 1, "--device cuda: expected exactly one 'mnist: error' line",
              done.stderr)
    done = runner.run(2, *common, "--device", "cpu", timeout=120)
    check(done.returncode == 0 and "computing on" not in done.stdout and len(epoch_lines(done.stdout)) == 1,
          "--device cpu did not train one epoch on the CPU", done.stdout + done.stderr)


CASES = {"learns-synthetic": learns_synthetic, "fashion-subset": fashion_subset, "resume": resume,
         "bad-flags": bad_flags, "missing-data": missing_data, "device": device_flag}


if __name__ == "__main__":
    run_case(CASES, __doc__)
