"""An operation still pending when kolo shuts down fails, and synchronize() says so, as
Horovod's does ("Horovod has been shut down"): rank 0 submits an allreduce that rank 1 never
submits, then both shut down. (Until 2026-11-30 shutdown() forgot the handles, and
synchronize() returned None, the tensor left unreduced.) A script of its own: kolo stops for
good in it."""
import time

import torch

import kolo.torch as hvd

hvd.init()
rank = hvd.rank()
if rank == 0:
    tensor = torch.ones(3)
    handle = hvd.allreduce_async_(tensor, name='never.submitted.by.rank.1', op=hvd.Sum)
    time.sleep(0.5)  # rank 1's shutdown may fail it before rank 0's own: the same error
hvd.shutdown()
if rank == 0:
    try:
        result = hvd.synchronize(handle)
        raise AssertionError(f'synchronize() after shutdown returned {result!r} instead of raising')
    except hvd.HorovodInternalError as e:
        assert e.code == 'Aborted', e
        print(f'rank 0: the pending operation failed at shutdown: {e}', flush=True)
print(f'rank {rank}: OK', flush=True)
