"""kolo.torch's collectives against torch: every rank's input is known to every rank
(helpers.py), so each checks its result against the one computed in one process."""
import warnings

import pytest
import torch

import kolo.torch as hvd
from helpers import DTYPES, FLOAT_DTYPES, all_inputs, assert_close, rank_input

OPS = [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]


def reduced(inputs, op):
    """What reducing `inputs` with `op` gives, in the inputs' dtype (Average of integers
    truncates, as Horovod's)."""
    dtype = inputs[0].dtype
    stacked = torch.stack([t.double() for t in inputs])
    if op == hvd.Average:
        if dtype.is_floating_point:
            return (stacked.sum(0) / len(inputs)).to(dtype)
        return torch.div(stacked.sum(0).long(), len(inputs), rounding_mode='trunc').to(dtype)
    result = {hvd.Sum: lambda: stacked.sum(0), hvd.Min: lambda: stacked.min(0).values,
              hvd.Max: lambda: stacked.max(0).values, hvd.Product: lambda: stacked.prod(0)}[op]()
    return result.to(dtype)


def rows_of(rank, size, total):
    """reducescatter's rows for `rank`: as even as possible, lower ranks get the extra ones."""
    base, extra = divmod(total, size)
    start = rank * base + min(rank, extra)
    return start, base + (1 if rank < extra else 0)


# ---- allreduce ----------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES, ids=str)
def test_allreduce_every_op_of_every_dtype(dtype):
    # Product on small values, so that it stays exact in every dtype.
    low, high = (-3, 4) if dtype != torch.uint8 else (0, 4)
    handles = [(op, hvd.allreduce_async(rank_input(hvd.rank(), [5, 3], dtype, seed=op, low=low, high=high),
                                        name=f'every_op.{dtype}.{op}', op=op)) for op in OPS]
    for op, handle in handles:
        expected = reduced(all_inputs([5, 3], dtype, seed=op, low=low, high=high), op)
        assert_close(hvd.synchronize(handle), expected, dtype)


def test_allreduce_forms_give_the_same_result():
    mine = rank_input(hvd.rank(), [4, 6])
    expected = reduced(all_inputs([4, 6]), hvd.Sum)

    assert_close(hvd.allreduce(mine, op=hvd.Sum), expected)
    assert_close(hvd.synchronize(hvd.allreduce_async(mine, op=hvd.Sum)), expected)
    assert_close(mine, rank_input(hvd.rank(), [4, 6]))  # the out-of-place forms leave it

    inplace = mine.clone()
    assert hvd.allreduce_(inplace, op=hvd.Sum) is inplace
    assert_close(inplace, expected)
    inplace = mine.clone()
    handle = hvd.allreduce_async_(inplace, op=hvd.Sum)
    assert isinstance(handle, int)
    assert hvd.synchronize(handle) is inplace
    assert_close(inplace, expected)
    assert hvd.synchronize(handle) is None  # as Horovod: a handle synchronizes once


def test_allreduce_average_is_the_default_and_average_false_is_sum():
    mine = rank_input(hvd.rank(), [7])
    assert_close(hvd.allreduce(mine), reduced(all_inputs([7]), hvd.Average))
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(mine, average=False)
    assert_close(summed, reduced(all_inputs([7]), hvd.Sum))
    with pytest.raises(ValueError, match='supersedes'):
        hvd.allreduce(mine, average=True, op=hvd.Sum)


def test_allreduce_scale_factors():
    mine = rank_input(hvd.rank(), [3, 3], torch.float64)
    everyone = all_inputs([3, 3], torch.float64)
    result = hvd.allreduce(mine, op=hvd.Average, prescale_factor=0.5, postscale_factor=3.0)
    assert_close(result, reduced(everyone, hvd.Sum) * 1.5 / hvd.size())
    result = hvd.allreduce(mine, op=hvd.Sum, prescale_factor=2.0)
    assert_close(result, reduced(everyone, hvd.Sum) * 2.0)


def test_allreduce_in_place_of_a_non_contiguous_tensor():
    mine = rank_input(hvd.rank(), [4, 5]).t()
    assert not mine.is_contiguous()
    expected = reduced([t.t() for t in all_inputs([4, 5])], hvd.Sum)
    assert hvd.allreduce_(mine, op=hvd.Sum) is mine
    assert_close(mine, expected)
    assert_close(hvd.allreduce(rank_input(hvd.rank(), [4, 5]).t(), op=hvd.Sum), expected)


