#!/usr/bin/python3
"""Horovod's elastic integration tests (test/integration/test_elastic_torch.py and
elastic_common.py of github:horovod/horovod) on kolorun: Horovod's own training script,
test/integration/data/elastic_torch_main.py, with only its import line changed, run by
kolorun with the same flags, discovery schedules and exit schedules, and judged by the same
assertions on the log that rank 0 writes each epoch. Horovod's harness calls horovodrun's
Python internals, so it cannot drive kolorun; this one is its equivalent, case by case.
kolo does not carry Horovod's code, so this takes a checkout and a built kolo:

    tools/horovod-elastic-integration.py HOROVOD_DIR [--build BUILD_DIR] [CASE ...]

Exit status 0 when every case passes. Not in CI (no Horovod checkout there).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# Horovod's discovery script: the hosts of each epoch, picked by the number of lines rank 0
# has logged so far (elastic_common.py's DISCOVERY_SCRIPT_TEMPLATE).
def discovery_script(logfile, schedule):
    lines = ['#!/bin/bash', 'epoch=0', f'if [ -f {logfile} ]; then',
             f'    epoch=$(< {logfile} wc -l | tr -d \'[:space:]\')', 'fi']
    for i, (epoch, hosts) in enumerate(schedule):
        echo = [f'echo "{h}"' for h in hosts]
        if len(schedule) == 1:
            lines += echo
        elif i == 0:
            lines += [f'if [ "$epoch" == "{epoch}" ]; then', *echo]
        elif i < len(schedule) - 1:
            lines += [f'elif [ "$epoch" == "{epoch}" ]; then', *echo]
        else:
            lines += ['else', *echo, 'fi']
    return '\n'.join(lines) + '\n'


class Run:
    def __init__(self, code, output, results):
        self.code, self.output, self.results = code, output, results


def run(args, script, work, discovery_schedule=None, exit_schedule=None, exit_mode='exception', num_proc=2,
        min_num_proc=2, max_num_proc=4, hosts=None, reset_limit=None, cooldown_range=None, epoch_wait=None,
        epochs=None):
    """elastic_common.py's _run, with kolorun in place of horovodrun."""
    logfile = os.path.join(work, f'log-{time.monotonic_ns()}.txt')
    command = [args.kolorun, '-np', str(num_proc), '--min-np', str(min_num_proc)]
    if hosts is not None:
        command += ['-H', hosts]
    else:
        discovery = os.path.join(work, f'discover-{time.monotonic_ns()}.sh')
        with open(discovery, 'w') as f:
            f.write(discovery_script(logfile, discovery_schedule))
        os.chmod(discovery, 0o755)
        command += ['--host-discovery-script', discovery, '--max-np', str(max_num_proc)]
    if reset_limit is not None:
        command += ['--reset-limit', str(reset_limit)]
    if cooldown_range is not None:
        command += ['--blacklist-cooldown-range', str(cooldown_range[0]), str(cooldown_range[1])]
    command += ['/usr/bin/python3', script, '--logfile', logfile]
    if discovery_schedule:
        command += ['--discovery-schedule', json.dumps(discovery_schedule)]
    if epoch_wait:
        command += ['--epoch-wait', json.dumps(epoch_wait)]
    if epochs:
        command += ['--epochs', json.dumps(epochs)]
    if exit_schedule:
        command += ['--exit-schedule', json.dumps(exit_schedule), '--exit-mode', exit_mode]
    env = dict(os.environ, PYTHONPATH=args.python_path, OMP_NUM_THREADS='1')
    start = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.terminate()  # kolorun ends its workers
        output, _ = process.communicate()
        output += '\n(stopped after 300 s)'
    print(f'  $ kolorun {" ".join(command[1:])}\n    exit {process.returncode} after {time.monotonic() - start:.1f} s')
    results = [json.loads(line) for line in open(logfile)] if os.path.exists(logfile) else []
    return Run(process.returncode, output, results)


def expect(run, condition, what):
    if not condition:
        print(run.output)
        for r in run.results:
            print('   ', r)
        raise AssertionError(what)


def check_round(run, index, start_rank, size, rendezvous=None, hostname=None):
    r = run.results[index]
    want = dict(start_rank=start_rank, size=size)
    if rendezvous is not None:
        want['rendezvous'] = rendezvous
    if hostname is not None:
        want['hostname'] = hostname
    got = {k: r[k] for k in want}
    expect(run, got == want, f'epoch {index}: {got}, expected {want}')


def succeeded(run, epochs=3):
    expect(run, run.code == 0, f'the job should succeed (exit {run.code})')
    expect(run, len(run.results) == epochs, f'{len(run.results)} epochs logged, expected {epochs}')


