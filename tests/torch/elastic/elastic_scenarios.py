#!/usr/bin/python3
"""The elastic tests: real kolorun jobs of elastic_train.py on this machine, with hosts
"localhost" and "127.0.0.1" as Horovod's own elastic tests use them, each checked from
kolorun's lines and the workers' logs (elastic_train.py):

  kill      a worker SIGKILLed mid-epoch with --min-np 2: the others go on without a restart
            (no worker is started again), end with equal parameters and the accuracy band of
            an undisturbed run made in the same test, and saw every sample of every epoch
            exactly once (the final step's padding aside); each round makes a process set
            of its even ranks and sums on it every step;
  grow      a host added through the discovery script: the job grows to 3 workers, equal
            parameters, every sample once;
  broken-new-worker  a host's new slot whose worker dies before it reaches kolo: the round
            formed with it fails to connect, the survivors reset again (the failed reset
            no longer ends them) into a round without that host, and finish;
  reorder   a discovery script that lists the same hosts in another order each time: no
            change, so no reset (one a second before, each counted by --reset-limit);
  reset-limit  --reset-limit 0 and a lost worker: the job fails with a clear line;
  cooldown  a failed host is blacklisted, and comes back after --blacklist-cooldown-range;
  min-np    a host removed below --min-np, then added again (horovod#3494): the job waits,
            re-forms and finishes, without a deadlock;
  hung      a worker stopped (SIGSTOP: it holds its connections and answers nothing, as a
            cut-off one): it is dropped within --elastic-timeout and the others go on;
  stall     a worker stuck in its own code (alive: kolo's threads answer): the others'
            collective fails as Stalled after the stall time, they reset, and the stuck
            worker, which never asks for the next round, is dropped; the others go on;
  horovod-grow-shrink  Horovod's elastic integration test of added and removed hosts, on
            epoch_log.py (a script in the shape of Horovod's): one worker, then two, then the
            first host gone; each epoch's rank 0 started where Horovod's would have, as
            HOROVOD_RANK and HOROVOD_HOSTNAME say;
  horovod-failures  Horovod's failure tests: a worker whose program raises (it shuts kolo
            down as it exits) takes its host out and the others go on, also when it fails
            in a process set; every worker raising, or every host blacklisted, ends the job
            at once with kolorun's reason; and, as horovodrun's driver, a worker whose
            program finishes first ends the job (status 0), the others told to leave, and
            kolorun waits for a rank 0 that saves alone after the others have ended; a
            worker lost while the state is synced after a reset makes the others reset again;
  cut       on the namespace hosts of tools/cluster (--netns STATE): node1's link taken down
            mid-epoch; its workers are dropped within --elastic-timeout (their processes
            ended through the remote agent's process group), node0's worker goes on;
  slurm     inside a Slurm allocation (--slurm STATE: tools/cluster's cluster): every worker
            an srun step on its node; node1's SIGKILLed, node0's goes on.

    elastic_scenarios.py --kolorun build/launcher/kolorun --python-path build/python SCENARIO
"""
import argparse
import collections
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_job(args, work, kolorun_flags, train_flags, env=None, actions=(), timeout=240, prefix=()):
    """Runs kolorun on elastic_train.py; `actions`: (seconds, function) run meanwhile;
    `prefix`: what runs kolorun (the namespace hosts' launch)."""
    log_dir = os.path.join(work, 'logs')
    os.makedirs(log_dir, exist_ok=True)
    command = [*prefix, args.kolorun, *kolorun_flags, '/usr/bin/python3', os.path.join(HERE, 'elastic_train.py'),
               '--log-dir', log_dir, *train_flags]
    full_env = dict(os.environ, PYTHONPATH=args.python_path, **(env or {}))
    start = time.monotonic()
    timers = [threading.Timer(at, action) for at, action in actions]
    for t in timers:
        t.start()
    try:
        done = run_kolorun(command, full_env, timeout)
    finally:
        for t in timers:
            t.cancel()
    print(f'$ {" ".join(kolorun_flags)} ... ({time.monotonic() - start:.1f} s, exit {done.returncode})')
    print(done.stdout)
    return done, read_logs(log_dir)


