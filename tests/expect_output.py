#!/usr/bin/env python3
"""Runs a command; passes only if it exits with the expected code and prints the pattern.

    expect_output.py [--exit-code N] PATTERN -- COMMAND [ARG ...]

ctest's PASS_REGULAR_EXPRESSION ignores the exit code: a job whose rank 0 printed the line
while another rank failed would pass. PATTERN is a Python regular expression searched in
stdout and stderr together ('.' matches newlines, as in CMake's).
"""
import argparse
import re
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("pattern")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    sys.stdout.write(run.stdout)
    problems = []
    if run.returncode != args.exit_code:
        problems.append(f"exit code {run.returncode}, expected {args.exit_code}")
    if not re.search(args.pattern, run.stdout, re.DOTALL):
        problems.append(f"no match for {args.pattern!r} in the output")
    for problem in problems:
        print(f"expect_output: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
