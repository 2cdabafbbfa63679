#!/usr/bin/python3
"""Makes a simulator profile from a kolo timeline of a real run (any model, any device):

    KOLO_TIMELINE=run.json kolorun -np 1 my_training ...
    sim/profile_from_timeline.py run.json --batch 64 --model my_net --out my_net.json
    build/sim/kolo-sim --model my_net.json --hardware v100_nvlink2_edr --batch 64 ...

The gradients are the tensors allreduced once a step (the lanes with the most ALLREDUCE
phases, or those whose names start with --prefix). A tensor's NEGOTIATE_ALLREDUCE phase starts when
the program submits it, so for every step after the first (which negotiates by name):
  - the step time is the time between one step's first submission and the next's;
  - a gradient's ready_fraction is 1 - (the step's last submission - its own) / backward,
    with backward taken as 2/3 of the step (backward costs twice the forward's FLOPs;
    kolo-sim splits the step the same way);
  - compute_s_per_image is the median step time / --batch.
The medians over the steps are written, with the gradients in the order they were ready.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict

BACKWARD_SHARE = 2.0 / 3.0


def read_lanes(path):
    """{lane name: {"submits": [ts...], "bytes": n}} from a timeline's events."""
    try:
        with open(path) as f:
            events = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"profile_from_timeline: cannot read the timeline {path}: {e}")
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    lanes = defaultdict(lambda: {"submits": [], "bytes": 0, "allreduces": 0})
    for e in events:
        lane = names.get(e.get("tid"))
        if lane is None or e.get("ph") != "X":
            continue
        if e["name"].startswith("NEGOTIATE"):  # NEGOTIATE_ALLREDUCE (NEGOTIATE before 2026-11-30)
            lanes[lane]["submits"].append(e["ts"] * 1e-6)
        elif e["name"] == "ALLREDUCE":
            lanes[lane]["allreduces"] += 1
            lanes[lane]["bytes"] = e["args"].get("bytes", lanes[lane]["bytes"])
    return lanes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("timeline", help="rank 0's KOLO_TIMELINE file")
    p.add_argument("--batch", type=int, required=True, help="images per rank per step in that run")
    p.add_argument("--model", default="measured", help="the profile's model name")
    p.add_argument("--prefix", default="", help="only lanes whose names start with this are gradients")
    p.add_argument("--bytes-per-element", type=int, default=4)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if args.batch < 1:
        p.error("--batch must be positive")

    lanes = read_lanes(args.timeline)
    candidates = {n: l for n, l in lanes.items() if l["allreduces"] > 0 and n.startswith(args.prefix)}
    if not candidates:
        sys.exit(f"profile_from_timeline: no allreduced tensor{' named ' + args.prefix + '...' if args.prefix else ''} "
                 f"in {args.timeline}")
    steps = max(l["allreduces"] for l in candidates.values())
    grads = {n: l for n, l in candidates.items() if l["allreduces"] == steps and len(l["submits"]) == steps}
    if steps < 3:
        sys.exit(f"profile_from_timeline: {args.timeline} has {steps} step(s); at least 3 are needed "
                 "(the first is not used, and a step's time needs the next one)")

    step_times, offsets = [], defaultdict(list)
    for k in range(1, steps - 1):
        first = min(l["submits"][k] for l in grads.values())
        last = max(l["submits"][k] for l in grads.values())
        following = min(l["submits"][k + 1] for l in grads.values())
        step_times.append(following - first)
        for name, l in grads.items():
            offsets[name].append(last - l["submits"][k])
    step = statistics.median(step_times)
    backward = BACKWARD_SHARE * step
    gradients = []
    for name, lane in grads.items():
        fraction = min(1.0, max(1e-6, 1.0 - statistics.median(offsets[name]) / backward))
        gradients.append({"name": name, "elements": max(1, lane["bytes"] // args.bytes_per_element),
                          "ready_fraction": round(fraction, 6)})
    gradients.sort(key=lambda g: g["ready_fraction"])
    profile = {
        "model": args.model,
        "source": f"sim/profile_from_timeline.py {args.timeline}: {steps - 2} steps of batch {args.batch}, "
                  f"median step {step * 1e3:.3f} ms",
        "compute_s_per_image": step / args.batch,
        "gradients": gradients,
    }
    with open(args.out, "w") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(gradients)} gradients, {sum(g['elements'] for g in gradients):,} elements, "
          f"{step * 1e3:.3f} ms a step ({1e3 * step / args.batch:.4f} ms an image) over {steps - 2} steps")


if __name__ == "__main__":
    main()