def test_in_place_forms_on_a_non_contiguous_leaf_that_requires_grad():
    # kolo writes the data outside autograd, as it does a contiguous tensor's; the copy back
    # into a non-contiguous leaf once failed after the collective had run on every rank.
    mine = rank_input(hvd.rank(), [4, 5]).t().requires_grad_()
    assert mine.is_leaf and not mine.is_contiguous()
    assert hvd.allreduce_(mine, op=hvd.Sum) is mine
    assert_close(mine.detach(), reduced([t.t() for t in all_inputs([4, 5])], hvd.Sum))
    conv = torch.nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
    assert not conv.weight.is_contiguous()
    with torch.no_grad():
        conv.weight.fill_(float(hvd.rank()))
    hvd.broadcast_parameters(conv.named_parameters(), root_rank=0)
    assert torch.equal(conv.weight.detach(), torch.zeros_like(conv.weight))


def test_allreduce_of_a_scalar_and_of_an_empty_tensor():
    assert_close(hvd.allreduce(torch.tensor(float(hvd.rank())), op=hvd.Sum),
                 torch.tensor(float(sum(range(hvd.size())))))
    assert hvd.allreduce(torch.zeros(0, 3), op=hvd.Sum).shape == (0, 3)


@pytest.mark.parametrize('in_place', [False, True], ids=['out_of_place', 'in_place'])
def test_grouped_allreduce(in_place):
    shapes = [[3], [2, 4], [5, 1, 2]]
    dtypes = [torch.float32, torch.int32, torch.float64]
    mine = [rank_input(hvd.rank(), s, d, seed=i) for i, (s, d) in enumerate(zip(shapes, dtypes))]
    expected = [reduced(all_inputs(s, d, seed=i), hvd.Sum) for i, (s, d) in enumerate(zip(shapes, dtypes))]
    if in_place:
        results = hvd.grouped_allreduce_(mine, name='grouped_inplace', op=hvd.Sum)
        assert all(r is t for r, t in zip(results, mine))
    else:
        handle = hvd.grouped_allreduce_async(mine, name='grouped', op=hvd.Sum)
        results = hvd.synchronize(handle)
    assert isinstance(results, list) and len(results) == 3
    for result, want in zip(results, expected):
        assert_close(result, want)
    averaged = hvd.grouped_allreduce([t.clone() for t in all_inputs([4], torch.float64)[:1]] * 2)
    for result in averaged:
        assert_close(result, rank_input(0, [4], torch.float64))


def test_grouped_allreduce_average_of_integers_truncates_like_horovod():
    mine = [rank_input(hvd.rank(), [6], torch.int64), rank_input(hvd.rank(), [6], torch.float32, seed=1)]
    results = hvd.grouped_allreduce(mine, op=hvd.Average)
    assert_close(results[0], reduced(all_inputs([6], torch.int64), hvd.Average))
    assert_close(results[1], reduced(all_inputs([6], torch.float32, seed=1), hvd.Average))


@pytest.mark.skipif(hvd.size() & (hvd.size() - 1) != 0, reason='Adasum needs a power-of-two number of ranks')
def test_adasum():
    mine = rank_input(hvd.rank(), [8], torch.float64)
    everyone = all_inputs([8], torch.float64)
    expected = everyone[0]
    if hvd.size() == 2:
        a, b = everyone
        dot = torch.dot(a, b)
        expected = (1 - dot / (2 * torch.dot(a, a))) * a + (1 - dot / (2 * torch.dot(b, b))) * b
    assert_close(hvd.allreduce(mine, op=hvd.Adasum), expected)


# ---- compression --------------------------------------------------------------------------

def test_fp16_compression_of_float32_and_float64_runs_in_kolo():
    for dtype in (torch.float32, torch.float64):
        mine = rank_input(hvd.rank(), [9], dtype) / 4
        expected = reduced([t / 4 for t in all_inputs([9], dtype)], hvd.Average)
        result = hvd.allreduce(mine, compression=hvd.Compression.fp16)
        assert result.dtype == dtype  # within float16's precision
        assert_close(result.to(torch.float16), expected.to(torch.float16))
        inplace = mine.clone()
        hvd.synchronize(hvd.allreduce_async_(inplace, compression=hvd.Compression.fp16))
        assert_close(inplace.to(torch.float16), expected.to(torch.float16))


class CountingCompressor(hvd.Compression.none):
    """A user's Compressor: sends the tensor doubled, and counts the calls."""
    calls = []

    @staticmethod
    def compress(tensor):
        CountingCompressor.calls.append('compress')
        return tensor * 2, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        CountingCompressor.calls.append('decompress')
        return (tensor / 2).to(ctx)


