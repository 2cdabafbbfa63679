#!/usr/bin/python3
"""A measured profile, end to end: the synthetic benchmark trains the MNIST net at np 1
under kolorun with KOLO_TIMELINE, sim/profile_from_timeline.py turns rank 0's timeline
into a profile, and kolo-sim runs it.

    profile_from_timeline_test.py --benchmark EXE --kolorun EXE --kolo-sim EXE --work DIR

Checked against the net itself (models/, as sim/profiles/mnist_convnet.json has it): the
six gradients with their sizes (62,346 elements in all), the last layer's ready first and
the first layer's last, and a positive time per image that kolo-sim uses.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = {"fc.weight": 10240, "fc.bias": 10, "conv2.weight": 51200, "conv2.bias": 64, "conv1.weight": 800,
         "conv1.bias": 32}


def fail(message, output=""):
    print(output)
    print("FAILED: " + message)
    sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--benchmark", required=True)
    p.add_argument("--kolorun", required=True)
    p.add_argument("--kolo-sim", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    timeline = os.path.join(args.work, "timeline.json")
    profile = os.path.join(args.work, "profile.json")
    env = dict(os.environ, KOLO_TIMELINE=timeline)
    run = subprocess.run([args.kolorun, "-np", "1", args.benchmark, "--model", "mnist_convnet", "--batch-size", "32",
                          "--threads", "1", "--num-warmup-batches", "1", "--num-batches-per-iter", "4",
                          "--num-iters", "3"], env=env, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        fail(f"the benchmark exited with {run.returncode}", run.stdout + run.stderr)
    made = subprocess.run([sys.executable, os.path.join(ROOT, "sim", "profile_from_timeline.py"), timeline,
                           "--batch", "32", "--model", "mnist_measured", "--out", profile],
                          capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        fail("profile_from_timeline.py failed", made.stdout + made.stderr)
    with open(profile) as f:
        data = json.load(f)
    got = {re.sub(r"^.*?(conv\d|fc)", r"\1", g["name"]): g["elements"] for g in data["gradients"]}
    if got != SIZES:
        fail(f"gradients {got}, expected {SIZES}", made.stdout)
    order = [re.sub(r"^.*?(conv\d|fc)", r"\1", g["name"]) for g in data["gradients"]]
    if not order[0].startswith("fc") or not order[-1].startswith("conv1"):
        fail(f"backward order {order}: the last layer's gradients must come first, the first layer's last")
    fractions = [g["ready_fraction"] for g in data["gradients"]]
    if fractions != sorted(fractions) or not 0 < fractions[0] <= fractions[-1] <= 1:
        fail(f"ready fractions {fractions}")
    if not data["compute_s_per_image"] > 0:
        fail(f"compute_s_per_image {data['compute_s_per_image']}")
    sim = subprocess.run([args.kolo_sim, "--model", profile, "--hardware", "this_machine", "--batch", "32",
                          "--images", "4096", "--ranks", "1,2"], capture_output=True, text=True, timeout=60)
    per_image = re.search(r"([\d.]+) ms of compute per image", sim.stdout)
    if sim.returncode != 0 or not per_image:
        fail("kolo-sim did not run the measured profile", sim.stdout + sim.stderr)
    if abs(float(per_image.group(1)) - 1e3 * data["compute_s_per_image"]) > 1e-3 * max(1.0, float(per_image.group(1))):
        fail(f"kolo-sim used {per_image.group(1)} ms an image, not the profile's", sim.stdout)
    print(made.stdout + sim.stdout + "passed")


if __name__ == "__main__":
    main()
