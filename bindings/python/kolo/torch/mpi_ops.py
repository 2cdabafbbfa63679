"""horovod.torch's lifetime, topology and collectives (horovod/torch/mpi_ops.py) on kolo.

Each collective checks its Python arguments, hands the tensors to kolo.torch._C (kolo/torch.h)
and files kolo's handles under an int, as Horovod's handles are; synchronize() waits for them
and returns the result. The differentiable forms wrap that in autograd Functions with
Horovod's gradients. Collective logic (negotiation, fusion, the reductions) is all kolo's.
"""
import atexit
import itertools
import os
import warnings

import torch

from kolo.torch import _C
from kolo.torch._C import KoloError, InvalidArgumentError
from kolo.torch.compression import Compression, FP16Compressor, NoneCompressor
from kolo.torch.process_sets import (
    ProcessSet, global_process_set, add_process_set, remove_process_set, set_id as _set_id,
    _as_process_sets, _assign_ids, _forget_ids)

__all__ = [
    'init', 'shutdown', 'is_initialized', 'rank', 'size', 'local_rank', 'local_size', 'cross_rank',
    'cross_size', 'is_homogeneous', 'mpi_threads_supported', 'mpi_built', 'mpi_enabled', 'gloo_built',
    'gloo_enabled', 'nccl_built', 'cuda_built', 'ddl_built', 'ccl_built', 'rocm_built',
    'start_timeline', 'stop_timeline',
    'Sum', 'Average', 'Adasum', 'Min', 'Max', 'Product',
    'HorovodInternalError', 'KoloError', 'InvalidArgumentError',
    'ProcessSet', 'global_process_set', 'add_process_set', 'remove_process_set',
    'allreduce', 'allreduce_async', 'allreduce_', 'allreduce_async_',
    'grouped_allreduce', 'grouped_allreduce_async', 'grouped_allreduce_', 'grouped_allreduce_async_',
    'sparse_allreduce_async',
    'allgather', 'allgather_async', 'grouped_allgather', 'grouped_allgather_async',
    'broadcast', 'broadcast_async', 'broadcast_', 'broadcast_async_',
    'alltoall', 'alltoall_async',
    'reducescatter', 'reducescatter_async', 'grouped_reducescatter', 'grouped_reducescatter_async',
    'poll', 'synchronize', 'join', 'barrier',
]

# Horovod's exception for a failed collective is kolo's: a RuntimeError whose .code names
# kolo's StatusCode ("Mismatch", "Stalled", ...). InvalidArgumentError, raised by a call that
# kolo rejects at once, is also a ValueError, as Horovod's argument errors are.
HorovodInternalError = KoloError

Sum, Average, Adasum, Min, Max, Product = _C.Sum, _C.Average, _C.Adasum, _C.Min, _C.Max, _C.Product

# ---- Lifetime and topology ----------------------------------------------------------------

is_initialized = _C.is_initialized
rank = _C.rank
size = _C.size
local_rank = _C.local_rank
local_size = _C.local_size
cross_rank = _C.cross_rank
cross_size = _C.cross_size
is_homogeneous = _C.is_homogeneous
mpi_threads_supported = _C.mpi_threads_supported
mpi_built = _C.mpi_built
nccl_built = _C.nccl_built
cuda_built = _C.cuda_built
stop_timeline = _C.stop_timeline


gloo_built = _C.gloo_built


def mpi_enabled():
    """kolo runs over MPI now (False in a kolorun --gloo or elastic job)."""
    return _C.mpi_enabled()


def gloo_enabled():
    """kolo runs over Gloo now (a kolorun --gloo or elastic job)."""
    return _C.gloo_enabled()


def ddl_built():
    """kolo has no DDL, oneCCL or ROCm backend."""
    return False


ccl_built = rocm_built = ddl_built


