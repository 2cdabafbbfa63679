#!/usr/bin/python3
"""Whether communication overlaps compute, measured per link rate on the namespace hosts
(sim/validate_this_machine.py's hardware_at_rate, with sim/calibrate.py's probe parsing and
threshold): the median of three probes decides, the rate's file says it with its runs, and
the link is left unshaped afterwards. The probe is a stand-in printing fixed figures. And
the share of a shaped link's rate kolo's allreduce achieves, from the probe's lines."""
import json
import os
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "sim"))
import calibrate  # noqa: E402
import validate_this_machine  # noqa: E402


class FakeHosts:
    """Two namespace hosts whose probe prints, run after run, the next of `figures` (as
    under a launcher, rank-tagged)."""

    # The probe's command is made once and run once per probe: it keeps its place in a file.
    PROBE = ("import sys\n"
             "left = open(sys.argv[1]).read().split()\n"
             "open(sys.argv[1], 'w').write(' '.join(left[1:]))\n"
             "print('[1,0]<stdout>:comm_slowdown,' + left[0])\n")

    def __init__(self, figures, work):
        self.queue, self.shapes = os.path.join(work, "figures"), []
        with open(self.queue, "w") as f:
            f.write(" ".join(str(x) for x in figures))

    def shape(self, rate, delay):
        self.shapes.append(rate)

    def command(self, ranks, argv):
        return [sys.executable, "-c", self.PROBE, self.queue], {}


def check(figures, want_overlap, want_median, failures):
    with tempfile.TemporaryDirectory() as work:
        netns = os.path.join(work, "netns.json")
        with open(netns, "w") as f:
            json.dump({"comm_overlaps_compute": not want_overlap, "sources": {}}, f)
        hosts = FakeHosts(figures, work)
        args = types.SimpleNamespace(build=work)
        path, median, runs = validate_this_machine.hardware_at_rate(args, hosts, netns, "100mbit")
        with open(path) as f:
            hw = json.load(f)
        if hw["comm_overlaps_compute"] != want_overlap or abs(median - want_median) > 1e-12 or len(runs) != 3:
            failures.append(f"{figures}: overlaps {hw['comm_overlaps_compute']}, median {median}, runs {runs}")
        if hosts.shapes != ["100mbit", ""]:
            failures.append(f"{figures}: shaped {hosts.shapes}, expected the rate then unshaped")
        if "100mbit" not in hw["sources"]["comm_overlaps_compute"]:
            failures.append(f"{figures}: the source does not name the rate: {hw['sources']}")
        with open(netns) as f:
            if json.load(f)["comm_overlaps_compute"] == want_overlap:
                failures.append(f"{figures}: the unshaped hosts' file was changed")


def main():
    failures = []
    check([1.4, 1.3, 1.6], True, 1.4, failures)      # a slow link moves the bytes itself
    check([102.0, 1.5, 190.0], False, 102.0, failures)  # one low probe does not decide
    check([5.2, 5.1, 5.5], False, 5.2, failures)      # 1 Gbit/s here: still waits
    # The shaped link's achieved share: np 2 lines only, bytes / seconds over the line rate.
    got = validate_this_machine.achieved_fractions(["262144,2,0.0262144", "1048576,2,0.16777216", "4096,4,1.0"],
                                                   "100mbit")
    want = {262144: 0.8, 1048576: 0.5}
    if set(got) != set(want) or any(abs(got[k] - want[k]) > 1e-9 for k in want):
        failures.append(f"achieved fractions at 100mbit: {got}, expected {want}")
    if calibrate.overlaps_compute(calibrate.OVERLAP_BELOW) or not calibrate.overlaps_compute(1.99):
        failures.append("the threshold: below 2 overlaps, 2 does not")
    for f in failures:
        print("FAILED:", f)
    if not failures:
        print("per-rate overlap: the median of three probes, below 2 overlaps")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
