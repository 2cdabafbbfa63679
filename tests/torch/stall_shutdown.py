"""A stall shuts kolo down on every rank, as Horovod's HOROVOD_STALL_SHUTDOWN_TIME_SECONDS
does, and the job ends as the program chooses: the shape of Horovod's own
test/integration/test_stall.py (rank r sleeps before the allreduce that rank 0 is already
waiting in), with its checks made explicit. Rank 0's allreduce fails once the others have
left it unsubmitted for the stall time; a rank that arrives after that fails at once,
saying why; every rank then calls shutdown() and exits 0. A script of its own: kolo stops
for good in it.

With --stuck, rank 1 never comes back to kolo (stuck in its own code): rank 0 ends cleanly,
and rank 1 ends itself twice KOLO_CONTROL_TIMEOUT_SECONDS after the stall, with kolo's
FATAL line and exit code 70 (its test looks for that line)."""
import os
import sys
import time

import torch

# Set before init(), under Horovod's names as in its test (kolo's own, which the test
# environment may set, would take precedence).
for setting, seconds in (('STALL_CHECK_TIME_SECONDS', '1'), ('STALL_SHUTDOWN_TIME_SECONDS', '2')):
    os.environ.pop('KOLO_' + setting, None)
    os.environ['HOROVOD_' + setting] = seconds
stuck = '--stuck' in sys.argv
if stuck:
    os.environ['KOLO_CONTROL_TIMEOUT_SECONDS'] = '2'

import kolo.torch as hvd  # noqa: E402
from kolo.torch import _C  # noqa: E402

hvd.init()
rank = hvd.rank()
if stuck and rank == 1:
    time.sleep(120)  # never back to kolo: its own deadline ends it long before
    raise SystemExit('FAILED: rank 1 was not ended by kolo after the stall')
# Rank 0 waits in the allreduce; the others come well after the stall (2 s, checked each
# second) has failed it.
time.sleep(6 * rank)
started = time.monotonic()
try:
    hvd.allreduce(torch.tensor([1.0]), name='late')
    raise AssertionError(f'rank {rank}: the allreduce succeeded although the stall shut kolo down')
except hvd.HorovodInternalError as e:
    took = time.monotonic() - started
    assert e.code == 'Stalled', e
    assert _C.stopped_by_other_ranks(), 'kolo.torch._C.stopped_by_other_ranks() should say that kolo stopped'
    if rank == 0:
        late = ', '.join(str(r) for r in range(1, hvd.size()))
        assert f"tensor 'allreduce.late' was not submitted by rank(s) {late}" in str(e), e
        assert 1.5 < took < 10, f'rank 0 failed after {took:.1f} s; the stall time is 2 s'
    else:
        assert 'kolo has shut down on every rank after a stall' in str(e), e
        assert took < 1, f'rank {rank} failed after {took:.1f} s, not at once'
hvd.shutdown()
print(f'rank {rank}: the stall shut kolo down; it ended cleanly', flush=True)
