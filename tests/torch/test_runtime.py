"""kolo.torch's lifetime, queries, process sets (dynamic: conftest.py turns them on), join,
barrier and timeline, as horovod.torch 0.28 has them. Static sets, made by init(), are
static_process_sets.py's: a pytest session starts kolo once."""
import time

import pytest
import torch

import kolo.torch as hvd
from helpers import assert_close, rank_input

needs_two = pytest.mark.skipif(hvd.size() < 2, reason='a proper subset of the ranks needs two or more')

# horovod.torch 0.28's names that kolo.torch covers (its elastic module is not among them).
HOROVOD_NAMES = '''
    allreduce allreduce_async allreduce_ allreduce_async_ grouped_allreduce grouped_allreduce_async
    grouped_allreduce_ grouped_allreduce_async_ sparse_allreduce_async allgather allgather_async
    grouped_allgather grouped_allgather_async broadcast broadcast_async broadcast_ broadcast_async_
    alltoall alltoall_async reducescatter reducescatter_async grouped_reducescatter
    grouped_reducescatter_async join barrier poll synchronize init shutdown is_initialized
    start_timeline stop_timeline size local_size cross_size rank local_rank cross_rank is_homogeneous
    mpi_threads_supported mpi_enabled mpi_built gloo_enabled gloo_built nccl_built ddl_built ccl_built
    cuda_built rocm_built ProcessSet global_process_set add_process_set remove_process_set Average Sum
    Adasum Min Max Product Compression HorovodInternalError DistributedOptimizer SyncBatchNorm
    allgather_object broadcast_object broadcast_optimizer_state broadcast_parameters'''.split()


def test_horovods_names_are_there():
    assert [name for name in HOROVOD_NAMES if not hasattr(hvd, name)] == []


def test_queries():
    assert hvd.is_initialized()
    hvd.init()  # a second init does nothing
    # Over MPI (mpirun, kolorun) or over Gloo (kolorun --gloo): one of the two, as Horovod says.
    over_gloo = hvd.gloo_enabled()
    assert hvd.mpi_built() and hvd.mpi_enabled() == (not over_gloo)
    if over_gloo:
        with pytest.raises(ValueError, match='runs over Gloo'):  # as Horovod: "MPI is not enabled"
            hvd.mpi_threads_supported()
    else:
        assert hvd.mpi_threads_supported()
    assert not any(f() for f in (hvd.ddl_built, hvd.ccl_built, hvd.rocm_built))
    assert type(hvd.gloo_built()) is bool  # the Gloo transport serves kolorun --gloo and elastic jobs
    # Horovod's types: every query a bool, but nccl_built() the NCCL version code (0 without NCCL).
    assert type(hvd.nccl_built()) is int and type(hvd.cuda_built()) is bool
    assert all(type(f()) is bool for f in (hvd.mpi_built, hvd.mpi_enabled, hvd.gloo_built, hvd.gloo_enabled,
                                            hvd.ddl_built, hvd.ccl_built, hvd.rocm_built, hvd.is_homogeneous))
    # One machine: every rank is local.
    assert hvd.is_homogeneous()
    assert (hvd.local_rank(), hvd.local_size()) == (hvd.rank(), hvd.size())
    assert (hvd.cross_rank(), hvd.cross_size()) == (0, 1)
    every = hvd.global_process_set
    assert every.process_set_id == 0 and every.ranks == list(range(hvd.size()))
    assert (every.size(), every.rank(), every.included()) == (hvd.size(), hvd.rank(), True)


