"""The job split into two dynamic process sets, its even ranks and its odd ranks, for the
tests of DistributedOptimizer, the broadcasts and SyncBatchNorm over a set. Every rank adds
both, in the same order, and removes them afterwards."""
from contextlib import contextmanager

import pytest

import kolo.torch as hvd


@contextmanager
def evens_and_odds():
    """Yields (this rank's set, the evens' set); skips the test on one rank (nothing to split)."""
    if hvd.size() == 1:
        pytest.skip('needs two ranks to split into two sets')
    n = hvd.size()
    evens = hvd.add_process_set([r for r in range(n) if r % 2 == 0])
    odds = hvd.add_process_set([r for r in range(n) if r % 2 == 1])
    try:
        yield (evens if hvd.rank() % 2 == 0 else odds), evens
    finally:
        hvd.remove_process_set(evens)
        hvd.remove_process_set(odds)