def run_kolorun(command, env, timeout):
    """Runs kolorun to its end; past `timeout`, stops it with SIGTERM (it ends its workers)
    and fails the test."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        print(output)
        check(False, f'kolorun finished within {timeout} s')
    return subprocess.CompletedProcess(command, process.returncode, output)


def read_logs(log_dir):
    workers = {}
    for path in glob.glob(os.path.join(log_dir, 'worker-*.jsonl')):
        records = [json.loads(line) for line in open(path)]
        workers[path] = records
    return workers


def ends(workers):
    return [r for records in workers.values() for r in records if r.get('end')]


def starts(workers):
    return [r for records in workers.values() for r in records if r.get('start')]


def check(condition, what):
    if not condition:
        print(f'FAILED: {what}')
        sys.exit(1)
    print(f'ok: {what}')


def check_every_sample_once(workers, samples, epochs):
    """Per epoch, every sample in the committed batches exactly once, but for the last
    step's padding (each rank's share is rounded up: at most size - 1 repeats)."""
    seen = collections.defaultdict(collections.Counter)
    sizes = collections.defaultdict(set)
    for records in workers.values():
        for r in records:
            if 'indices' in r:
                seen[r['epoch']].update(r['indices'])
                sizes[r['epoch']].add(r['size'])
    for epoch in range(epochs):
        counts = seen[epoch]
        missing = [i for i in range(samples) if counts[i] == 0]
        repeats = sum(c - 1 for c in counts.values() if c > 1)
        check(not missing and repeats <= max(sizes[epoch]) - 1,
              f'epoch {epoch}: every sample seen once (missing {len(missing)}, repeats {repeats}, '
              f'sizes {sorted(sizes[epoch])})')


def recovery_seconds(work, workers, size_after):
    """From the fault (the time its marker file records) to the first round of `size_after`
    workers starting to train again."""
    markers = glob.glob(os.path.join(work, 'logs', 'fault-*'))
    fault = float(open(markers[0]).read())
    resumed = min(r['round_start'] for records in workers.values() for r in records
                  if 'round_start' in r and r['size'] == size_after and r['round_start'] > fault)
    seconds = resumed - fault
    print(f'recovery: {seconds:.2f} s from the fault to training again on {size_after} workers')
    return seconds


def check_equal_ends(workers, size):
    finals = ends(workers)
    check(len(finals) == size and all(r['size'] == size for r in finals),
          f'{size} workers finished, all in a job of {size} (got {[(r["rank"], r["size"]) for r in finals]})')
    check(len({round(r['checksum'], 9) for r in finals}) == 1, 'the parameters are equal on every rank')
    check(all(r['scheduler_epoch'] == 3 for r in finals), "every rank's lr scheduler is at the last epoch (3)")
    return finals[0]['accuracy']


def check_oldest_is_rank_0(workers):
    """Rank 0 of the second round is, of the workers that went on, the one with the lowest
    rank in the first: the longest-serving (each worker logs its rank at each round's start)."""
    history = [[r['rank'] for r in records if 'round_start' in r] for records in workers.values()]
    survivors = [h for h in history if len(h) > 1]
    rank_0 = [h for h in survivors if h[1] == 0]
    check(len(rank_0) == 1 and rank_0[0][0] == min(h[0] for h in survivors),
          f'the new rank 0 is the longest-serving survivor (first-round ranks of the survivors: '
          f'{sorted(h[0] for h in survivors)}, of the new rank 0: {[h[0] for h in rank_0]})')


def check_went_on(done, workers, work, size, recovery_bound, bound_why):
    """The job succeeded and ended on `size` workers with equal parameters and every sample
    once, training again within `recovery_bound` seconds of the fault."""
    check(done.returncode == 0, 'the job succeeds')
    check(f'round 2: {size} workers (the job re-formed)' in done.stdout, f'the job re-formed with {size} workers')
    check(recovery_seconds(work, workers, size) < recovery_bound, f'training resumed within {bound_why}')
    check_equal_ends(workers, size)
    check_every_sample_once(workers, 1536, 3)


SLOW_NOTICE = (3 + 5 + 10, 'the control timeout (3 s) + --elastic-timeout (5 s), and 10 s to spare')

TRAIN = ['--epochs', '3', '--samples', '1536', '--batch-size', '16', '--commit-every', '4']


def scenario_kill(args, work):
    base, base_logs = run_job(args, os.path.join(work, 'undisturbed'),
                              ['--min-np', '2', '--max-np', '3', '-np', '3', '-H', 'localhost:1,127.0.0.1:2'], TRAIN)
    check(base.returncode == 0, 'the undisturbed run succeeds')
    baseline = check_equal_ends(base_logs, 3)
    # With a process set of the even ranks made in every round (horovod#4021).
    done, workers = run_job(args, os.path.join(work, 'kill'),
                            ['--min-np', '2', '--max-np', '3', '-np', '3', '-H', 'localhost:1,127.0.0.1:2'],
                            TRAIN + ['--die-on', 'localhost:20', '--process-set'],
                            env={'KOLO_DYNAMIC_PROCESS_SETS': '1'})
    check(done.returncode == 0, 'the job with a killed worker succeeds')
    check('was killed by SIGKILL' in done.stdout and 'round 2: 2 workers (the job re-formed)' in done.stdout,
          'kolorun names the lost worker and re-forms the job with the 2 others')
    check(len(starts(workers)) == 3, 'no worker was started again: the survivors went on')
    check_oldest_is_rank_0(workers)
    check(recovery_seconds(os.path.join(work, 'kill'), workers, 2) < 30, 'training resumed within 30 s')
    accuracy = check_equal_ends(workers, 2)
    check(accuracy >= baseline - 0.05, f'accuracy {accuracy:.3f} within 0.05 of the undisturbed {baseline:.3f}')
    check_every_sample_once(workers, 1536, 3)


def run_with_hosts_changing(args, work, first, then, kolorun_flags, train_flags, env=None):
    """A job whose discovery script lists the hosts `first`, and `then` from 2 s on."""
    hosts = os.path.join(work, 'hosts')
    with open(hosts, 'w') as f:
        f.write(first)

    def change():
        with open(hosts, 'w') as f:
            f.write(then)
    return run_job(args, work, kolorun_flags + ['--host-discovery-script', f'cat {hosts}'],
                   TRAIN + ['--step-seconds', '0.02'] + train_flags, env=env, actions=[(2.0, change)])


def scenario_grow(args, work):
    done, workers = run_with_hosts_changing(args, work, 'localhost:2\n', 'localhost:2\n127.0.0.1:1\n',
                                            ['--min-np', '2', '--max-np', '3'], [])
    check(done.returncode == 0, 'the job succeeds')
    check('round 2: 3 workers (the job re-formed)' in done.stdout, 'the job grew to 3 workers')
    check_equal_ends(workers, 3)
    check_every_sample_once(workers, 1536, 3)


def scenario_broken_new_worker(args, work):
    done, workers = run_with_hosts_changing(args, work, 'localhost:1\n127.0.0.1:1\n', 'localhost:1\n127.0.0.1:2\n',
                                            ['--min-np', '1', '--max-np', '3'], ['--die-before-init', '127.0.0.1:1'],
                                            env={'KOLO_CONTROL_TIMEOUT_SECONDS': '3'})
    check(done.returncode == 0, 'the job succeeds')
    check('round 2: 3 workers (the job re-formed)' in done.stdout and 'round 3: 1 workers' in done.stdout,
          'the round with the broken worker failed, and the next went on without its host')
    check_equal_ends(workers, 1)
    check_every_sample_once(workers, 1536, 3)


def scenario_reorder(args, work):
    count = os.path.join(work, 'count')
    script = os.path.join(work, 'discover.sh')
    with open(script, 'w') as f:
        f.write(f'#!/bin/sh\nn=$(cat {count} 2>/dev/null || echo 0)\necho $((n + 1)) > {count}\n'
                'if [ $((n % 2)) = 0 ]; then printf "localhost:1\\n127.0.0.1:1\\n"; '
                'else printf "127.0.0.1:1\\nlocalhost:1\\n"; fi\n')
    os.chmod(script, 0o755)
    done, workers = run_job(args, work, ['--min-np', '2', '--max-np', '2', '--reset-limit', '0',
                                         '--host-discovery-script', script],
                            TRAIN + ['--step-seconds', '0.02'])
    check(int(open(count).read()) >= 3, 'the discovery script ran several times, in both orders')
    check(done.returncode == 0 and 'round 2' not in done.stdout, 'the job succeeds without a reset')
    check_equal_ends(workers, 2)


def scenario_reset_limit(args, work):
    done, _ = run_job(args, work, ['--min-np', '2', '-np', '3', '-H', 'localhost:1,127.0.0.1:2', '--reset-limit', '0'],
                      TRAIN + ['--die-on', 'localhost:10'])
    check(done.returncode != 0, f'the job fails (exit {done.returncode})')
    check('(--reset-limit 0) and would have to again; ending the job' in done.stdout,
          'kolorun says the reset limit ended it')
    check('killed by SIGTERM' not in done.stdout, 'the workers it stopped are not reported as failures')


def scenario_cooldown(args, work):
    done, workers = run_job(args, work, ['--min-np', '2', '--max-np', '3', '-np', '3', '-H', 'localhost:1,127.0.0.1:2',
                                         '--blacklist-cooldown-range', '1', '2'],
                            TRAIN + ['--die-on', 'localhost:10', '--step-seconds', '0.02'])
    check(done.returncode == 0, 'the job succeeds')
    check('host localhost blacklisted for' in done.stdout and 'host localhost is back after its blacklist cooldown'
          in done.stdout, 'the failed host is blacklisted, then back after its cooldown')
    check('round 3: 3 workers (the job re-formed)' in done.stdout, 'a new worker on the returned host: 3 again')
    # The returned host is listed first, but its new worker joins last: the longest-serving
    # workers keep the low ranks, and rank 0 (whose state everyone syncs to) is an old one.
    firsts = [next(r for r in records if 'round_start' in r) for records in workers.values()]
    newest = max(firsts, key=lambda r: r['round_start'])
    check(newest['size'] == 3 and newest['rank'] == 2,
          f"the worker that joined last has the last rank (rank {newest['rank']} of {newest['size']})")
    check_equal_ends(workers, 3)


def scenario_min_np(args, work):
    hosts = os.path.join(work, 'hosts')
    with open(hosts, 'w') as f:
        f.write('localhost:1\n127.0.0.1:1\n')

    def write(text):
        with open(hosts + '.new', 'w') as f:
            f.write(text)
        os.replace(hosts + '.new', hosts)
    done, workers = run_job(args, work, ['--min-np', '2', '--max-np', '2', '--host-discovery-script', f'cat {hosts}'],
                            TRAIN + ['--step-seconds', '0.02'],
                            actions=[(1.5, lambda: write('localhost:1\n')),
                                     (5.0, lambda: write('localhost:1\n127.0.0.1:1\n'))])
    check(done.returncode == 0, 'the job succeeds')
    check('1 usable worker slots, fewer than --min-np 2: waiting' in done.stdout, 'it waited for hosts below --min-np')
    check('round 2: 2 workers (the job re-formed)' in done.stdout, 'it re-formed with 2 workers once the host was back')
    check_equal_ends(workers, 2)
    check_every_sample_once(workers, 1536, 3)


def scenario_hung(args, work):
    done, workers = run_job(args, work, ['--min-np', '2', '-np', '3', '-H', 'localhost:1,127.0.0.1:2',
                                         '--elastic-timeout', '5'],
                            TRAIN + ['--stop-on', 'localhost:10'], env={'KOLO_CONTROL_TIMEOUT_SECONDS': '3'})
    check('did not re-join within --elastic-timeout: dropping it' in done.stdout, 'the hung worker is dropped')
    check_went_on(done, workers, work, 2, *SLOW_NOTICE)


def scenario_stall(args, work):
    done, workers = run_job(args, work, ['--min-np', '2', '-np', '3', '-H', 'localhost:1,127.0.0.1:2',
                                         '--elastic-timeout', '5'],
                            TRAIN + ['--stall-on', 'localhost:10'],
                            env={'KOLO_STALL_CHECK_TIME_SECONDS': '1', 'KOLO_STALL_SHUTDOWN_TIME_SECONDS': '3'})
    check('KOLO_STALL_SHUTDOWN_TIME_SECONDS' in done.stdout, 'rank 0 names the stall')
    check('did not re-join within --elastic-timeout: dropping it' in done.stdout, 'the stuck worker is dropped')
    check_went_on(done, workers, work, 2, 4 + 5 + 10,
                  'the stall time (3 s, checked each second) + --elastic-timeout (5 s), and 10 s to spare')


def run_epoch_log(args, work, kolorun_flags, script_flags, schedule=None, env=None):
    """epoch_log.py under kolorun; `schedule`: [hosts after 0 epochs, after 1, ...], the last
    for every later count: the discovery script counts the lines rank 0 has logged, as
    Horovod's integration tests do. Returns kolorun's result and the logged epochs."""
    logfile = os.path.join(work, f'epochs-{time.monotonic_ns()}.jsonl')
    flags = list(kolorun_flags)
    if schedule:
        script = os.path.join(work, f'discover-{time.monotonic_ns()}.sh')
        lines = ['#!/bin/sh', f'n=$(cat {logfile} 2>/dev/null | wc -l)']
        for count, hosts in enumerate(schedule[:-1]):
            lines.append(f'if [ "$n" -eq {count} ]; then echo "{chr(10).join(hosts)}"; exit 0; fi')
        lines.append(f'echo "{chr(10).join(schedule[-1])}"')
        with open(script, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        os.chmod(script, 0o755)
        flags += ['--host-discovery-script', script]
    command = [args.kolorun, *flags, '/usr/bin/python3', os.path.join(HERE, 'epoch_log.py'), '--logfile', logfile,
               *script_flags]
    start = time.monotonic()
    done = run_kolorun(command, dict(os.environ, PYTHONPATH=args.python_path, **(env or {})), 120)
    print(f'$ {" ".join(flags)} ... {" ".join(script_flags)} ({time.monotonic() - start:.1f} s, exit {done.returncode})')
    print(done.stdout)
    epochs = [json.loads(line) for line in open(logfile)] if os.path.exists(logfile) else []
    for e in epochs:
        print('  logged:', e)
    return done, epochs


def check_epochs(epochs, expected):
    """Each epoch's (start_rank, size, hostname, rounds) against `expected` (None: any)."""
    keys = ('start_rank', 'size', 'hostname', 'rounds')
    got = [tuple(e[k] for k in keys) for e in epochs]
    check(len(got) == len(expected) and all(all(w is None or w == g for w, g in zip(want, have))
                                            for want, have in zip(expected, got)),
          f'the epochs\' rank 0 (start rank, size, host, rounds): {got}, expected {expected}')


def scenario_horovod_grow_shrink(args, work):
    done, epochs = run_epoch_log(args, work, ['-np', '1', '--min-np', '1', '--max-np', '2'],
                                 ['--hosts-change-after', '0', '1'],
                                 schedule=[['localhost:1'], ['localhost:1', '127.0.0.1:1'], ['127.0.0.1:1']])
    check(done.returncode == 0, 'the job succeeds')
    # Round 2's rank 0 is the first worker, which had started alone: its optimizer reduces
    # once it has company. Round 3's is the worker started for 127.0.0.1 as rank 1.
    check_epochs(epochs, [(0, 1, 'localhost', 1), (0, 2, 'localhost', 2), (1, 1, '127.0.0.1', 3)])


def scenario_horovod_failures(args, work):
    hosts = ['-np', '2', '--min-np', '2', '-H', 'localhost:2,127.0.0.1:2']  # no --max-np: every slot
    done, epochs = run_epoch_log(args, work, hosts, ['--fail-at', '1:0'])
    check(done.returncode == 0, 'a failed program on one worker: the job goes on and succeeds')
    check('host localhost blacklisted' in done.stdout, "the failed worker's host is blacklisted")
    check_epochs(epochs, [(0, 4, 'localhost', 1), (2, 2, '127.0.0.1', 2), (2, 2, '127.0.0.1', 2)])
    # Failing where the sets' operations are: a rank shutting kolo down stops its sets
    # first, so the others' set operation may fail while the global set still runs.
    done, epochs = run_epoch_log(args, work, hosts, ['--fail-at', '1:2', '--set-op'],
                                 env={'KOLO_DYNAMIC_PROCESS_SETS': '1'})
    check(done.returncode == 0, 'a failed program in a process set: the job goes on and succeeds')
    check_epochs(epochs, [(0, 4, 'localhost', 1), (0, 2, 'localhost', 2), (0, 2, 'localhost', 2)])
    start = time.monotonic()
    done, epochs = run_epoch_log(args, work, hosts, ['--finish-first', '1'])
    check(done.returncode == 0 and 'the job has finished: worker 1 (on localhost) of round 1 exited 0' in done.stdout
          and 'round 2' not in done.stdout and time.monotonic() - start < 60,
          'a worker that finishes first ends the job: the others are told to leave, no round 2')
    # A second worker lost during the reset after the first failure, as the state is synced
    # (three hosts, so that a host survives: the machine's own name is the third, which
    # kolorun also starts here): the other resets again.
    third = socket.gethostname()
    if third not in ('localhost', '127.0.0.1'):
        done, epochs = run_epoch_log(args, work, ['-np', '3', '--min-np', '1', '-H', f'localhost,127.0.0.1,{third}'],
                                     ['--fail-at', '1:0', '--die-in-reset', '2'])
        check(done.returncode == 0 and 'round 3: 1 workers (the job re-formed)' in done.stdout,
              'a worker lost while the state is synced: the other resets again, and the job succeeds')
        check_epochs(epochs, [(0, 3, 'localhost', 1), (1, 1, '127.0.0.1', 2), (1, 1, '127.0.0.1', 2)])
    done, _ = run_epoch_log(args, work, [*hosts, '--elastic-timeout', '1'], ['--final-seconds', '3'])
    check(done.returncode == 0 and 'rank 0: final save done' in done.stdout,
          'the others ended, rank 0 saves alone for longer than --elastic-timeout: kolorun waits for it')
    for fail_at, why in [('1:0,1,2,3', 'every worker of round 1 failed; ending the job'),
                         ('1:0,2', 'every host of round 1 is blacklisted for good; ending the job')]:
        start = time.monotonic()
        done, _ = run_epoch_log(args, work, hosts, ['--fail-at', fail_at])
        check(done.returncode != 0 and why in done.stdout and time.monotonic() - start < 60,
              f'--fail-at {fail_at}: the job fails at once, saying "{why}"')


def scenario_cut(args, work):
    if not args.netns or not os.path.exists(os.path.join(args.netns, 'launch')):
        print('SKIP: the cut link needs the namespace hosts of tools/cluster (--netns STATE)')
        sys.exit(77)
    tag = next(line.split('=', 1)[1].strip() for line in open(os.path.join(args.netns, 'env.sh'))
               if line.startswith('KOLO_TOOL_NETNS_TAG='))
    log_dir = os.path.join(work, 'logs')
    link = ['ip', '-n', f'{tag}-node1', 'link', 'set', 'eth0']

    def cut_once_training():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any('indices' in r for records in read_logs(log_dir).values() for r in records):
                break
            time.sleep(0.1)
        with open(os.path.join(log_dir, 'fault-cut'), 'w') as f:
            f.write(str(time.time()))
        subprocess.run(link + ['down'], check=True)
    try:
        done, workers = run_job(args, work, ['--min-np', '1', '-np', '3', '-H', 'node0:1,node1:2',
                                             '--network-interface', '10.77.0.0/24', '--elastic-timeout', '5'],
                                TRAIN + ['--step-seconds', '0.02'], env={'KOLO_CONTROL_TIMEOUT_SECONDS': '3'},
                                actions=[(0.5, cut_once_training)], prefix=[os.path.join(args.netns, 'launch')])
    finally:
        subprocess.run(link + ['up'], check=False)
    check('did not re-join within --elastic-timeout: dropping it' in done.stdout, "node1's workers are dropped")
    check_went_on(done, workers, work, 1, *SLOW_NOTICE)


def scenario_slurm(args, work):
    conf = args.slurm and os.path.join(args.slurm, 'slurm.conf')
    if not conf or not os.path.exists(conf):
        print('SKIP: the Slurm case needs the cluster of tools/cluster (--slurm STATE)')
        sys.exit(77)
    done, workers = run_job(args, work, ['--min-np', '1', '--max-np', '2', '-np', '2', '-H', 'node0:1,node1:1'],
                            TRAIN + ['--die-on', 'node1:10'], env={'SLURM_CONF': conf},
                            prefix=['salloc', '-N', '2', '-n', '4'])
    check('srun: error: node1: task 0: Killed' in done.stdout, "node1's worker ran as an srun step, and was killed")
    check(len(starts(workers)) == 2, 'no worker was started again')
    check_went_on(done, workers, work, 1, 30, '30 s')


SCENARIOS = {'kill': scenario_kill, 'grow': scenario_grow, 'broken-new-worker': scenario_broken_new_worker,
             'reorder': scenario_reorder,
             'reset-limit': scenario_reset_limit,
             'cooldown': scenario_cooldown, 'min-np': scenario_min_np, 'hung': scenario_hung,
             'stall': scenario_stall, 'horovod-grow-shrink': scenario_horovod_grow_shrink,
             'horovod-failures': scenario_horovod_failures, 'cut': scenario_cut, 'slurm': scenario_slurm}

if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--kolorun', required=True)
    parser.add_argument('--python-path', required=True)
    parser.add_argument('--netns', help='the state folder of tools/cluster/netns-up.sh (cut)')
    parser.add_argument('--slurm', help='the state folder of tools/cluster/slurm-up.sh (slurm)')
    parser.add_argument('scenario', choices=sorted(SCENARIOS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix='kolo-elastic-') as work:
        SCENARIOS[args.scenario](args, work)