def init(comm=None, process_sets=None):
    """Starts kolo on all ranks of the job (MPI_COMM_WORLD). process_sets: ProcessSet objects or
    rank lists, made at start and given their ids here; or "dynamic", for add_process_set()."""
    if comm is not None and not isinstance(comm, (list, tuple, range)):
        raise NotImplementedError('kolo.torch.init(comm=...) takes no MPI communicator; kolo runs on '
                                  'MPI_COMM_WORLD (a sub-communicator is for the C++ API, kolo/kolo_mpi.h)')
    if process_sets == 'dynamic':
        os.environ['KOLO_DYNAMIC_PROCESS_SETS'] = '1'
        process_sets = None
    sets = _as_process_sets(process_sets or [])
    _C.init([s.ranks for s in sets] if sets else None)
    if comm is not None and sorted(comm) != list(range(size())):
        shutdown()
        raise NotImplementedError(f'kolo.torch.init(comm={list(comm)}): kolo runs on all ranks of the job; '
                                  'use a ProcessSet for a subset')
    _assign_ids(sets)
    # As Horovod does: a script that never calls shutdown() still ends kolo (and MPI) cleanly.
    atexit.register(shutdown)


def shutdown():
    """Stops kolo; operations still pending fail with code "Aborted" (synchronize() raises it).
    Their handles stay until synchronized, as Horovod's do, but not their tensors: an elastic
    job that resets many times, forgetting its handles, would keep a step's gradients each.
    Process sets lose their ids: the next init() numbers its sets anew."""
    _C.shutdown()
    _forget_ids()
    for handle, (handles, _) in list(_handle_map.items()):
        errors = []
        for h in handles:
            try:
                h.wait()   # at once: kolo has failed what it did not finish
            except KoloError as e:
                errors.append(e)
        if errors:
            _handle_map[handle] = ([_Failed(errors[0])], None)


class _Failed:
    """A handle of an operation kolo failed, kept without its tensors: wait() raises why."""

    def __init__(self, error):
        self._error = error

    def ready(self):
        return True

    def wait(self):
        raise self._error


def start_timeline(file_path, mark_cycles=False):
    """Starts writing a timeline (rank 0 writes it) while kolo runs."""
    _C.start_timeline(file_path, mark_cycles)


# ---- Handles ------------------------------------------------------------------------------

# Horovod's handle (an int) -> (kolo's handles, finish). Keeping kolo's handles here also keeps
# the tensors they read and write alive until the operation is done, as Horovod's map does.
_handle_map = {}
_handle_ids = itertools.count(1)


def _register(handles, finish):
    handle = next(_handle_ids)
    _handle_map[handle] = (handles, finish)
    return handle


def _first(results):
    return results[0]


def _all(results):
    return results


def _members(tensors, op):
    """The group's tensors as a list; an empty one raises here, as kolo's C++ layer does."""
    tensors = list(tensors)
    if not tensors:
        raise InvalidArgumentError(f'kolo: {op} of an empty list of tensors')
    return tensors


def poll(handle):
    """Whether the operation is done: synchronize() would not block."""
    if handle not in _handle_map:
        raise InvalidArgumentError(f'kolo.torch: handle {handle} was not created or has been synchronized')
    return all(h.ready() for h in _handle_map[handle][0])


def synchronize(handle):
    """Waits for the operation and returns its result: the output tensor (the tensor given, for
    the in-place forms), a list for the grouped forms, (output, received_splits) for alltoall.
    Raises KoloError if it failed. A sparse_allreduce_async handle (a function) is called."""
    if callable(handle):
        return handle()
    if handle not in _handle_map:
        return None
    handles, finish = _handle_map.pop(handle)
    results, errors = [], []
    for h in handles:  # every member, so that none is dropped while kolo still writes to it
        try:
            results.append(h.wait())
        except KoloError as e:
            errors.append(e)
    if errors:
        raise errors[0]
    with torch.no_grad():
        return finish(results)


# ---- Argument handling shared by the collectives -------------------------------------------

