#!/usr/bin/python3
"""The simulator against this machine: calibrate (sim/calibrate.py), then predict the
MNIST net's np 1, 2, 4 runs of bench/scaling and compare with fresh measurements.

    sim/validate_this_machine.py [--rounds 3] [--build build] [--out FILE.md]

Each round runs bench/scaling/run_scaling.py --ranks 1,2,4 once; the rounds' spread per
rank count is the noise band. The prediction is kolo-sim's, from the calibrated hardware
file and the np 1 time per image, nothing fitted to the np 2 and np 4 rows.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(command, timeout):
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"validate: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--images", type=int, default=8192)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--out", default="", help="also write the table to this markdown file")
    args = p.parse_args()

    calibration = run([sys.executable, os.path.join(HERE, "calibrate.py"), "--build", args.build,
                       "--images", str(args.images)], 900)
    rate = float(re.search(r"--one-device-images-per-s ([\d.]+)", calibration).group(1))

    measured = {1: [], 2: [], 4: []}
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as out:
            run([sys.executable, os.path.join(ROOT, "bench", "scaling", "run_scaling.py"), "--ranks", "1,2,4",
                 "--images", str(args.images), "--batch", str(args.batch), "--epochs", "3", "--build", args.build,
                 "--out", out], 1800)
            with open(os.path.join(out, "scaling.csv")) as f:
                for row in csv.DictReader(f):
                    measured[int(row["ranks"])].append(float(row["epoch_s"]))

    table = run([os.path.join(args.build, "sim", "kolo-sim"), "--hardware", "this_machine", "--model", "mnist_convnet",
                 "--batch", str(args.batch), "--images", str(args.images), "--one-device-images-per-s", str(rate),
                 "--ranks", "1,2,4"], 60)
    predicted = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 3 and cells[0].isdigit():
            predicted[int(cells[0])] = float(cells[2])

    lines = [f"Calibration: {calibration.strip().splitlines()[1]}; np 1 compute {1e3 / rate:.4f} ms per image.", "",
             f"| ranks | measured epoch (s), median of {args.rounds} | noise band (min–max) | predicted (s) | error |",
             "|---:|---:|---:|---:|---:|"]
    for ranks, times in measured.items():
        median = statistics.median(times)
        band = f"{min(times):.3f}–{max(times):.3f} (±{50 * (max(times) - min(times)) / median:.1f} %)"
        error = 100 * (predicted[ranks] - median) / median
        lines.append(f"| {ranks} | {median:.3f} | {band} | {predicted[ranks]:.3f} | {error:+.1f} % |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
