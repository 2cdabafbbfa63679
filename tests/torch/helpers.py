"""What kolo.torch's tests share: every rank's input, which any rank can build (seeded by
rank), so that each rank computes the expected result of a collective on its own with torch."""
import torch

import kolo.torch as hvd

# Every dtype kolo and torch share.
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64]
FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 5e-2, torch.float32: 1e-5, torch.float64: 1e-12}


def rank_input(rank, shape, dtype=torch.float32, seed=0, low=-10, high=10):
    """Rank `rank`'s input: small integers, so that sums are exact in every dtype."""
    if dtype == torch.uint8:
        low = max(low, 0)
    g = torch.Generator().manual_seed(seed * 1009 + rank)
    return torch.randint(low, high, tuple(shape), generator=g).to(dtype)


def all_inputs(shape, dtype=torch.float32, seed=0, low=-10, high=10, ranks=None):
    """Every rank's input (of `ranks`, the job's by default), in rank order."""
    ranks = range(hvd.size()) if ranks is None else ranks
    return [rank_input(r, shape, dtype, seed, low, high) for r in ranks]


def assert_close(actual, expected, dtype=None):
    """Exact for integer dtypes, within the dtype's precision for floating-point ones."""
    dtype = dtype or actual.dtype
    assert actual.dtype == dtype, f'dtype {actual.dtype}, expected {dtype}'
    assert actual.shape == expected.shape, f'shape {tuple(actual.shape)}, expected {tuple(expected.shape)}'
    tol = _TOLERANCE.get(dtype, 0)
    torch.testing.assert_close(actual.double(), expected.double(), rtol=tol, atol=tol)
