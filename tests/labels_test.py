#!/usr/bin/env python3
"""Every registered test has its kind: exactly one of the labels unit, mpi and cluster
(how it runs), plus gpu when it needs a GPU and slow when it takes more than ~30 s, plus
faults for the fault tests (a group run on its own), and no other label (README.md,
"Running the tests").

    labels_test.py --ctest ctest --build BUILD

The tests are read from ctest itself (--show-only=json-v1), so the tests Catch2 discovers
after the build are checked along with those add_test() registers.
"""
import argparse
import json
import subprocess
import sys

HOW_IT_RUNS = {"unit", "mpi", "cluster"}
NEEDS = {"gpu", "slow"}
GROUPS = {"faults"}


def problems(test):
    labels = []
    for prop in test.get("properties", []):
        if prop["name"] == "LABELS":
            labels = prop["value"]
    kinds = HOW_IT_RUNS.intersection(labels)
    unknown = set(labels) - HOW_IT_RUNS - NEEDS - GROUPS
    if len(kinds) != 1:
        yield f"has {sorted(kinds) or 'none'} of unit, mpi and cluster (labels {labels}); expected exactly one"
    if unknown:
        yield f"has labels that are not kinds: {sorted(unknown)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ctest", required=True)
    parser.add_argument("--build", required=True)
    args = parser.parse_args()
    listing = subprocess.run([args.ctest, "--test-dir", args.build, "--show-only=json-v1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=50)
    if listing.returncode != 0:
        print(f"FAILED: ctest --show-only exited with {listing.returncode}:\n{listing.stderr}")
        return 1
    tests = json.loads(listing.stdout)["tests"]
    bad = [(t["name"], p) for t in tests for p in problems(t)]
    for name, problem in bad:
        print(f"{name}: {problem}")
    print(f"{len(tests)} tests, {len(bad)} without exactly one kind or with other labels")
    return 1 if bad or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
