"""What a stall costs the ranks that wait: the CPU each rank's process uses (all its threads:
kolo's background thread, MPI's progress, the program) while every rank waits on a tensor no
other rank submits, against the same ranks idle. Run under mpirun or kolorun, 2 ranks or more:

    PYTHONPATH=build/python mpirun -np 2 /usr/bin/python3 bench/torch/stall_cpu.py [--seconds 5]

Each rank submits its own name, so nothing can match; the program polls its handle 20 times
a second (as a training loop's own work would) and reads its process's CPU time over the
window. Then each rank submits the others' names and the stall ends cleanly."""
import argparse
import platform
import time

import torch

import kolo.torch as hvd


def cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            return next(line.split(':', 1)[1].strip() for line in f if line.startswith('model name'))
    except (OSError, StopIteration):
        return platform.processor() or 'unknown'


def busy_fraction(seconds, waiting_on=None):
    """The process's CPU seconds per wall second over `seconds`, polling `waiting_on`."""
    cpu0, wall0 = time.process_time(), time.monotonic()
    while time.monotonic() - wall0 < seconds:
        if waiting_on is not None and hvd.poll(waiting_on):
            raise SystemExit('the stalled tensor completed: it should wait for ever')
        time.sleep(0.05)
    return (time.process_time() - cpu0) / (time.monotonic() - wall0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=5.0, help='length of each measured window')
    args = parser.parse_args()
    hvd.init()
    n, r = hvd.size(), hvd.rank()
    idle = busy_fraction(args.seconds)

    mine = torch.ones(1000)
    handle = hvd.allreduce_async(mine, name='stall.%d' % r, op=hvd.Sum)
    time.sleep(0.5)  # past kolo's first, eager cycles
    stalled = busy_fraction(args.seconds, waiting_on=handle)

    # End the stall: every rank submits every other rank's name too.
    others = [hvd.allreduce_async(torch.ones(1000), name='stall.%d' % q, op=hvd.Sum) for q in range(n) if q != r]
    for h in [handle] + others:
        assert torch.equal(hvd.synchronize(h), torch.full([1000], float(n)))

    rows = hvd.allgather_object((r, idle, stalled))
    if r == 0:
        print('CPU: %s; %d ranks; %.1f s windows; CPU time per wall second of each rank\'s process' %
              (cpu_model(), n, args.seconds))
        print('| rank | idle | stalled |')
        print('|---|---|---|')
        for rank, idle_share, stalled_share in rows:
            print('| %d | %.1f %% | %.1f %% |' % (rank, 100 * idle_share, 100 * stalled_share))


if __name__ == '__main__':
    main()