def _name(op, name):
    """Horovod's name for a named operation: the op's, a dot, then the caller's ("allreduce.fc1.weight"),
    as in its timelines and stall messages; so that one name may serve two different collectives at
    once, as in Horovod. None or '': unnamed, and kolo names it ("allreduce.noname.7"), the same on every
    rank (Horovod takes '' as unnamed too)."""
    return '' if name is None or str(name) == '' else f'{op}.{name}'


def _reduce_op(op, average):
    """Horovod's op= with its deprecated alias average=; Average by default."""
    if op is not None:
        if average is not None:
            raise ValueError('The op parameter supersedes average. Please provide only one of them.')
        return op
    if average is not None:
        warnings.warn('Parameter `average` has been replaced with `op` and will be removed in v1.0',
                      DeprecationWarning)
        return Average if average else Sum
    return Average


def _is_compressor(compression, cls):
    """Whether `compression` is the Compressor class `cls` (or an instance of exactly it)."""
    return compression is cls or type(compression) is cls


def _wire_compression(compression, tensors):
    """kolo's own fp16 wire compression stands in for Compression.fp16 on float32 and float64
    tensors: the cast happens inside kolo, not in Python."""
    if _is_compressor(compression, FP16Compressor) and all(t.dtype in (torch.float32, torch.float64)
                                                           for t in tensors):
        return _C.COMPRESSION_FP16
    return _C.COMPRESSION_NONE


def _reduction(tensors, op, compression, submit, in_place=False, grouped=False):
    """What allreduce and reducescatter share: a Python Compressor's compress and decompress
    around kolo's operation (kolo averages and scales integers as Horovod does: in double,
    truncated toward zero). submit(tensors, op) submits to kolo and returns its handles.
    Returns Horovod's handle."""
    if compression is None or _is_compressor(compression, NoneCompressor):
        sent, contexts = list(tensors), None
    else:
        sent, contexts = map(list, zip(*(compression.compress(t) for t in tensors)))
    handles = submit(sent, op)

    def finish(results):
        outputs = []
        for i, result in enumerate(results):
            if contexts is not None:
                result = compression.decompress(result, contexts[i])
            if in_place and result is not tensors[i]:
                tensors[i].copy_(result)
                result = tensors[i]
            outputs.append(result)
        return outputs if grouped else outputs[0]

    return _register(handles, finish)


# ---- allreduce ----------------------------------------------------------------------------

def _allreduce_async(tensors, name, op, prescale_factor, postscale_factor, compression, process_set,
                     in_place, grouped):
    set_id = _set_id(process_set)
    wire = _wire_compression(compression, tensors)
    if wire != _C.COMPRESSION_NONE:
        compression = Compression.none

    def submit(sent, kolo_op):
        args = (_name('grouped_allreduce' if grouped else 'allreduce', name), kolo_op, float(prescale_factor),
                float(postscale_factor), wire, set_id, in_place)
        if grouped:
            return _C.grouped_allreduce_async(sent, *args)
        return [_C.allreduce_async(sent[0], *args)]

    return _reduction(tensors, op, compression, submit, in_place, grouped)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set, compression=Compression.none):
    """Starts reducing `tensor` (Average by default) over the process set into a new tensor;
    returns a handle for poll() and synchronize(). The input is not modified."""
    return _allreduce_async([tensor], name, _reduce_op(op, average), prescale_factor, postscale_factor,
                            compression, process_set, in_place=False, grouped=False)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set, compression=Compression.none):
    """allreduce_async, writing the result into `tensor`."""
    return _allreduce_async([tensor], name, _reduce_op(op, average), prescale_factor, postscale_factor,
                            compression, process_set, in_place=True, grouped=False)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set, compression=Compression.none):
    """Reduces `tensor` in place and returns it."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                                        process_set, compression))


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                            process_set=global_process_set, compression=Compression.none):
    """allreduce_async of a list, negotiated and run as one unit; tensor i is named
    "<name>.<i>". synchronize() returns the list of results."""
    return _allreduce_async(list(tensors), name, _reduce_op(op, average), prescale_factor, postscale_factor,
                            compression, process_set, in_place=False, grouped=True)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set, compression=Compression.none):
    """grouped_allreduce_async, writing each result into its tensor."""
    return _allreduce_async(list(tensors), name, _reduce_op(op, average), prescale_factor, postscale_factor,
                            compression, process_set, in_place=True, grouped=True)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set, compression=Compression.none):
    """Reduces each tensor of the list in place, as one unit; returns the list."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set, compression))