def test_other_compressors_run_in_python():
    # Compression.fp16 of bfloat16 casts to float16 and back, as Horovod's.
    mine = rank_input(hvd.rank(), [5], torch.bfloat16)
    assert_close(hvd.allreduce(mine, op=hvd.Sum, compression=hvd.Compression.fp16),
                 reduced(all_inputs([5], torch.bfloat16), hvd.Sum))
    ints = rank_input(hvd.rank(), [5], torch.int32)
    assert_close(hvd.allreduce(ints, op=hvd.Sum, compression=hvd.Compression.fp16),
                 reduced(all_inputs([5], torch.int32), hvd.Sum))

    CountingCompressor.calls.clear()
    mine = rank_input(hvd.rank(), [5], torch.float64)
    expected = reduced(all_inputs([5], torch.float64), hvd.Sum)
    assert_close(hvd.allreduce(mine, op=hvd.Sum, compression=CountingCompressor), expected)
    inplace = mine.clone()
    hvd.synchronize(hvd.allreduce_async_(inplace, op=hvd.Sum, compression=CountingCompressor))
    assert_close(inplace, expected)
    grouped = hvd.grouped_allreduce([mine, mine], op=hvd.Sum, compression=CountingCompressor)
    assert_close(grouped[1], expected)
    assert CountingCompressor.calls == ['compress', 'decompress'] * 2 + ['compress'] * 2 + ['decompress'] * 2


# ---- allgather ----------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES, ids=str)
def test_allgather_rows_differ_per_rank(dtype):
    n = hvd.size()
    mine = rank_input(hvd.rank(), [hvd.rank() + 1, 2, 3], dtype)
    expected = torch.cat([rank_input(r, [r + 1, 2, 3], dtype) for r in range(n)])
    assert_close(hvd.allgather(mine), expected, dtype)
    assert_close(hvd.synchronize(hvd.allgather_async(mine, name=f'allgather.{dtype}')), expected, dtype)


def test_allgather_of_no_rows_on_some_ranks():
    rows = hvd.rank() % 2
    result = hvd.allgather(torch.full((rows, 2), float(hvd.rank())))
    expected = torch.cat([torch.full((r % 2, 2), float(r)) for r in range(hvd.size())])
    assert_close(result, expected)


def test_grouped_allgather():
    mine = [rank_input(hvd.rank(), [hvd.rank() + 1, 2]), rank_input(hvd.rank(), [2], torch.int64, seed=1)]
    expected = [torch.cat([rank_input(r, [r + 1, 2]) for r in range(hvd.size())]),
                torch.cat(all_inputs([2], torch.int64, seed=1))]
    for result, want in zip(hvd.grouped_allgather(mine, name='grouped_allgather'), expected):
        assert_close(result, want)
    results = hvd.synchronize(hvd.grouped_allgather_async(mine))
    assert_close(results[0], expected[0])


# ---- broadcast ----------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES, ids=str)
def test_broadcast_from_every_root(dtype):
    for root in range(hvd.size()):
        mine = rank_input(hvd.rank(), [3, 4], dtype)
        expected = rank_input(root, [3, 4], dtype)
        assert_close(hvd.broadcast(mine, root), expected, dtype)
        assert_close(mine, rank_input(hvd.rank(), [3, 4], dtype), dtype)  # not modified
        assert hvd.broadcast_(mine, root) is mine
        assert_close(mine, expected, dtype)


def test_broadcast_async_forms():
    root = hvd.size() - 1
    mine = rank_input(hvd.rank(), [6])
    out = hvd.synchronize(hvd.broadcast_async(mine, root, name='bcast.async'))
    assert_close(out, rank_input(root, [6]))
    # Root's data, not a function of this rank's input: no graph back to it (as Horovod's).
    out = hvd.synchronize(hvd.broadcast_async(mine.clone().requires_grad_(), root))
    assert_close(out, rank_input(root, [6]))
    assert out.grad_fn is None and not out.requires_grad
    strided = rank_input(hvd.rank(), [6, 2])[:, 1]
    assert hvd.synchronize(hvd.broadcast_async_(strided, root)) is strided
    assert_close(strided, rank_input(root, [6, 2])[:, 1])


# ---- alltoall -----------------------------------------------------------------------------

def splits_of(rank, size):
    """How many rows rank `rank` sends to each rank: (rank + dest) % 3, zero included."""
    return [(rank + dest) % 3 for dest in range(size)]


def alltoall_expected(rank, size, dtype=torch.float32):
    """The rows `rank` receives when every rank r sends rank_input(r)'s rows by splits_of(r)."""
    parts = []
    for source in range(size):
        splits = splits_of(source, size)
        start = sum(splits[:rank])
        parts.append(rank_input(source, [sum(splits), 2], dtype)[start:start + splits[rank]])
    return torch.cat(parts), torch.tensor([splits_of(s, size)[rank] for s in range(size)], dtype=torch.int32)


