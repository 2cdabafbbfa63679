"""Lifetime, topology, process sets and the collectives (horovod/torch/mpi_ops.py)."""
from kolo.torch._C import (  # noqa: F401
    init, shutdown, is_initialized, rank, size, local_rank, local_size, cross_rank, cross_size)
