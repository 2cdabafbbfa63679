#!/usr/bin/python3
"""kolo's Gloo transport against its MPI transport: the ResNet-50 gradient set averaged at
np 2 (transport_benchmark.cc), the two jobs alternating for --rounds rounds on this machine so
that both see the same noise. Prints each round, the medians, and Gloo's time over MPI's.

    bench/allreduce/gloo_vs_mpi.py --build build --rounds 5 --reps 10
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument('--build', default='build')
parser.add_argument('--np', type=int, default=2)
parser.add_argument('--rounds', type=int, default=5)
parser.add_argument('--reps', type=int, default=10)
parser.add_argument('--mpi-tcp', action='store_true',
                    help="MPI over TCP too (--mca btl tcp,self), as between hosts: without it, Open MPI's ranks "
                         "on one machine share memory, while Gloo always goes through TCP")
args = parser.parse_args()

program = os.path.join(args.build, 'bench/allreduce/transport_benchmark')
kolorun = os.path.join(args.build, 'launcher/kolorun')
root = ['--allow-run-as-root'] if os.geteuid() == 0 else []
commands = {
    'mpi': ['mpirun', '-np', str(args.np), '--oversubscribe', '--bind-to', 'none', *root,
            *(['--mca', 'btl', 'tcp,self'] if args.mpi_tcp else []), program, '--reps', str(args.reps)],
    'gloo': [kolorun, '--gloo', '--oversubscribe', '-np', str(args.np), program, '--reps', str(args.reps)],
}


def run(kind, timeout=600):
    try:
        done = subprocess.run(commands[kind], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, process_group=0)
    except subprocess.TimeoutExpired:
        sys.exit(f'{kind}: no answer within {timeout} s: {" ".join(commands[kind])}')
    out = done.stdout
    line = next((l for l in out.splitlines() if 'KOLO_TRANSPORT_BENCH' in l), None)
    if done.returncode != 0 or line is None:
        sys.exit(f'{kind}: failed (exit status {done.returncode}): {" ".join(commands[kind])}\n{out}')
    result = json.loads(line.split('KOLO_TRANSPORT_BENCH', 1)[1])
    assert result['exact'], f'{kind}: the average of ones was not one'
    return result


medians = {'mpi': [], 'gloo': []}
cpu = ''
for r in range(args.rounds):
    for kind in (('mpi', 'gloo') if r % 2 == 0 else ('gloo', 'mpi')):
        result = run(kind)
        medians[kind].append(result['median_ms'])
        cpu = result['cpu']
    print(f'round {r + 1}: MPI {medians["mpi"][-1]:.1f} ms, Gloo {medians["gloo"][-1]:.1f} ms, '
          f'Gloo/MPI {medians["gloo"][-1] / medians["mpi"][-1]:.2f}')
mpi, gloo = statistics.median(medians['mpi']), statistics.median(medians['gloo'])
print(f'CPU: {cpu}; np {args.np}; ResNet-50 gradient set (25.6 M float32, 161 tensors), Average; '
      f'MPI over {"TCP" if args.mpi_tcp else "shared memory"}')
print(f'median over {args.rounds} rounds: MPI {mpi:.1f} ms, Gloo {gloo:.1f} ms per step; Gloo/MPI {gloo / mpi:.2f}')
