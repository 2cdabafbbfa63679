"""hvd.init(process_sets=[...]) at np 3: static process sets, given as Horovod's ProcessSet
objects and as rank lists, get their ids; a list kolo rejects raises ValueError and leaves
kolo unstarted, so that init can be called again; shutdown() takes the ids back. A script of its own: kolo starts once per
process. Exits 0 when every check passed (an assertion fails the rank, and kolo's stall bound
ends the others)."""
import os

import torch

import kolo.torch as hvd

os.environ['KOLO_DYNAMIC_PROCESS_SETS'] = '0'  # static sets only

try:
    hvd.init(process_sets=[[0, 2], hvd.ProcessSet([2, 0])])
    raise AssertionError('init accepted a set listed twice')
except ValueError as e:
    assert 'twice' in str(e), e
    assert e.code == 'InvalidArgument'
assert not hvd.is_initialized()

evens, odds = hvd.ProcessSet([2, 0]), hvd.ProcessSet([1])
hvd.init(process_sets=[evens, odds])
r = hvd.rank()
assert hvd.size() == 3, 'run at np 3'
assert (evens.process_set_id, evens.ranks) == (1, [0, 2])
assert (odds.process_set_id, odds.ranks) == (2, [1])
assert hvd.global_process_set.ranks == [0, 1, 2]
mine = evens if r % 2 == 0 else odds
assert mine.included() and mine.rank() == mine.ranks.index(r)

summed = hvd.allreduce(torch.tensor([float(r + 1)]), op=hvd.Sum, name='static', process_set=mine)
assert summed.item() == sum(s + 1 for s in mine.ranks), summed
gathered = hvd.allgather(torch.tensor([r]), process_set=mine)
assert gathered.tolist() == mine.ranks, gathered
hvd.barrier(process_set=mine)

try:
    hvd.add_process_set([0, 1])
    raise AssertionError('add_process_set worked without KOLO_DYNAMIC_PROCESS_SETS')
except hvd.KoloError as e:
    assert 'DYNAMIC_PROCESS_SETS' in str(e), e

hvd.shutdown()
# A new run of kolo (an elastic reset) numbers its sets from 1 again: a set kept across it
# must not name whatever set gets its old id. The global set keeps 0.
assert evens.process_set_id is None and odds.process_set_id is None, (evens, odds)
assert hvd.global_process_set.process_set_id == 0
print(f'[rank {r}] static process sets: ok', flush=True)