def hosts_added_and_removed(args, script, work):
    for slots, num_proc, min_num_proc, max_num_proc in [(2, 2, 2, 4), (1, 1, 1, 2)]:
        schedule = [(0, [f'localhost:{slots}']), (1, [f'localhost:{slots}', f'127.0.0.1:{slots}']),
                    (None, [f'127.0.0.1:{slots}'])]
        r = run(args, script, work, schedule, num_proc=num_proc, min_num_proc=min_num_proc, max_num_proc=max_num_proc)
        succeeded(r)
        check_round(r, 0, 0, slots, hostname='localhost')
        check_round(r, 1, 0, slots * 2, hostname='localhost')
        check_round(r, 2, slots, slots, rendezvous=3, hostname='127.0.0.1')


def start_rank_0_fails(args, script, work, **hosts):
    """Start rank 0 raises, or is SIGKILLed, at epoch 1: the two workers of the other host go
    on from the last commit (Horovod's two tests differ only in how the hosts are given)."""
    for exit_mode in ['exception', 'kill']:
        r = run(args, script, work, exit_schedule={str((1, 0)): [0]}, exit_mode=exit_mode, **hosts)
        succeeded(r)
        check_round(r, 0, 0, 4, rendezvous=1)
        check_round(r, 1, 2, 2, rendezvous=2)
        check_round(r, 2, 2, 2, rendezvous=2)


def single_rank_failure(args, script, work):
    start_rank_0_fails(args, script, work, discovery_schedule=[(None, ['localhost:2', '127.0.0.1:2'])])


def fault_tolerance_without_scaling(args, script, work):
    start_rank_0_fails(args, script, work, hosts='localhost:2,127.0.0.1:2')


def all_ranks_failure(args, script, work):
    r = run(args, script, work, [(None, ['localhost:2', '127.0.0.1:2'])], exit_schedule={str((1, 0)): [0, 1, 2, 3]})
    expect(r, r.code != 0, 'the job should fail')
    expect(r, 'every worker of round 1 failed; ending the job' in r.output, 'kolorun should say why')


def all_hosts_blacklisted(args, script, work):
    r = run(args, script, work, [(None, ['localhost:2', '127.0.0.1:2'])], exit_schedule={str((1, 0)): [0, 2]})
    expect(r, r.code != 0, 'the job should fail')
    expect(r, 'every host of round 1 is blacklisted for good; ending the job' in r.output, 'kolorun should say why')


def reset_limit(args, script, work):
    schedule = [(0, ['localhost:2']), (1, ['localhost:2', '127.0.0.1:2']), (None, ['127.0.0.1:2'])]
    r = run(args, script, work, schedule, reset_limit=1)
    expect(r, r.code != 0 and re.search(r're-formed 1 times \(--reset-limit 1\)', r.output),
           'with --reset-limit 1 the job should fail, saying so')
    r = run(args, script, work, schedule, reset_limit=2)
    succeeded(r)


def resurrecting_blacklisted_hosts_exponential_backoff(args, script, work):
    """Start rank 3 fails at epoch 1: its host is out for its cooldown (horovodrun's backoff:
    2-3 x MIN, within [MIN, MAX] = 2 s here), longer than the remaining epochs take."""
    r = run(args, script, work, [(None, ['localhost:2', '127.0.0.1:2'])],
            exit_schedule={str((1, 0)): [3], str((3, 0)): [3]}, exit_mode='exception', epoch_wait=0.25, epochs=5,
            cooldown_range=[1, 2])
    succeeded(r, epochs=5)
    check_round(r, 0, 0, 4, rendezvous=1)
    check_round(r, 1, 0, 2, rendezvous=2)
    check_round(r, 2, 0, 2, rendezvous=2)
    check_round(r, 4, 0, 2, rendezvous=2)


CASES = {f.__name__: f for f in [hosts_added_and_removed, single_rank_failure, fault_tolerance_without_scaling,
                                  all_ranks_failure, all_hosts_blacklisted, reset_limit,
                                  resurrecting_blacklisted_hosts_exponential_backoff]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('horovod', help='a checkout of github:horovod/horovod')
    parser.add_argument('--build', default=os.path.join(here, '..', 'build'))
    parser.add_argument('cases', nargs='*', help=f'some of: {" ".join(CASES)} (default: all)')
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f'unknown case(s) {unknown}: choose from {list(CASES)}')
    args.kolorun = os.path.join(args.build, 'launcher', 'kolorun')
    args.python_path = os.path.join(os.path.abspath(args.build), 'python')
    original = os.path.join(args.horovod, 'test', 'integration', 'data', 'elastic_torch_main.py')
    with tempfile.TemporaryDirectory() as work:
        script = os.path.join(work, 'elastic_torch_main.py')
        text = open(original).read()
        changed = text.replace('\nimport horovod.torch as hvd\n', '\nimport kolo.torch as hvd\n')
        if changed.count('kolo.torch') != 1:
            sys.exit(f'the import line was not found in {original}')
        open(script, 'w').write(changed)
        failed = []
        for name in args.cases or CASES:
            print(f'{name}:')
            try:
                CASES[name](args, script, work)
                print('  PASSED')
            except AssertionError as e:
                print(f'  FAILED: {e}')
                failed.append(name)
    print(f'{len(args.cases or CASES) - len(failed)} passed, {len(failed)} failed {failed if failed else ""}')
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
