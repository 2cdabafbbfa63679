#!/usr/bin/python3
"""sim/validation/measure_variation.py's busy_ratios, which sim/calibrate.py turns into
compute_slowdown_when_busy: each repeat's np 2 compute over the np 1 compute of the same
repeat, idle runs only, in repeat order; a repeat without both rank counts gives none."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "sim", "validation"))
import measure_variation  # noqa: E402


def run(repeat, ranks, ms, load=False):
    return {"repeat": repeat, "ranks": ranks, "median_compute_ms": ms, "load": load}


def main():
    runs = [run(0, 1, 20.0), run(0, 2, 22.0), run(1, 1, 25.0), run(1, 2, 20.0), run(2, 1, 30.0),
            run(0, 1, 10.0, load=True), run(0, 2, 40.0, load=True)]
    got = measure_variation.busy_ratios(runs)
    want = [22.0 / 20.0, 20.0 / 25.0]  # repeat 2 has no np 2 run; the loaded runs are not idle
    if len(got) != len(want) or any(abs(g - w) > 1e-12 for g, w in zip(got, want)):
        print(f"FAILED: busy_ratios gave {got}, expected {want}")
        return 1
    if measure_variation.busy_ratios([run(0, 1, 20.0), run(0, 4, 30.0)]) != []:
        print("FAILED: np 4 counted as np 2")
        return 1
    print("busy_ratios: pairs of one repeat, idle runs only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
