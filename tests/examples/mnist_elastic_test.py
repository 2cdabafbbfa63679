#!/usr/bin/python3
"""examples/mnist --elastic under an elastic kolorun (kolo/elastic.h in a C++ loop): two
workers, hosts "localhost" and "127.0.0.1"; after the first epoch the test SIGKILLs the
worker on 127.0.0.1 (a child of the kolorun it started, found by its pid). The other must
go on without a restart, train the remaining epochs alone, and end within 0.05 of the test
accuracy of an undisturbed elastic run made first. Then a third run, under a discovery
script, loses the host 127.0.0.1 after the first epoch: its worker, told to leave at the
next reset, ends without an error, and the job succeeds on the other.

    mnist_elastic_test.py --kolorun build/launcher/kolorun --exe build/examples/mnist/mnist
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument('--kolorun', required=True)
parser.add_argument('--exe', required=True)
args = parser.parse_args()

FLAGS = ['--min-np', '1', '--max-np', '2', '-np', '2', '-H', 'localhost:1,127.0.0.1:1']
TRAIN = ['--elastic', '--epochs', '3', '--train-limit', '4096', '--test-limit', '1024', '--threads', '1']


def check(condition, what):
    print(('ok: ' if condition else 'FAILED: ') + what, flush=True)
    if not condition:
        sys.exit(1)


def children_on(parent, host):
    """kolorun's worker processes (its children) started for `host`."""
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{pid}/environ', 'rb') as f:
                env = f.read().split(b'\0')
        except OSError:
            continue
        if ppid == parent and f'KOLO_HOSTNAME={host}'.encode() in env:
            found.append(int(pid))
    return found


def test_accuracy(output):
    match = re.search(r'test accuracy ([0-9.]+)', output)
    return float(match.group(1)) if match else -1.0


baseline = subprocess.run([args.kolorun, *FLAGS, args.exe, *TRAIN], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
print(baseline.stdout)
check(baseline.returncode == 0, 'the undisturbed elastic run succeeds')
reference = test_accuracy(baseline.stdout)


def run_acting_after_epoch_1(flags, action):
    """Runs the job with `flags`, echoing its lines; calls action() once, when the first epoch's
    line appears. Bounded: 600 s. Returns kolorun's exit code and output."""
    job = subprocess.Popen([args.kolorun, *flags, args.exe, *TRAIN], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    lines, acted = [], False
    deadline = time.monotonic() + 600
    for line in job.stdout:
        lines.append(line)
        print(line, end='', flush=True)
        if not acted and 'epoch 1/3' in line:
            action(job)
            acted = True
        if time.monotonic() > deadline:
            job.kill()
            break
    return job.wait(timeout=60), ''.join(lines)


killed = []


def kill_worker_on_127(job):
    victims = children_on(job.pid, '127.0.0.1')
    check(len(victims) == 1, f'one worker of kolorun on 127.0.0.1 (found {victims})')
    os.kill(victims[0], signal.SIGKILL)
    killed.append(victims[0])


code, output = run_acting_after_epoch_1(FLAGS, kill_worker_on_127)
check(killed and code == 0, f'the job with a killed worker succeeds (exit {code})')
check('round 2: 1 workers (the job re-formed)' in output, 'kolorun re-forms the job with the worker left')
check(len(re.findall(r'training on \d ranks', output)) == 2 and 'training on 1 ranks from epoch 2' in output,
      'the survivor went on from the last commit (epoch 2) without a restart')
check(re.search(r'epoch 3/3 .* - 1 ranks', output) is not None, 'the last epoch ran on 1 rank')
accuracy = test_accuracy(output)
check(accuracy >= reference - 0.05, f'test accuracy {accuracy:.4f} within 0.05 of the undisturbed {reference:.4f}')

# A host removed through the discovery script after the first epoch: at the next commit both
# workers reset, and the one on 127.0.0.1, no longer wanted, leaves without an error.
work = tempfile.mkdtemp(prefix='kolo-mnist-elastic-')
hosts_file = os.path.join(work, 'hosts')
with open(hosts_file, 'w') as f:
    f.write('localhost:1\n127.0.0.1:1\n')


def remove_127(job):
    with open(hosts_file + '.new', 'w') as f:
        f.write('localhost:1\n')
    os.replace(hosts_file + '.new', hosts_file)


code, output = run_acting_after_epoch_1(
    ['--min-np', '1', '--max-np', '2', '-np', '2', '--host-discovery-script', f'cat {hosts_file}'], remove_127)
shutil.rmtree(work)
check(code == 0, f'the job whose host was removed succeeds (exit {code})')
check('this worker leaves the job' in output and 'error' not in output,
      'the worker on the removed host leaves without an error')
check('round 2: 1 workers (the job re-formed)' in output, 'kolorun re-forms the job with the worker left')
