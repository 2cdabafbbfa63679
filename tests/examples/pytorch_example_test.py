#!/usr/bin/env python3
"""Runs examples/pytorch's scripts on kolo.torch at np 2 through kolorun, briefly.

    PYTHONPATH=build/python pytorch_example_test.py CASE --exe /usr/bin/python3 --work DIR \
        --mpiexec build/launcher/kolorun

Cases:
  mnist       pytorch_mnist.py, 3 epochs on 512 images of a small learnable IDX set this
              script writes (train gzip, test plain), batch 16 per rank: the training
              loss falls, the test accuracy is far above chance (0.1), and a second run
              with the same seed prints the same losses and accuracies.
  benchmark   pytorch_synthetic_benchmark.py, ResNet-18 (torchvision) at 32x32, 2 timed
              iterations: the lines compare_scaling.py reads, with 2 ranks; then --no-kolo
              (plain PyTorch, no launcher) prints the same lines for 1 rank.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench", "synthetic_benchmark"))
from compare_scaling import CPU_LINE, ITER_LINE  # noqa: E402  (the parser the benchmark feeds)
from example_runner import SKIP, check, fail, run_case  # noqa: E402
from mnist_example_test import write_synthetic_mnist  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples", "pytorch")
TAG = re.compile(r"^\[\d+\]<std(?:out|err)>:", re.M)  # kolorun's --tag-output prefix
TRAIN_LINE = re.compile(r"^Train Epoch: (\d+) \[(\d+)/(\d+) \(\d+%\)\]\tLoss: ([\d.]+)$", re.M)
TEST_LINE = re.compile(r"^Test set after epoch (\d+): Average loss: ([\d.]+), Accuracy: ([\d.]+)%$", re.M)


def run_ok(runner, *flags):
    """A 2-rank run through kolorun that must succeed; its stdout without kolorun's tags."""
    done = runner.run(2, *flags, timeout=180)
    check(done.returncode == 0, f"exit status {done.returncode}", done.stdout + done.stderr)
    check("Traceback" not in done.stdout + done.stderr, "a rank printed a traceback", done.stdout + done.stderr)
    return TAG.sub("", done.stdout)


def mnist(runner, work):
    data = os.path.join(work, "data")
    write_synthetic_mnist(data, train_count=512, test_count=200, seed=7)
    flags = [os.path.join(EXAMPLES, "pytorch_mnist.py"), "--data-dir", data, "--epochs", "3", "--batch-size", "16",
             "--lr", "0.02", "--log-interval", "4", "--seed", "3"]
    out = run_ok(runner, *flags)
    check("512 training and 200 test images; 2 rank(s), batch 16 per rank, lr 0.04" in out, "header", out)
    train = TRAIN_LINE.findall(out)
    # 512 images, 2 ranks: 256 a rank, 16 steps of 16, a line every 4 steps.
    check(len(train) == 12 and all(t[2] == "256" for t in train), "expected 4 training lines an epoch of 256", out)
    losses = [float(t[3]) for t in train]
    check(sum(losses[-4:]) < 0.7 * sum(losses[:4]), f"the training loss did not fall: {losses}", out)
    tests = TEST_LINE.findall(out)
    check([t[0] for t in tests] == ["1", "2", "3"], "expected a test line after each of the 3 epochs", out)
    accuracy = float(tests[-1][2])
    check(accuracy > 40, f"test accuracy {accuracy}% after 3 epochs: barely above chance (10%)", out)
    check(re.search(rf"^Final test accuracy: {re.escape(tests[-1][2])}% after 3 epochs in [\d.]+ s \(\d+ training img/s\)$",
                    out, re.M), "no final accuracy line", out)

    again = run_ok(runner, *flags)
    check(TRAIN_LINE.findall(again) == train and TEST_LINE.findall(again) == tests,
          "a second run with the same seed printed other losses or accuracies", out + "\n---- second run ----\n" + again)


def benchmark(runner, work):
    try:
        import torchvision  # noqa: F401  (the benchmark's nets)
    except ImportError:
        print("torchvision missing (Debian package python3-torchvision): skipped")
        sys.exit(SKIP)
    script = os.path.join(EXAMPLES, "pytorch_synthetic_benchmark.py")
    flags = ["--model", "resnet18", "--batch-size", "8", "--image-size", "32", "--classes", "10", "--threads", "1",
             "--num-warmup-batches", "1", "--num-batches-per-iter", "1", "--num-iters", "2"]
    out = run_ok(runner, script, *flags)
    rates = [float(x) for x in ITER_LINE.findall(out)]
    check(len(rates) == 2 and all(r > 0 for r in rates), "expected 2 lines 'Iter #i: R img/sec per rank'", out)
    check(re.search(r"^Total img/sec on 2 rank\(s\): [\d.]+ \+-[\d.]+$", out, re.M), "no total line for 2 ranks", out)
    check(CPU_LINE.search(out) and float(CPU_LINE.search(out).group(1)) > 0, "no 'CPU time per image' line", out)
    check("kolo.torch" in out and "Number of ranks: 2" in out, "the header does not say 2 ranks on kolo.torch", out)

    command = [runner.exe, script, *flags, "--no-kolo"]
    print("$ " + " ".join(command), flush=True)
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail(f"no answer within 120 s: {command}")
    print(done.stdout)
    check(done.returncode == 0, f"--no-kolo: exit status {done.returncode}", done.stdout)
    check(len(ITER_LINE.findall(done.stdout)) == 2 and CPU_LINE.search(done.stdout), "--no-kolo: the lines", done.stdout)
    check("Number of ranks: 1" in done.stdout and "no kolo" in done.stdout, "--no-kolo: the header", done.stdout)


if __name__ == "__main__":
    run_case({"mnist": mnist, "benchmark": benchmark}, __doc__)
