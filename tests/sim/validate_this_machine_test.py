#!/usr/bin/python3
"""sim/validate_this_machine.py's measurements on the namespace hosts and in its rounds, with
stand-ins for the probes printing fixed figures:
  - whether communication overlaps compute, per link rate (hardware_at_rate, with
    sim/calibrate.py's probe parsing and threshold): the median of three probes decides,
    the rate's file says it with its runs, and the link is left unshaped afterwards;
  - how late a collective submitted mid-compute starts (start_delay_at_rate), into the
    rate's file;
  - the share of a shaped link's rate kolo's allreduce achieves, and what the shaper's
    bucket gives it after idle time (achieved_fractions, bucket_bytes);
  - the busy-node slowdown measured in each round: the round's hardware file carries the
    round's figure with the calibration's spread around it (within the bounds kolo-sim's
    hardware loader enforces), the calibrated file is left as it was, and a row reports its
    error both with the calibration's figure and with the round's."""
import json
import os
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "sim"))
import calibrate  # noqa: E402
import validate_this_machine  # noqa: E402


CALIBRATED = {"compute_slowdown_when_busy": 1.1, "compute_slowdown_low": 1.0, "compute_slowdown_high": 1.3,
              "sources": {"compute_slowdown_when_busy": "calibrate"}}


def check_file(busy, want, failures):
    with tempfile.TemporaryDirectory() as work:
        calibrated = os.path.join(work, "calibrated.json")
        with open(calibrated, "w") as f:
            json.dump(CALIBRATED, f)
        path = validate_this_machine.hardware_with_busy(calibrated, busy, os.path.join(work, "round.json"))
        with open(path) as f:
            hw = json.load(f)
        got = tuple(hw[k] for k in ("compute_slowdown_low", "compute_slowdown_when_busy", "compute_slowdown_high"))
        if any(abs(g - w) > 1e-9 for g, w in zip(got, want)):
            failures.append(f"busy {busy}: low, value, high {got}, expected {want}")
        if not got[0] <= got[1] <= got[2]:
            failures.append(f"busy {busy}: {got} is not ordered (kolo-sim refuses the file)")
        if "round" not in hw["sources"]["compute_slowdown_when_busy"]:
            failures.append(f"busy {busy}: the source does not say where the figure came from: {hw['sources']}")
        with open(calibrated) as f:
            if json.load(f) != CALIBRATED:
                failures.append(f"busy {busy}: the calibrated file was changed")


def check_row(failures):
    # Measured 1.0, 2.0, 1.0 s; predicted with the calibration's slowdown 1.1, 2.0, 0.95
    # (errors +10, 0, -5 %: median 0), with the round's 1.2, 2.4, 1.3 (+20, +20, +30 %).
    times = [1.0, 2.0, 1.0]
    predictions = [(1.1, (1.0, 1.2), 1.05, 1.2), (2.0, (1.9, 2.1), 1.1, 2.4), (0.95, (0.9, 1.1), 1.0, 1.3)]
    points, rounds = [], []
    line = validate_this_machine.row("local np 2", times, predictions, points, rounds)
    cells = [c.strip() for c in line.strip("|").split("|")]
    if cells[-2] != "+0.0 %" or cells[-1] != "+20.0 %":
        failures.append(f"row: errors {cells[-2]!r} (calibration's slowdown), {cells[-1]!r} (the round's), "
                        "expected '+0.0 %' and '+20.0 %'")
    if cells[5] != "3 of 3":
        failures.append(f"row: {cells[5]!r} rounds inside the band, expected '3 of 3'")
    if not all("busy" in cell for cell in rounds[0][1]):
        failures.append(f"row: the per-round cells do not give the round's slowdown: {rounds[0][1]}")


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


class StartDelayHosts:
    """Hosts whose --start-delay probe prints fixed figures, rank-tagged."""

    def __init__(self):
        self.shapes = []

    def shape(self, rate, delay):
        self.shapes.append(rate)

    def command(self, ranks, argv):
        tagged = "\\n".join("[1,0]<stdout>:" + line for line in
                             ("start_idle_ms,1.3000", "start_computing_ms,17.2000", "start_delay_ms,15.9000"))
        return [sys.executable, "-c", f"print('{tagged}')"], {}


def check_start_delay(failures):
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "netns_100mbit.json")
        with open(path, "w") as f:
            json.dump({"comm_overlaps_compute": True, "sources": {}}, f)
        hosts = StartDelayHosts()
        figures = validate_this_machine.start_delay_at_rate(types.SimpleNamespace(build=work), hosts, path, "100mbit")
        with open(path) as f:
            hw = json.load(f)
        if figures != (15.9, 1.3, 17.2) or hw.get("comm_start_delay_ms") != 15.9:
            failures.append(f"start delay: {figures}, file {hw.get('comm_start_delay_ms')}, expected 15.9 ms")
        if "100mbit" not in hw["sources"].get("comm_start_delay_ms", "") or hosts.shapes != ["100mbit", ""]:
            failures.append(f"start delay: source {hw['sources']}, shaped {hosts.shapes}")


def main():
    failures = []
    check_start_delay(failures)
    check_file(1.21, (1.1, 1.21, 1.43), failures)   # the calibration's spread, scaled to the round's figure
    check_file(1.0, (0.909, 1.0, 1.182), failures)  # the floor the calibration takes too
    check_file(1.1, (1.0, 1.1, 1.3), failures)      # the same figure: the file as calibrated
    check_row(failures)
    check([1.4, 1.3, 1.6], True, 1.4, failures)      # a slow link moves the bytes itself
    check([102.0, 1.5, 190.0], False, 102.0, failures)  # one low probe does not decide
    check([5.2, 5.1, 5.5], False, 5.2, failures)      # 1 Gbit/s here: still waits
    # The shaped link's achieved share: np 2 lines only, bytes / seconds over the line rate.
    got = validate_this_machine.achieved_fractions(["262144,2,0.0262144", "1048576,2,0.16777216", "4096,4,1.0"],
                                                   "100mbit")
    want = {262144: 0.8, 1048576: 0.5}
    if set(got) != set(want) or any(abs(got[k] - want[k]) > 1e-9 for k in want):
        failures.append(f"achieved fractions at 100mbit: {got}, expected {want}")
    # The bucket's worth: 10 ms saved after idle on a 256 KiB allreduce that takes 25 ms
    # back to back is 10 ms at 256 KiB / 25 ms.
    free = validate_this_machine.bucket_bytes(0.025, 0.015, 262144)
    if abs(free - 0.4 * 262144) > 1e-6 or validate_this_machine.bucket_bytes(0.02, 0.03, 262144) != 0:
        failures.append(f"bucket bytes: {free}, expected {0.4 * 262144}, and none where idle was slower")
    if calibrate.overlaps_compute(calibrate.OVERLAP_BELOW) or not calibrate.overlaps_compute(1.99):
        failures.append("the threshold: below 2 overlaps, 2 does not")
    for f in failures:
        print("FAILED:", f)
    if not failures:
        print("validate_this_machine: per-rate overlap, start delay, achieved share and bucket; busy-node slowdown "
              "per round")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
