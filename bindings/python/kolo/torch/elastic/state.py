"""The state an elastic job keeps in memory, commits, restores after a failure and syncs from
rank 0 after a reset: Horovod 0.28's State, ObjectState and TorchState."""
import copy
import time

import torch

from kolo.torch import _C
from kolo.torch.elastic.sampler import ElasticSampler
from kolo.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                  broadcast_parameters)
from kolo.torch.mpi_ops import KoloError, Max, allreduce


class HostsUpdatedInterrupt(RuntimeError):
    """Raised by State.commit() on every rank at the same step when hosts were added or
    removed: the job re-forms. skip_sync is always False: kolo syncs after every reset."""
    def __init__(self, skip_sync=False):
        super().__init__('kolo: the job\'s hosts changed; re-forming')
        self.skip_sync = skip_sync


class _HostMessages:
    """Horovod's State._host_messages, the queue in which its driver's notices of new or lost
    hosts arrive. kolo asks kolorun instead (check_host_updates), but a script may wait on the
    queue, as Horovod's own elastic test script does (`while state._host_messages.empty()`):
    it is empty until kolorun has told this worker that the hosts changed. One per round."""
    _ASK_EVERY_S = 0.1  # each question is a request to kolorun: a busy loop must not flood it

    def __init__(self):
        self._changed = False
        self._asked_at = None

    def empty(self):
        if self._changed or not _C.is_elastic():
            return not self._changed
        now = time.monotonic()
        if self._asked_at is None or now - self._asked_at >= self._ASK_EVERY_S:
            self._asked_at = now
            try:
                self._changed = _C.hosts_changed()
            except KoloError:
                return False  # kolorun did not answer: the next commit asks again, and fails
        return not self._changed


class State:
    """What survives a reset: save() keeps it, restore() goes back to it, sync() makes every
    rank's rank 0's."""
    def __init__(self, bcast_object=broadcast_object, get_rank=None):
        self._bcast_object = bcast_object
        self._reset_callbacks = []
        self._host_messages = _HostMessages()
        self._last_updated_timestamp = 0  # Horovod's; scripts reset it, kolo does not need it

    def register_reset_callbacks(self, callbacks):
        """Functions called after each reset (for one, to scale the learning rate by the new size)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = _HostMessages()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp=None, update_res=None):
        """Horovod's notification hook: kolo asks kolorun at each commit instead."""

    def commit(self):
        """save(), then check_host_updates(). Commit every few batches: a failure loses the work
        since the last commit."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank when any rank heard from kolorun that hosts
        changed since this round began (a max over the ranks, so that they agree)."""
        if not _C.is_elastic():
            return
        changed = torch.tensor([1 if _C.hosts_changed() else 0], dtype=torch.int32)
        if allreduce(changed, op=Max, name='kolo.elastic.hosts_changed').item():
            raise HostsUpdatedInterrupt(False)

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()


class ObjectState(State):
    """Plain Python objects, given as keyword arguments and kept as attributes."""
    def __init__(self, bcast_object=broadcast_object, get_rank=None, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {attr: copy.deepcopy(getattr(self, attr)) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state, 0)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, copy.deepcopy(value))


class StateHandler:
    """One tracked object: saved and restored through its state_dict(); sync() is the kind's."""
    def __init__(self, value):
        self.value = value
        self.save()

    def set_value(self, value):
        self.value = value
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)

    def sync(self):
        raise NotImplementedError()


class ModelStateHandler(StateHandler):
    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(StateHandler):
    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class ObjectStateHandler(StateHandler):
    """An lr scheduler, or the ElasticSampler (whose position counts every rank's samples, so
    rank 0's is the job's): its state_dict from rank 0."""
    def sync(self):
        self.value.load_state_dict(broadcast_object(self.value.state_dict(), 0))


_handler_registry = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (torch.optim.lr_scheduler._LRScheduler, ObjectStateHandler),
    (ElasticSampler, ObjectStateHandler),
]


def get_handler_registry():
    return _handler_registry


def set_handler_registry(registry):
    global _handler_registry
    _handler_registry = registry


def _handlers_of(kwargs):
    handlers, rest = {}, {}
    for name, value in kwargs.items():
        for kind, handler in _handler_registry:
            if isinstance(value, kind):
                handlers[name] = handler(value)
                break
        else:
            rest[name] = value
    return handlers, rest


class TorchState(ObjectState):
    """A PyTorch training process: model, optimizer, and any other keyword arguments (an lr
    scheduler, an ElasticSampler, plain values such as epoch and batch)."""
    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        self._handlers, kwargs = _handlers_of(kwargs)
        for name, handler in self._handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, **kwargs)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def __setattr__(self, name, value):
        if hasattr(self, '_handlers') and name in self._handlers:
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)


__all__ = ['HostsUpdatedInterrupt', 'State', 'ObjectState', 'TorchState', 'allgather_object']
