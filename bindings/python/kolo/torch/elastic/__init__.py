"""kolo.torch.elastic: horovod.torch.elastic on kolo. A script run by kolorun with --min-np,
--max-np or --host-discovery-script goes on when workers are lost, and grows when hosts
appear (docs/elastic.md):

    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        while state.epoch < epochs:
            for state.batch, (data, target) in enumerate(loader):   # sampler=ElasticSampler
                ...
                state.sampler.record_batch(state.batch, batch_size)
                if state.batch % 10 == 0:
                    state.commit()
            state.epoch += 1                       # epoch and sampler order change together,
            state.batch = 0
            state.sampler.set_epoch(state.epoch)
            state.commit()                         # in one commit

    train(state)
"""
import functools
import sys

from kolo.torch import _C
from kolo.torch.elastic.sampler import ElasticSampler
from kolo.torch.elastic.state import HostsUpdatedInterrupt, ObjectState, State, TorchState
from kolo.torch.mpi_ops import KoloError, init, shutdown

__all__ = ['run', 'State', 'ObjectState', 'TorchState', 'ElasticSampler', 'HostsUpdatedInterrupt']


def _reset():
    shutdown()
    try:
        init()
    except KoloError as e:
        if e.code == 'Aborted':  # kolorun says this worker is no longer part of the job
            print(f'kolo: this worker leaves the job: {e}', file=sys.stderr, flush=True)
            sys.exit(0)
        raise


def run(func):
    """Runs `func(state, ...)` until it returns, across lost workers and host changes:
    state.sync() first; on a failed collective (KoloError, Horovod's HorovodInternalError,
    with code "CommFailure": a lost worker; "Stalled": one stuck in its own code; "Aborted":
    one whose program ended or failed, and shut kolo down as it exited) state.restore(),
    then a reset; on HostsUpdatedInterrupt (raised by state.commit() on every rank at once)
    a reset. A reset re-forms kolo with the job's workers of the next round (shutdown(),
    init()), calls the state's reset callbacks, and syncs the state from the new rank 0, the
    longest-serving worker; a worker that kolorun tells to leave (its host removed, or the
    job finished) exits with 0. Outside an elastic job, func runs once and errors
    propagate."""
    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        reset_required = False
        failed_resets = 0  # in a row: with kolorun gone, every reset would wait and fail
        while True:
            if reset_required:
                try:
                    _reset()
                    state.on_reset()
                    failed_resets = 0
                except KoloError as e:
                    # A worker of the new round never arrived (its host broken): that round is
                    # lost as a worker is, and the next reset asks for a later one. The state
                    # was restored before this reset.
                    failed_resets += 1
                    if e.code != 'CommFailure' or not _C.is_elastic() or failed_resets > 3:
                        raise
                    continue
            try:
                state.sync()  # inside: a worker lost while the state is synced is lost as any other
                return func(state, *args, **kwargs)
            except KoloError as e:
                lost_worker = e.code == 'CommFailure'
                # Stalled: a worker stuck in its own code (not a loader's timeout); Aborted:
                # one that left the round (its program ended or failed, shutting kolo down).
                stopped_by_others = e.code in ('Stalled', 'Aborted') and _C.stopped_by_other_ranks()
                if not (lost_worker or stopped_by_others) or not _C.is_elastic():
                    raise
                state.restore()
            except HostsUpdatedInterrupt:
                if not _C.is_elastic():
                    raise
            reset_required = True
    return wrapper