class HorovodAllreduce(torch.autograd.Function):
    """allreduce; its gradient is the allreduce of the gradient, with the same op and factors."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, compression, process_set):
        ctx.reduction = dict(op=op, prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                             process_set=process_set)
        return synchronize(_allreduce_async([tensor], name, op, prescale_factor, postscale_factor, compression,
                                            process_set, in_place=False, grouped=False))

    @staticmethod
    def backward(ctx, grad_output):
        return (allreduce(grad_output, **ctx.reduction),) + (None,) * 6


class HorovodGroupedAllreduce(torch.autograd.Function):
    """grouped_allreduce; the gradients are the grouped allreduce of the gradients."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, compression, process_set, *tensors):
        ctx.reduction = dict(op=op, prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                             process_set=process_set)
        return tuple(synchronize(_allreduce_async(list(tensors), name, op, prescale_factor, postscale_factor,
                                                  compression, process_set, in_place=False, grouped=True)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None,) * 6 + tuple(grouped_allreduce(list(grad_outputs), **ctx.reduction))


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` (Average by default) over the process set and returns the result, a new
    tensor; differentiable."""
    op = _reduce_op(op, average)
    if _wire_compression(compression, [tensor]) != _C.COMPRESSION_NONE:
        return HorovodAllreduce.apply(tensor, name, op, prescale_factor, postscale_factor, compression,
                                      process_set)
    sent, context = compression.compress(tensor)
    reduced = HorovodAllreduce.apply(sent, name, op, prescale_factor, postscale_factor, Compression.none,
                                     process_set)
    return compression.decompress(reduced, context)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """allreduce of a list, negotiated and run as one unit; returns the list; differentiable."""
    op = _reduce_op(op, average)
    tensors = _members(tensors, 'grouped_allreduce')
    if _wire_compression(compression, tensors) != _C.COMPRESSION_NONE:
        return list(HorovodGroupedAllreduce.apply(name, op, prescale_factor, postscale_factor, compression,
                                                  process_set, *tensors))
    sent, contexts = zip(*(compression.compress(t) for t in tensors))
    reduced = HorovodGroupedAllreduce.apply(name, op, prescale_factor, postscale_factor, Compression.none,
                                            process_set, *sent)
    return [compression.decompress(t, c) for t, c in zip(reduced, contexts)]


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Reduces a sparse COO tensor as Horovod does: every rank's indices and values are
    gathered, and the result is the coalesced sparse tensor of them all (values divided by the
    set's size for Average). Returns a function that synchronize() (or a call) turns into it."""
    prefix = None if name is None else str(name)
    # Gathered along the first dimension: the indices go as (nnz, sparse_dim), then back.
    indices = allgather_async(tensor._indices().transpose(0, 1).contiguous(),
                              name=None if prefix is None else prefix + '.indices', process_set=process_set)
    values = allgather_async(tensor._values().contiguous(),
                             name=None if prefix is None else prefix + '.values', process_set=process_set)

    def handle():
        all_values = synchronize(values)
        all_indices = synchronize(indices)
        if op == Average:
            all_values = all_values / process_set.size()
        return torch.sparse_coo_tensor(all_indices.transpose(0, 1), all_values, tensor.size()).coalesce()

    return handle


# ---- allgather ----------------------------------------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating every rank's `tensor` along the first dimension (whose length may
    differ per rank); returns a handle."""
    return _register([_C.allgather_async(tensor, _name('allgather', name), _set_id(process_set))], _first)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """allgather_async of a list, negotiated as one unit; synchronize() returns the list."""
    return _register(_C.grouped_allgather_async(list(tensors), _name('grouped_allgather', name),
                                                   _set_id(process_set)), _all)


def _own_rows(grad_outputs, rows, process_set):
    """allgather's gradient, as Horovod defines it: the average of every rank's gradient of the
    gathered tensor, this rank's rows of it."""
    reduced = grouped_allreduce(list(grad_outputs), op=Average, process_set=process_set)
    all_rows = grouped_allgather([torch.tensor([n], dtype=torch.int64) for n in rows], process_set=process_set)
    r = process_set.rank()
    return [g.narrow(0, int(every[:r].sum()), n) for g, every, n in zip(reduced, all_rows, rows)]


class HorovodAllgather(torch.autograd.Function):
    """allgather; the gradient is this rank's rows of the averaged gradient."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.rows, ctx.process_set = tensor.shape[0], process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        return _own_rows([grad_output], [ctx.rows], ctx.process_set)[0], None, None


class HorovodGroupedAllgather(torch.autograd.Function):
    """grouped_allgather; each gradient as allgather's."""

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.rows, ctx.process_set = [t.shape[0] for t in tensors], process_set
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None) + tuple(_own_rows(grad_outputs, ctx.rows, ctx.process_set))


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's `tensor` concatenated along the first dimension; differentiable."""
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of a list, negotiated as one unit; returns the list; differentiable."""
    return list(HorovodGroupedAllgather.apply(name, process_set, *_members(tensors, 'grouped_allgather')))


# ---- broadcast ----------------------------------------------------------------------------

def _broadcast_async(tensor, root_rank, name, process_set, in_place):
    if not isinstance(root_rank, int):
        raise ValueError(f'root_rank must be an int (a rank of the global set), not {root_rank!r}')
    return _register([_C.broadcast_async(tensor, root_rank, _name('broadcast', name), _set_id(process_set),
                                         in_place)], _first)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts copying root_rank's `tensor` (root_rank: a global rank, in the set) into a new
    tensor on every rank; returns a handle. The input is not modified."""
    return _broadcast_async(tensor, root_rank, name, process_set, in_place=False)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """broadcast_async, overwriting `tensor`."""
    return _broadcast_async(tensor, root_rank, name, process_set, in_place=True)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Overwrites `tensor` with root_rank's and returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class HorovodBroadcast(torch.autograd.Function):
    """broadcast; the gradient, as Horovod's, is the average of the ranks' gradients on the
    root and zero elsewhere."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            reduced = torch.zeros_like(reduced)
        return reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's `tensor` on every rank, a new tensor; differentiable."""
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


# ---- alltoall -----------------------------------------------------------------------------

def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts sending splits[r] first-dimension rows of `tensor` to the set's r-th rank (splits
    None: equal parts); returns a handle, which synchronize() turns into (output,
    received_splits), a tensor of the rows that came from each rank."""
    if splits is None:
        split_list, splits_dtype = [], torch.int32
    elif isinstance(splits, torch.Tensor):
        if splits.dim() != 1 or splits.is_floating_point():
            raise ValueError(f'splits must be a 1-D integer tensor, not {splits.dim()}-D {splits.dtype}')
        split_list, splits_dtype = splits.tolist(), splits.dtype
    else:
        split_list, splits_dtype = [int(s) for s in splits], torch.int32
    handle = _C.alltoall_async(tensor, split_list, _name('alltoall', name), _set_id(process_set))

    def finish(results):
        return results[0], torch.tensor(handle.received_splits(), dtype=splits_dtype)

    return _register([handle], finish)


class HorovodAlltoall(torch.autograd.Function):
    """alltoall; the gradient is the reverse alltoall of the gradient."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received_splits, ctx.process_set = received_splits, process_set
        if splits is None:
            return output
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, *unused):
        grad, _ = alltoall(grad_output, splits=ctx.received_splits, process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """The rows every rank sent this rank, in rank order; with `splits` given, also the
    received splits, as (output, received_splits). Differentiable."""
    return HorovodAlltoall.apply(tensor, splits, name, process_set)


# ---- reducescatter ------------------------------------------------------------------------

def _reducescatter_async(tensors, name, op, process_set, prescale_factor, postscale_factor, compression,
                         grouped):
    set_id = _set_id(process_set)

    def submit(sent, kolo_op):
        args = (_name('grouped_reducescatter' if grouped else 'reducescatter', name), kolo_op,
                float(prescale_factor), float(postscale_factor), set_id)
        if grouped:
            return _C.grouped_reducescatter_async(sent, *args)
        return [_C.reducescatter_async(sent[0], *args)]

    return _reduction(tensors, _reduce_op(op, None), compression, submit, grouped=grouped)


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set, prescale_factor=1.0,
                        postscale_factor=1.0, compression=Compression.none):
    """Starts reducing `tensor` (same shape on every rank) and giving the set's r-th rank its
    part of the first dimension (rows split as evenly as possible, lower ranks get the extra
    ones); returns a handle."""
    return _reducescatter_async([tensor], name, op, process_set, prescale_factor, postscale_factor, compression,
                                grouped=False)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0, compression=Compression.none):
    """reducescatter_async of a list, negotiated as one unit; synchronize() returns the list."""
    return _reducescatter_async(list(tensors), name, op, process_set, prescale_factor, postscale_factor,
                                compression, grouped=True)


def _scattered_grads(grad_outputs, ctx):
    """reducescatter's gradient, as Horovod's: every rank's gradient gathered, times the factors,
    and times the set's size for Sum."""
    if ctx.op not in (Sum, Average):
        raise NotImplementedError('kolo.torch: reducescatter is differentiable for Sum and Average only')
    scale = ctx.prescale_factor * ctx.postscale_factor * (ctx.process_set.size() if ctx.op == Sum else 1)
    gathered = grouped_allgather(list(grad_outputs), process_set=ctx.process_set)
    return [g * scale if scale != 1 else g for g in gathered]


class HorovodReducescatter(torch.autograd.Function):
    """reducescatter; the gradient is the allgather of the gradient (scaled as Horovod does)."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.op, ctx.process_set = _reduce_op(op, None), process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return synchronize(_reducescatter_async([tensor], name, op, process_set, prescale_factor,
                                                postscale_factor, Compression.none, grouped=False))

    @staticmethod
    def backward(ctx, grad_output):
        return (_scattered_grads([grad_output], ctx)[0],) + (None,) * 5


class HorovodGroupedReducescatter(torch.autograd.Function):
    """grouped_reducescatter; each gradient as reducescatter's."""

    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.op, ctx.process_set = _reduce_op(op, None), process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return tuple(synchronize(_reducescatter_async(list(tensors), name, op, process_set, prescale_factor,
                                                      postscale_factor, Compression.none, grouped=True)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None,) * 5 + tuple(_scattered_grads(grad_outputs, ctx))


def reducescatter(tensor, name=None, compression=Compression.none, op=Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's part of the reduction of every rank's `tensor`; differentiable."""
    sent, context = compression.compress(tensor)
    reduced = HorovodReducescatter.apply(sent, name, op, process_set, prescale_factor, postscale_factor)
    return compression.decompress(reduced, context)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter of a list, negotiated as one unit; returns the list; differentiable."""
    tensors = _members(tensors, 'grouped_reducescatter')
    sent, contexts = zip(*(compression.compress(t) for t in tensors))
    reduced = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor, postscale_factor, *sent)
    return [compression.decompress(t, c) for t, c in zip(reduced, contexts)]


# ---- join and barrier ---------------------------------------------------------------------

def join(device=-1):
    """Declares that this rank has no more data: until every rank has joined, it takes part in
    the others' allreduces with zeros. Blocks until all have joined; returns the rank that
    joined last. (`device` is Horovod's; kolo makes its zeros where the tensors are.)"""
    return _C.join(0)


def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called it."""
    _C.barrier(_set_id(process_set))
