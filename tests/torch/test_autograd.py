"""The gradients of kolo.torch's differentiable collectives, as Horovod 0.28 defines them.
Each rank backpropagates its own gradient (seeded by rank), so every rank can compute what
each input's gradient must be."""
import pytest
import torch

import kolo.torch as hvd
from helpers import all_inputs, assert_close, rank_input


def leaf(shape, dtype=torch.float64, seed=0):
    return rank_input(hvd.rank(), shape, dtype, seed).requires_grad_()


def grad_of(rank, shape, seed=100):
    """The gradient rank `rank` backpropagates into a collective's output."""
    return rank_input(rank, shape, torch.float64, seed)


def mean(tensors):
    return sum(tensors) / len(tensors)


@pytest.mark.parametrize('op, scale', [(hvd.Sum, 1.0), (hvd.Average, 1.0 / hvd.size()), (hvd.Sum, 6.0)],
                         ids=['sum', 'average', 'sum_scaled'])
def test_allreduce_gradient_is_the_allreduce_of_the_gradients(op, scale):
    factors = dict(prescale_factor=2.0, postscale_factor=3.0) if scale == 6.0 else {}
    x = leaf([3, 2])
    hvd.allreduce(x, op=op, **factors).backward(grad_of(hvd.rank(), [3, 2]))
    assert_close(x.grad, sum(grad_of(r, [3, 2]) for r in range(hvd.size())) * scale)


def test_allreduce_with_fp16_compression_is_differentiable():
    x = leaf([4], torch.float32)
    hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16).backward(torch.ones(4))
    assert_close(x.grad, torch.full((4,), float(hvd.size())))


def test_grouped_allreduce_gradients():
    xs = [leaf([2]), leaf([3, 1], seed=1)]
    ys = hvd.grouped_allreduce(xs, op=hvd.Sum)
    (ys[0] * 2).sum().backward(retain_graph=True)
    assert_close(xs[0].grad, torch.full((2,), 2.0 * hvd.size()))
    assert_close(xs[1].grad, torch.zeros(3, 1, dtype=torch.float64))  # an output not used


def test_allgather_gradient_is_this_ranks_rows_of_the_averaged_gradient():
    n, r = hvd.size(), hvd.rank()
    x = leaf([r + 1, 2])
    rows = sum(range(1, n + 1))
    hvd.allgather(x).backward(grad_of(r, [rows, 2]))
    start = sum(range(1, r + 1))
    assert_close(x.grad, mean([grad_of(s, [rows, 2]) for s in range(n)])[start:start + r + 1])


def test_grouped_allgather_gradients():
    n, r = hvd.size(), hvd.rank()
    xs = [leaf([r + 1, 2]), leaf([2], seed=1)]
    ys = hvd.grouped_allgather(xs)
    rows = sum(range(1, n + 1))
    torch.autograd.backward(ys, [grad_of(r, [rows, 2]), grad_of(r, [2 * n], seed=7)])
    start = sum(range(1, r + 1))
    assert_close(xs[0].grad, mean([grad_of(s, [rows, 2]) for s in range(n)])[start:start + r + 1])
    assert_close(xs[1].grad, mean([grad_of(s, [2 * n], seed=7) for s in range(n)])[2 * r:2 * r + 2])


def test_broadcast_gradient_is_the_averaged_gradient_on_the_root_and_zero_elsewhere():
    root = hvd.size() - 1
    x = leaf([5])
    hvd.broadcast(x, root).backward(grad_of(hvd.rank(), [5]))
    expected = mean([grad_of(s, [5]) for s in range(hvd.size())])
    assert_close(x.grad, expected if hvd.rank() == root else torch.zeros_like(expected))


def test_alltoall_gradient_is_the_reverse_alltoall():
    n, r = hvd.size(), hvd.rank()
    splits_of = [[(s + d) % 3 + 1 for d in range(n)] for s in range(n)]  # rank s sends splits_of[s][d] to d
    x = leaf([sum(splits_of[r]), 2])
    output, received = hvd.alltoall(x, splits=splits_of[r])
    assert received.tolist() == [splits_of[s][r] for s in range(n)]
    output.backward(grad_of(r, [output.shape[0], 2]))
    # Row block d of x went to rank d, where it sat after the blocks of ranks < r.
    expected = []
    for d in range(n):
        received_by_d = [splits_of[s][d] for s in range(n)]
        start = sum(received_by_d[:r])
        expected.append(grad_of(d, [sum(received_by_d), 2])[start:start + splits_of[r][d]])
    assert_close(x.grad, torch.cat(expected))


def test_alltoall_without_splits_is_differentiable():
    n = hvd.size()
    x = leaf([2 * n])
    hvd.alltoall(x).backward(torch.full((2 * n,), 3.0, dtype=torch.float64))
    assert_close(x.grad, torch.full((2 * n,), 3.0, dtype=torch.float64))


@pytest.mark.parametrize('op', [hvd.Sum, hvd.Average], ids=['sum', 'average'])
def test_reducescatter_gradient_is_the_allgather_of_the_gradients(op):
    n, r = hvd.size(), hvd.rank()
    x = leaf([2 * n, 3])
    hvd.reducescatter(x, op=op).backward(grad_of(r, [2, 3]))
    gathered = torch.cat([grad_of(s, [2, 3]) for s in range(n)])
    # Horovod's: Sum's gradient is the gathered gradient times the set's size, Average's the
    # gathered gradient.
    assert_close(x.grad, gathered * (n if op == hvd.Sum else 1))


def test_grouped_reducescatter_gradients_with_factors():
    n, r = hvd.size(), hvd.rank()
    xs = [leaf([n, 2]), leaf([2 * n], seed=1)]
    ys = hvd.grouped_reducescatter(xs, op=hvd.Average, prescale_factor=0.5, postscale_factor=4.0)
    torch.autograd.backward(ys, [grad_of(r, [1, 2]), grad_of(r, [2], seed=3)])
    assert_close(xs[0].grad, torch.cat([grad_of(s, [1, 2]) for s in range(n)]) * 2.0)
    assert_close(xs[1].grad, torch.cat([grad_of(s, [2], seed=3) for s in range(n)]) * 2.0)


def test_forward_values_of_differentiable_calls_match_the_plain_ones():
    x = leaf([3])
    assert_close(hvd.allreduce(x, op=hvd.Sum).detach(), sum(all_inputs([3], torch.float64)))
