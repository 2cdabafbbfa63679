"""Run by python_package_test.cmake on 2 ranks: the installed kolo.torch, imported as a
Horovod script would, sums a tensor across ranks, and the script ends without shutdown()."""
import os
import sys

import torch

import kolo.torch as hvd

expected_dir = os.path.realpath(sys.argv[1])
loaded_from = os.path.realpath(os.path.dirname(os.path.dirname(hvd.__file__)))
assert loaded_from == expected_dir, f"kolo was imported from {loaded_from}, not {expected_dir}"

hvd.init()
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
expected = hvd.size() * (hvd.size() + 1) / 2
assert total.item() == expected, f"allreduce gave {total.item()}, expected {expected}"
# No hvd.shutdown(), as in many Horovod scripts: kolo ends itself and MPI at exit, or mpirun
# reports an improper exit and the test fails.
print("python package OK", flush=True)