@pytest.mark.parametrize('dtype', [torch.float32, torch.int8, torch.bfloat16], ids=str)
def test_alltoall_with_splits(dtype):
    n, r = hvd.size(), hvd.rank()
    splits = splits_of(r, n)
    output, received = hvd.alltoall(rank_input(r, [sum(splits), 2], dtype), splits=splits)
    want_output, want_received = alltoall_expected(r, n, dtype)
    assert_close(output, want_output, dtype)
    assert torch.equal(received, want_received)


def test_alltoall_splits_as_a_tensor_and_async():
    n, r = hvd.size(), hvd.rank()
    splits = torch.tensor(splits_of(r, n), dtype=torch.int64)
    output, received = hvd.synchronize(hvd.alltoall_async(rank_input(r, [int(splits.sum()), 2]), splits=splits))
    want_output, want_received = alltoall_expected(r, n)
    assert_close(output, want_output)
    assert received.dtype == torch.int64 and received.tolist() == want_received.tolist()


def test_alltoall_without_splits_splits_equally():
    n, r = hvd.size(), hvd.rank()
    mine = torch.arange(2 * n, dtype=torch.float32) + 100 * r
    output = hvd.alltoall(mine)
    assert isinstance(output, torch.Tensor)
    expected = torch.cat([torch.arange(2 * r, 2 * r + 2, dtype=torch.float32) + 100 * s for s in range(n)])
    assert_close(output, expected)


# ---- reducescatter ------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', DTYPES, ids=str)
@pytest.mark.parametrize('op', [hvd.Sum, hvd.Average], ids=['sum', 'average'])
def test_reducescatter_uneven_rows(dtype, op):
    n, r = hvd.size(), hvd.rank()
    total = 2 * n + 1
    result = hvd.reducescatter(rank_input(r, [total, 3], dtype), op=op)
    start, rows = rows_of(r, n, total)
    assert_close(result, reduced(all_inputs([total, 3], dtype), op)[start:start + rows], dtype)


def test_reducescatter_forms_and_factors():
    n, r = hvd.size(), hvd.rank()
    everyone = all_inputs([n * 2, 2], torch.float64)
    mine = everyone[r]
    start, rows = rows_of(r, n, n * 2)
    summed = reduced(everyone, hvd.Sum)[start:start + rows]
    assert_close(hvd.reducescatter(mine), summed / n)  # Average by default
    assert_close(hvd.synchronize(hvd.reducescatter_async(mine, name='rs.async', op=hvd.Sum,
                                                         prescale_factor=2.0, postscale_factor=0.25)),
                 summed * 0.5)
    results = hvd.grouped_reducescatter([mine, mine * 2], op=hvd.Sum)
    assert_close(results[0], summed)
    assert_close(results[1], summed * 2)
    results = hvd.synchronize(hvd.grouped_reducescatter_async([mine], op=hvd.Sum))
    assert_close(results[0], summed)
    assert_close(hvd.reducescatter(mine, op=hvd.Sum, compression=hvd.Compression.fp16), summed)


# ---- sparse -------------------------------------------------------------------------------

@pytest.mark.parametrize('op', [hvd.Sum, hvd.Average], ids=['sum', 'average'])
def test_sparse_allreduce(op):
    def sparse_of(rank):
        dense = torch.zeros(6, 2)
        dense[rank % 6] = rank + 1
        dense[(rank + 2) % 6, 1] = 10.0
        return dense.to_sparse()

    handle = hvd.sparse_allreduce_async(sparse_of(hvd.rank()), name=f'sparse.{op}', op=op)
    result = hvd.synchronize(handle)
    assert result.is_sparse and result.is_coalesced()
    expected = sum(sparse_of(r).to_dense() for r in range(hvd.size()))
    if op == hvd.Average:
        expected = expected / hvd.size()
    assert_close(result.to_dense(), expected)


# ---- handles ------------------------------------------------------------------------------

def test_poll_turns_true_and_handles_are_ints():
    handle = hvd.allreduce_async(torch.ones(3), name='poll')
    assert isinstance(handle, int)
    while not hvd.poll(handle):
        pass
    assert_close(hvd.synchronize(handle), torch.ones(3))


def test_many_operations_in_flight_complete_in_any_order():
    handles = [hvd.allreduce_async(torch.full((2,), float(i)), name=f'many.{i}', op=hvd.Sum) for i in range(20)]
    for i, handle in reversed(list(enumerate(handles))):
        assert_close(hvd.synchronize(handle), torch.full((2,), float(i * hvd.size())))


def test_every_float_dtype_keeps_its_dtype_through_average():
    for dtype in FLOAT_DTYPES:
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            out = hvd.allreduce(rank_input(hvd.rank(), [3], dtype))
        assert out.dtype == dtype
