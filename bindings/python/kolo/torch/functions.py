"""Model and object broadcasts (horovod/torch/functions.py): a model's parameters, an
optimizer's state and options, and any picklable object, from one rank to the others.
Tensors travel as kolo broadcasts in place; objects as pickled bytes over kolo's byte
buffers (the extension's broadcast_bytes / allgather_bytes)."""
import io
import pickle

import torch

from kolo.torch import _C
from kolo.torch.mpi_ops import KoloError, broadcast_async_, global_process_set, rank, synchronize
from kolo.torch.process_sets import set_id as _set_id


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites each tensor of `params` with root_rank's, in place.

    params: a dict of tensors (a module's state_dict(); broadcast in the order of its sorted
    names), or a sequence of tensors or of (name, tensor) pairs (named_parameters()).
    """
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, (list, tuple)) or _is_iterator(params):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError('invalid params of type: %s' % type(params))

    handles = [broadcast_async_(p, root_rank, name, process_set=process_set) for name, p in params]
    errors = []
    for handle in handles:  # every one, so that none is left behind when one fails
        try:
            synchronize(handle)
        except KoloError as e:
            errors.append(e)
    if errors:
        raise errors[0]


def _is_iterator(obj):
    # model.parameters() and model.named_parameters() are generators.
    return hasattr(obj, '__next__')


# The object collectives are synchronous, so one name each serves every unnamed call: it
# agrees on every rank whatever ran before (an automatic name counts the operations each
# rank submitted, which differ after one that some ranks did not run). Horovod names them
# after the object's type, which differs where other ranks pass None to broadcast_object.
#
# Each rank's bytes start with a tag: _PICKLED and the pickle, or _UNPICKLABLE and why. A rank
# whose object cannot be pickled still takes part, so that every rank raises at once, instead
# of the others waiting for it until the stall bound.
_PICKLED, _UNPICKLABLE = b'\x00', b'\x01'


def _tagged_pickle(obj):
    try:
        return _PICKLED + pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), None
    except Exception as e:  # noqa: BLE001 (what pickle raises depends on the object)
        return _UNPICKLABLE + f'{type(e).__name__}: {e}'.encode(errors='replace'), e


def _unpickled(payload, what):
    if payload[:1] == _UNPICKLABLE:
        raise pickle.PicklingError(f'{what} could not be pickled: {payload[1:].decode(errors="replace")}')
    return pickle.loads(payload[1:])


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's `obj` on every rank of the set (pickled; other ranks' obj is ignored).
    The bytes are unpickled: every rank trusts the root, as with Horovod. If the root's
    object cannot be pickled, every rank raises pickle.PicklingError (the root its own error)."""
    payload, error = _tagged_pickle(obj) if rank() == root_rank else (b'', None)
    received = _C.broadcast_bytes(name or 'broadcast_object', payload, root_rank, _set_id(process_set))
    if error is not None:
        raise error
    return obj if rank() == root_rank else _unpickled(received, f"broadcast_object's object on rank {root_rank}")


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's `obj`, as a list in the set's rank order (unpickled: every rank trusts
    the others, as with Horovod). If any rank's object cannot be pickled, every rank raises
    pickle.PicklingError (that rank its own error)."""
    payload, error = _tagged_pickle(obj)
    received = _C.allgather_bytes(name or 'allgather_object', payload, _set_id(process_set))
    if error is not None:
        raise error
    ranks = getattr(process_set, 'ranks', None) or list(range(len(received)))
    return [_unpickled(b, f"allgather_object's object on rank {r}") for r, b in zip(ranks, received)]


# ---- optimizer state ---------------------------------------------------------------------------
#
# root_rank pickles its optimizer's state_dict() with every tensor replaced by a placeholder
# (shape, dtype, device kind), and broadcasts those bytes; every other rank unpickles them,
# finds or makes a tensor for each placeholder, and the tensors are then broadcast in place.
# A rank's existing state tensor of the same shape and dtype is reused, so the state is not
# held twice; scalars (Adam's step as a number), options (lr, betas, ...) and nested state
# (L-BFGS's lists) come with the bytes.

class _StatePickler(pickle.Pickler):
    def __init__(self, file, slots):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.slots = slots      # id(tensor) -> (parameter index, state key) for per-parameter state
        self.tensors = []

    def persistent_id(self, obj):
        if not torch.is_tensor(obj):
            return None
        self.tensors.append(obj)
        return (len(self.tensors) - 1, tuple(obj.shape), obj.dtype, obj.device.type, self.slots.get(id(obj)))


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, file, optimizer, params):
        super().__init__(file)
        self.optimizer = optimizer
        self.params = params
        self.tensors = {}

    def persistent_load(self, pid):
        ordinal, shape, dtype, device_kind, slot = pid
        param = self.params[slot[0]] if slot is not None and slot[0] < len(self.params) else None
        tensor = self._existing(param, slot[1], shape, dtype) if param is not None else None
        if tensor is None:
            tensor = torch.empty(shape, dtype=dtype, device=self._device(device_kind, param))
        self.tensors[ordinal] = tensor
        return tensor

    def _existing(self, param, key, shape, dtype):
        tensor = self.optimizer.state.get(param, {}).get(key)
        if torch.is_tensor(tensor) and tuple(tensor.shape) == shape and tensor.dtype == dtype:
            return tensor
        return None

    @staticmethod
    def _device(kind, param):
        if kind == 'cpu':
            return torch.device('cpu')
        if param is not None and param.device.type == kind:
            return param.device
        # A process keeps its GPU tensors on one device: the current one.
        return torch.device(kind, torch.cuda.current_device()) if kind == 'cuda' else torch.device(kind)


def _parameters(optimizer):
    # state_dict() numbers the parameters in this order.
    return [p for group in optimizer.param_groups for p in group['params']]


def _initialise_state(optimizer, model):
    """Horovod's start for an optimizer without state: every parameter that takes a gradient
    gets a zero one (sparse for SparseAdam, and for SGD on a sparse embedding of `model`), and
    the wrapped optimizer steps once, without reducing anything, so that its state (momentum
    buffers, moments) exists to receive root_rank's."""
    if isinstance(optimizer, torch.optim.LBFGS):
        return  # its step needs a closure; its state comes whole with the bytes
    sparse = {id(p) for m in (model.modules() if model is not None else ())
              if isinstance(m, torch.nn.Embedding) and m.sparse for p in m.parameters()}
    for p in _parameters(optimizer):
        if p.requires_grad:
            p.grad = torch.zeros_like(p)
            if isinstance(optimizer, torch.optim.SparseAdam) or (isinstance(optimizer, torch.optim.SGD)
                                                                  and id(p) in sparse):
                p.grad = p.grad.to_sparse()
    # A DistributedOptimizer's own step would reduce, which every rank must then do.
    getattr(optimizer, '_local_step', optimizer.step)()


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """root_rank's optimizer state and options on every rank of the set: each parameter's
    state (momentum buffers, Adam's moments and step) and each param group's options (lr,
    momentum, betas, ...). The optimizers must have the same param groups, of the same
    parameters, on every rank. An optimizer with no state yet is first given one as Horovod
    does (zero gradients and a step of the wrapped optimizer; `model` says which embeddings
    are sparse)."""
    if not optimizer.state:
        _initialise_state(optimizer, model)
    params = _parameters(optimizer)
    if rank() == root_rank:
        state_dict = optimizer.state_dict()
        slots = {id(value): (index, key)
                 for index, state in state_dict['state'].items() if isinstance(index, int)
                 for key, value in state.items() if torch.is_tensor(value)}
        buffer = io.BytesIO()
        pickler = _StatePickler(buffer, slots)
        pickler.dump(state_dict)
        broadcast_object(buffer.getvalue(), root_rank, 'broadcast_optimizer_state', process_set)
        tensors = pickler.tensors
    else:
        data = broadcast_object(None, root_rank, 'broadcast_optimizer_state', process_set)
        unpickler = _StateUnpickler(io.BytesIO(data), optimizer, params)
        state_dict = unpickler.load()
        tensors = [unpickler.tensors[i] for i in range(len(unpickler.tensors))]

    handles = [broadcast_async_(t, root_rank, 'broadcast_optimizer_state.%d' % i, process_set=process_set)
               for i, t in enumerate(tensors)]
    for handle in handles:
        synchronize(handle)
    if rank() != root_rank:
        _apply_state(optimizer, params, state_dict)


def _apply_state(optimizer, params, state_dict):
    groups = state_dict['param_groups']
    if len(groups) != len(optimizer.param_groups) or any(
            len(g['params']) != len(mine['params']) for g, mine in zip(groups, optimizer.param_groups)):
        raise ValueError('broadcast_optimizer_state: the root rank\'s optimizer has param groups of %s '
                         'parameters, this rank\'s of %s' % ([len(g['params']) for g in groups],
                                                              [len(g['params']) for g in optimizer.param_groups]))
    # Options in place: learning-rate schedulers hold these dicts.
    for mine, root in zip(optimizer.param_groups, groups):
        mine.update((key, value) for key, value in root.items() if key != 'params')
    for p in params:
        optimizer.state.pop(p, None)
    for index, state in state_dict['state'].items():
        optimizer.state[params[index]] = state
