"""kolo.torch: horovod.torch's API on kolo. `import kolo.torch as hvd` runs a horovod.torch
script unchanged (docs/torch.md)."""
from kolo.torch.mpi_ops import *  # noqa: F401,F403
from kolo.torch.compression import Compression  # noqa: F401
from kolo.torch.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters)
from kolo.torch.optimizer import DistributedOptimizer  # noqa: F401
from kolo.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
from kolo.torch import elastic  # noqa: F401,E402
from kolo.torch.elastic import HostsUpdatedInterrupt  # noqa: F401,E402
