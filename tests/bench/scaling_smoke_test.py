#!/usr/bin/python3
"""Smoke test of the scaling harness (bench/scaling/run_scaling.py): a tiny mnist
experiment at np 1 and 2 on this machine, then checks of what it wrote.

    scaling_smoke_test.py --build BUILD --out DIR

  - the timeline arithmetic on a hand-made trace (merged overlapping intervals, fused bytes);
  - scaling.csv has one row per rank count, with the images per epoch asked for, the
    baseline's speedup and efficiency exactly 1, the others' consistent with the measured
    throughputs, fused bytes per step within the gradient's size (mnist_convnet has 62,346
    float parameters), a communication share between 0 and 1 (under 10 % at np 1: nothing
    to send);
  - the printed table has those rows; scaling.png is a PNG with three panels' worth of pixels.
"""
import argparse
import csv
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "..", "bench", "scaling")
GRADIENT_BYTES = 62_346 * 4


def check(condition, message, output=""):
    if not condition:
        if output:
            print("---- output ----\n" + output.rstrip() + "\n----------------")
        print("FAILED: " + message)
        sys.exit(1)


def check_timeline_arithmetic():
    sys.path.insert(0, HARNESS)
    import timeline_stats
    # Two lanes of one fused group (same interval), then an overlapping and a separate one: µs.
    events = [{"name": "ALLREDUCE", "ts": 0, "dur": 100}, {"name": "ALLREDUCE", "ts": 0, "dur": 100},
              {"name": "ALLREDUCE", "ts": 50, "dur": 100}, {"name": "ALLREDUCE", "ts": 1000, "dur": 10},
              {"name": "MEMCPY_IN", "ts": 200, "dur": 500},
              {"name": "FUSED", "ts": 0, "dur": 100, "args": {"bytes": 4000}},
              {"name": "FUSED", "ts": 1000, "dur": 10, "args": {"bytes": 96}}]
    seconds = timeline_stats.allreduce_seconds(events)
    check(abs(seconds - 160e-6) < 1e-12, f"merged allreduce time {seconds} s, expected 160 µs")
    check(timeline_stats.fused_bytes(events) == 4096, "fused bytes of the hand-made trace are not 4096")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    check_timeline_arithmetic()

    images, batch = 512, 32
    cmd = [sys.executable, os.path.join(HARNESS, "run_scaling.py"), "--ranks", "1,2", "--epochs", "1",
           "--images", str(images), "--batch", str(batch), "--threads", "1", "--build", args.build,
           "--out", args.out, "--timeout", "240"]
    print("+ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    print(result.stdout)
    check(result.returncode == 0, f"the harness exited with {result.returncode}", result.stdout)

    with open(os.path.join(args.out, "scaling.csv")) as f:
        rows = list(csv.DictReader(f))
    check([int(r["ranks"]) for r in rows] == [1, 2], "scaling.csv should have the rows for np 1 and np 2")
    for r in rows:
        check(int(r["images"]) == images, f"np {r['ranks']} trained {r['images']} images per epoch, not {images}")
        check(float(r["epoch_s"]) > 0 and float(r["images_per_s"]) > 0, f"np {r['ranks']}: no time measured")
        fused = float(r["fused_bytes_per_step"])
        check(0.5 * GRADIENT_BYTES <= fused <= GRADIENT_BYTES,
              f"np {r['ranks']}: {fused:.0f} fused bytes per step; the gradient is {GRADIENT_BYTES} bytes")
        check(0 <= float(r["comm_share"]) <= 1, f"np {r['ranks']}: comm share {r['comm_share']}")
    one, two = rows
    check(float(one["speedup"]) == 1 and float(one["efficiency"]) == 1, "np 1 is the baseline: speedup 1")
    # np 1 has nothing to send: its "allreduce" is a local copy (plus scheduling noise).
    check(float(one["comm_share"]) < 0.1, f"np 1 has nothing to send, yet its comm share is {one['comm_share']}")
    expected = float(two["images_per_s"]) / float(one["images_per_s"])
    check(abs(float(two["speedup"]) - expected) < 1e-3 * expected, "np 2's speedup is not its throughput ratio")
    check(abs(float(two["efficiency"]) - float(two["speedup"]) / 2) < 1e-3, "np 2's efficiency is not speedup / 2")

    table_rows = [line for line in result.stdout.splitlines() if line.startswith("| local |")]
    check(len(table_rows) == 2, "the printed table should have two 'local' rows", result.stdout)
    with open(os.path.join(args.out, "scaling.png"), "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", "scaling.png is not a PNG")
    width, height = struct.unpack(">II", head[16:24])
    check(width >= 600 and height >= 200, f"scaling.png is only {width}x{height} pixels")
    print("PASSED")


if __name__ == "__main__":
    main()
