"""What Horovod 0.28's own test suite (test/parallel/test_torch.py) asks of kolo.torch beyond
the API's shape: integer scaling as Horovod computes it, join's return value across joins, a
collective that fails on some ranks only leaving the job able to go on, and object
collectives whose names agree whatever ran before them. Written for kolo, each against an
independent reference."""
import math

import pytest
import torch

import kolo.torch as hvd
from helpers import all_inputs, assert_close, rank_input

needs_two = pytest.mark.skipif(hvd.size() < 2, reason='a rank that joins first needs another that does not')

INTEGER_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def trunc(x):
    return float(math.trunc(x))


def scaled_sum(inputs, pre=1.0, post=1.0, divisor=1):
    """Horovod's integer rule, element by element: each rank's input times the prescale,
    truncated; the sum; times one factor, postscale / divisor (Horovod folds an average into
    the postscale), truncated."""
    columns = zip(*[t.flatten().tolist() for t in inputs])
    return [trunc(sum(trunc(x * pre) for x in column) * (post / divisor)) for column in columns]


@pytest.mark.parametrize('dtype', INTEGER_DTYPES, ids=str)
def test_allreduce_scales_integers_in_double_and_truncates(dtype):
    low = 0 if dtype == torch.uint8 else -9
    mine = rank_input(hvd.rank(), [2, 5], dtype, low=low, high=10)
    everyone = all_inputs([2, 5], dtype, low=low, high=10)
    for pre, post in [(0.37, 1.0), (1.0, 0.37), (2.5, 0.5)]:
        result = hvd.allreduce(mine, op=hvd.Sum, prescale_factor=pre, postscale_factor=post)
        assert result.dtype == dtype
        assert result.flatten().tolist() == scaled_sum(everyone, pre, post), (pre, post)
    average = hvd.allreduce(mine, op=hvd.Average, postscale_factor=3.0)
    assert average.flatten().tolist() == scaled_sum(everyone, post=3.0, divisor=hvd.size())


def test_reducescatter_scales_integers_in_double_and_truncates():
    n = hvd.size()
    mine = rank_input(hvd.rank(), [2 * n, 3], torch.int32)
    everyone = all_inputs([2 * n, 3], torch.int32)
    for op, pre, post, divisor in [(hvd.Sum, 0.37, 1.0, 1), (hvd.Sum, 1.0, 0.37, 1), (hvd.Average, 1.0, 1.0, n)]:
        result = hvd.reducescatter(mine, op=op, prescale_factor=pre, postscale_factor=post)
        whole = torch.tensor(scaled_sum(everyone, pre, post, divisor)).view(2 * n, 3)
        assert_close(result, whole[2 * hvd.rank():2 * hvd.rank() + 2].to(torch.int32))
    grouped = hvd.grouped_reducescatter([mine, mine.to(torch.int16)], op=hvd.Sum, prescale_factor=0.5)
    want = torch.tensor(scaled_sum(everyone, 0.5)).view(2 * n, 3)[2 * hvd.rank():2 * hvd.rank() + 2]
    assert_close(grouped[0], want.to(torch.int32))
    assert_close(grouped[1], want.to(torch.int16))


def test_int16_in_every_collective():
    n, r = hvd.size(), hvd.rank()
    mine = torch.full([2, 3], r - 300, dtype=torch.int16)   # beyond int8
    assert_close(hvd.allreduce(mine, op=hvd.Sum), torch.full([2, 3], sum(q - 300 for q in range(n)),
                                                             dtype=torch.int16))
    assert_close(hvd.allgather(mine), torch.cat([torch.full([2, 3], q - 300, dtype=torch.int16) for q in range(n)]))
    assert_close(hvd.broadcast(mine, n - 1), torch.full([2, 3], n - 1 - 300, dtype=torch.int16))
    out = hvd.alltoall(torch.arange(n, dtype=torch.int16) + 1000 * r)
    assert_close(out, torch.tensor([1000 * q + r for q in range(n)], dtype=torch.int16))


@needs_two
def test_join_returns_the_last_rank_to_join_after_cached_allreduces():
    # As Horovod's test_horovod_join_allreduce: every rank joins first once; between joins
    # only allreduces the response cache already holds run.
    n = hvd.size()
    tensor = torch.ones(5)
    for first in range(n):
        hvd.synchronize(hvd.allreduce_async(tensor, name='parity.join.cached', op=hvd.Sum))
        if hvd.rank() == first:
            last = hvd.join()
        else:
            summed = hvd.allreduce(tensor, name='parity.join.cached', op=hvd.Sum)
            assert_close(summed, torch.full([5], float(n - 1)))
            last = hvd.join()
        assert last != first
        assert hvd.allgather_object(last) == [last] * n


@needs_two
def test_a_collective_that_fails_on_some_ranks_leaves_the_job_able_to_go_on():
    # As Horovod's test_horovod_join_allgather: an allgather while a rank has joined fails on
    # the others; then an unnamed object collective (whose name must agree although only
    # some ranks ran the allgather) and unnamed tensor collectives run as usual.
    n = hvd.size()
    for first in range(n):
        if hvd.rank() == first:
            last = hvd.join()
        else:
            with pytest.raises(RuntimeError, match='joined'):
                hvd.allgather(torch.zeros(3, 2))
            last = hvd.join()
        assert last != first
        assert hvd.allgather_object(last) == [last] * n
        root_says = hvd.broadcast_object({'round': first} if hvd.rank() == 0 else None, root_rank=0)
        assert root_says == {'round': first}
    assert_close(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full([3], float(n)))


def test_names_are_horovods_op_dot_name_and_empty_is_unnamed():
    """Horovod names an operation '<op>.<name>' (its GetOpName), so one name may serve two
    different collectives at once; '' is unnamed, as None is."""
    t = rank_input(hvd.rank(), (4,))
    both = [hvd.allreduce_async(t, name='shared.name', op=hvd.Sum), hvd.allgather_async(t, name='shared.name')]
    summed, gathered = (hvd.synchronize(h) for h in both)
    inputs = all_inputs((4,))
    assert_close(summed, sum(inputs))
    assert_close(gathered, torch.cat(inputs))
    unnamed = [hvd.allreduce_async(t, name='', op=hvd.Sum) for _ in range(2)]  # two in flight at once
    for h in unnamed:
        assert_close(hvd.synchronize(h), sum(inputs))
    first = hvd.allreduce_async(t, name='twice', op=hvd.Sum)
    with pytest.raises(ValueError, match='allreduce.twice'):  # the same op and name twice is still refused
        hvd.allreduce_async(t, name='twice', op=hvd.Sum)
    assert_close(hvd.synchronize(first), sum(inputs))
