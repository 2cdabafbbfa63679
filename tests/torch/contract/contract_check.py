#!/usr/bin/python3
"""One DistributedOptimizer contract: the same two steps through kolo::torch (C++, steps.cc)
and kolo.torch (Python, steps.py), each an mpirun job of 2 ranks, for op Average, Sum and
Adasum with 1 and 2 backward passes per step, end on the same float64 parameters (within
1e-9, relative to the value's size, or absolute below 1).

    contract_check.py --mpirun "mpirun -np 2 ..." --cpp <kolo_torch_contract_steps> --python <python3>
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def values(path):
    with open(path) as f:
        return [(line.split()[0], float(line.split()[1])) for line in f]


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--mpirun', required=True)
    p.add_argument('--cpp', required=True)
    p.add_argument('--python', required=True)
    a = p.parse_args()
    failures, checks = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for op in ('average', 'sum', 'adasum'):
            for passes in (1, 2):
                case = f'op {op}, {passes} pass(es)'
                got = {}
                for side, program in (('C++', [a.cpp]), ('Python', [a.python, os.path.join(HERE, 'steps.py')])):
                    out = os.path.join(tmp, f'{op}{passes}.{side}')
                    command = shlex.split(a.mpirun) + program + ['--op', op, '--passes', str(passes), '--out', out]
                    run = subprocess.run(command, capture_output=True, text=True, timeout=240)
                    if run.returncode != 0 or not os.path.exists(out):
                        sys.exit(f'{case}, {side}: exit {run.returncode}\n{run.stdout}\n{run.stderr}')
                    got[side] = values(out)
                cpp, py = got['C++'], got['Python']
                checks += 1
                if [n for n, _ in cpp] != [n for n, _ in py]:
                    failures.append(f'{case}: the two wrote different parameters')
                    continue
                worst = max(abs(x - y) / max(1.0, abs(y)) for (_, x), (_, y) in zip(cpp, py))
                print(f'{case}: {len(cpp)} values, largest difference {worst:.3g}')
                if worst > 1e-9:
                    failures.append(f'{case}: C++ and Python differ by {worst:.3g}')
                # Not a test that cannot fail: the two steps moved the parameters (w1[0] starts
                # at sin(0) * 0.5 = 0).
                if abs(py[0][1]) < 1e-6:
                    failures.append(f'{case}: the parameters did not move')
    print(''.join(f'FAIL: {f}\n' for f in failures) + f'{checks - len(failures)} passed, {len(failures)} failed')
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
