"""What the example and benchmark tests share: running a program under mpirun, checking
what it printed, and the command line that picks one case of a test script.

    python3 SCRIPT CASE --exe PROGRAM --work DIR --mpiexec mpirun --mpiexec-flags "..."
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

SKIP = 77  # CTest's SKIP_RETURN_CODE for these tests


def fail(message, output=""):
    if output:
        print("---- output ----\n" + output + "\n----------------")
    print("FAILED: " + message)
    sys.exit(1)


def check(condition, message, output=""):
    if not condition:
        fail(message, output)


def fresh(folder):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    return folder


class Runner:
    """Runs --exe under --mpiexec with the given number of ranks, echoing the output."""

    def __init__(self, args):
        self.exe, self.mpiexec, self.mpi_flags = args.exe, args.mpiexec, shlex.split(args.mpiexec_flags)

    def run(self, ranks, *flags, timeout=240):
        command = [self.mpiexec, "-np", str(ranks), *self.mpi_flags, self.exe, *flags]
        print("$ " + " ".join(command), flush=True)
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as e:
            fail(f"no answer within {timeout} s: {command}", (e.stdout or b"").decode(errors="replace"))
        print(done.stdout + done.stderr)
        return done


def run_ok(runner, *flags):
    """A 2-rank run that must succeed and draw no progress bar into the pipe; its stdout."""
    done = runner.run(2, *flags, timeout=120)
    check(done.returncode == 0, f"exit status {done.returncode}", done.stdout + done.stderr)
    check("\r" not in done.stdout, "a progress bar was drawn into a pipe", done.stdout)
    return done.stdout


def fails_once(runner, program, flags, *expected):
    """A 2-rank run that must fail cleanly, with one error line naming every `expected` text."""
    done = runner.run(2, *flags, timeout=60)
    both = done.stdout + done.stderr
    check(done.returncode != 0, f"{flags}: exit status 0", both)
    for text in expected:
        check(text in done.stderr, f"{flags}: stderr does not say {text!r}", both)
    check(done.stderr.count(f"{program}: error") <= 1 and "rank 1" not in done.stderr,
          f"{flags}: the error is printed by more than one rank", both)
    check("Traceback" not in both and "terminate called" not in both and "Abort" not in both,
          f"{flags}: crashed instead of failing cleanly", both)


def run_case(cases, doc):
    """Parses CASE and the run's flags, then runs that case in a fresh folder under --work."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=sorted(cases))
    for flag in ("--exe", "--work", "--mpiexec"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--mpiexec-flags", default="", help="one string, split like a shell's words")
    args = parser.parse_args()
    cases[args.case](Runner(args), fresh(os.path.join(args.work, args.case)))
    print("OK")