@needs_two
def test_dynamic_process_sets():
    n, r = hvd.size(), hvd.rank()
    evens = hvd.add_process_set([i for i in range(n) if i % 2 == 0])
    odds = hvd.add_process_set(hvd.ProcessSet([i for i in range(n) if i % 2 == 1]))
    try:
        assert 0 not in (evens.process_set_id, odds.process_set_id)
        assert evens.process_set_id != odds.process_set_id
        mine, other = (evens, odds) if r % 2 == 0 else (odds, evens)
        assert mine.included() and not other.included()
        assert (mine.size(), mine.rank()) == (len(mine.ranks), mine.ranks.index(r))
        with pytest.raises(ValueError, match='duplicate'):
            hvd.add_process_set(list(mine.ranks))

        inputs = {s: rank_input(s, [4], torch.float64) for s in mine.ranks}
        # The same name in both sets: names are per set.
        assert_close(hvd.allreduce(inputs[r], name='in_set', op=hvd.Sum, process_set=mine), sum(inputs.values()))
        assert_close(hvd.allgather(inputs[r].view(1, 4), process_set=mine),
                     torch.stack([inputs[s] for s in mine.ranks]))
        root = mine.ranks[-1]
        assert_close(hvd.broadcast(inputs[r], root, process_set=mine), inputs[root])
        k = mine.size()
        scattered = hvd.reducescatter(torch.arange(2.0 * k) + r, op=hvd.Sum, process_set=mine)
        assert_close(scattered, sum(torch.arange(2.0 * k) + s for s in mine.ranks)[2 * mine.rank():2 * mine.rank() + 2])
        received, splits = hvd.alltoall(torch.full((k,), float(r)), splits=[1] * k, process_set=mine)
        assert_close(received, torch.tensor([float(s) for s in mine.ranks]))
        hvd.barrier(process_set=mine)

        x = rank_input(r, [2, 3], torch.float64).requires_grad_()
        hvd.allgather(x, process_set=mine).backward(torch.ones(2 * k, 3, dtype=torch.float64))
        assert_close(x.grad, torch.ones(2, 3, dtype=torch.float64))

        with pytest.raises(hvd.InvalidArgumentError):
            hvd.allreduce(torch.ones(1), process_set=other)
    finally:
        assert hvd.remove_process_set(evens) and hvd.remove_process_set(odds)
    assert evens.process_set_id is None and evens.size() is None
    assert not hvd.remove_process_set(hvd.global_process_set)
    assert not hvd.remove_process_set(evens)
    with pytest.raises(ValueError, match='no id'):
        hvd.allreduce(torch.ones(1), process_set=evens)


def test_join_returns_the_last_rank_and_the_others_reduce_with_its_zeros():
    n, r = hvd.size(), hvd.rank()
    if r == 0 and n > 1:
        last = hvd.join()
    else:
        value = torch.full((3,), float(r + 1))
        summed = hvd.allreduce(value, op=hvd.Sum, name='join.sum')
        averaged = hvd.allreduce(value, op=hvd.Average, name='join.average')
        last = hvd.join()
        total = float(sum(s + 1 for s in range(n) if s != 0 or n == 1))
        assert_close(summed, torch.full((3,), total))
        assert_close(averaged, torch.full((3,), total / n))  # still divided by the set's size
    lasts = hvd.allgather(torch.tensor([last]))
    assert len(set(lasts.tolist())) == 1
    assert last in (range(1, n) if n > 1 else [0])


def test_barrier():
    hvd.barrier()
    hvd.barrier(process_set=hvd.global_process_set)


def test_timeline_reaches_the_file_while_kolo_idles(tmp_path):
    """Horovod's test_timeline: a program may read the timeline while it is open; what ran is
    there once kolo idles, under Horovod's names."""
    path = tmp_path / 'idle_timeline.json'
    hvd.start_timeline(str(path))
    hvd.allreduce(torch.ones(3), name='timeline.idle')
    time.sleep(0.2)
    text = path.read_text() if hvd.rank() == 0 else ''
    hvd.stop_timeline()
    if hvd.rank() == 0:
        assert 'allreduce.timeline.idle' in text and 'NEGOTIATE_ALLREDUCE' in text, text[-2000:]


def test_timeline_is_written_by_rank_0(tmp_path):
    path = tmp_path / 'timeline.json'
    hvd.start_timeline(str(path), mark_cycles=True)
    hvd.allreduce(torch.ones(2), name='timeline.probe')
    hvd.stop_timeline()
    if hvd.rank() == 0:
        assert 'timeline.probe' in path.read_text()
    else:
        assert not path.exists()
