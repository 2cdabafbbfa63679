"""DistributedOptimizer (horovod/torch/optimizer.py): wraps a torch optimizer so that each
gradient is submitted to kolo by a hook on its gradient accumulator the moment backward has
produced it, and step() waits for the reductions before the wrapped optimizer steps.

The wrapper is an instance of a class made on the fly that derives from the wrapped
optimizer's class (isinstance and the class name still hold), with one of the two mixins
below in front: _DistributedOptimizer reduces gradients; _DistributedAdasumOptimizer
(op=Adasum on more than one rank) steps each parameter locally and combines the ranks'
updates with Adasum. The reductions are kolo's (mpi_ops); this file decides when to submit
what."""
import numbers
import warnings
import weakref
from collections import Counter
from contextlib import contextmanager

import torch

from kolo.torch import _C
from kolo.torch.compression import Compression
from kolo.torch.functions import broadcast_object
from kolo.torch.mpi_ops import Adasum, Average, allreduce_async_, global_process_set
from kolo.torch.mpi_ops import grouped_allreduce_async_, size, sparse_allreduce_async, synchronize

_TOO_MANY_PASSES = ('Gradients were computed more than backward_passes_per_step times before call '
                    'to step(). Increase backward_passes_per_step to accumulate gradients locally.')
_ZERO_GRAD_RACE = ('optimizer.zero_grad() was called after loss.backward() but before '
                   'optimizer.step() or optimizer.synchronize(). This is prohibited as it can '
                   'cause a race condition.')
_STEP_AFTER_SYNCHRONIZE = ('optimizer.step() called without optimizer.skip_synchronize() context '
                           'after optimizer.synchronize(). This can cause training slowdown. You '
                           'may want to consider using optimizer.skip_synchronize() context if you '
                           'use optimizer.synchronize() in your code.')


def _parameter_names(param_groups, named_parameters):
    """Each parameter's name (the name of its reduction), checked as Horovod checks them."""
    if named_parameters is None:
        return {p: 'allreduce.noname.%d.%d' % (i, j)
                for i, group in enumerate(param_groups) for j, p in enumerate(group['params'])}
    named_parameters = list(named_parameters)
    if any(not isinstance(item, tuple) for item in named_parameters):
        raise ValueError('named_parameters should be a sequence of tuples (name, parameter), '
                         'usually produced by model.named_parameters().')
    duplicates = sorted(name for name, n in Counter(name for name, _ in named_parameters).items() if n > 1)
    if duplicates:
        raise ValueError('Parameter names in named_parameters must be unique. '
                         'Found duplicates: %s' % ', '.join(duplicates))
    named = {id(p) for _, p in named_parameters}
    unnamed = [id(p) for group in param_groups for p in group['params'] if id(p) not in named]
    if unnamed:
        raise ValueError('named_parameters was specified, but one or more model parameters were '
                         'not named. Python object ids: %s' % ', '.join(str(i) for i in unnamed))
    return {p: name for name, p in named_parameters}


class _GradientHooks:
    """What both wrappers share: the parameters' names, the hooks, the count of backward
    passes before a parameter's gradient is due, and Horovod's checks around them."""

    def _setup_hooks(self, named_parameters, compression, backward_passes_per_step, process_set):
        self._parameter_names = _parameter_names(self.param_groups, named_parameters)
        self._compression = compression
        self.backward_passes_per_step = _checked_passes(backward_passes_per_step)
        self.process_set = process_set
        self._hooked = []          # the parameters with a hook, in param_groups order
        self._grad_accs = []       # the accumulators must live as long as their hooks
        self._passes_left = {}     # parameter -> backward passes before its gradient is due
        self._backward_seen = False  # a hook ran since the last synchronization
        self._synchronized = False
        self._should_synchronize = True

    def _register_hooks(self):
        this = weakref.ref(self)  # the hooks must not keep a dropped optimizer alive

        def make_hook(p):
            def hook(*unused):
                optimizer = this()
                if optimizer is not None:
                    optimizer._on_gradient(p)
            return hook

        with torch.enable_grad():
            for group in self.param_groups:
                for p in group['params']:
                    if not p.requires_grad:
                        continue
                    accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                    accumulator.register_hook(make_hook(p))
                    self._grad_accs.append(accumulator)
                    self._hooked.append(p)
                    self._passes_left[p] = self.backward_passes_per_step

    def _on_gradient(self, p):
        """Runs after backward has accumulated p's gradient."""
        if self._passes_left[p] <= 0:
            raise AssertionError(_TOO_MANY_PASSES)
        self._backward_seen = True
        self._passes_left[p] -= 1
        if self._passes_left[p] == 0:
            self._gradient_due(p)

    def _reset_passes(self):
        for p in self._passes_left:
            self._passes_left[p] = self.backward_passes_per_step

    def _end_step(self):
        """After a synchronization, or when a checkpoint replaces the step."""
        self._forget_submissions()
        self._reset_passes()
        self._backward_seen = False

    def _zero_filled_grad(self, p):
        # A rank whose backward did not reach p still submits it: the others may have.
        if p.grad is None:
            p.grad = torch.zeros_like(p, memory_format=torch.preserve_format)
        return p.grad

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = _checked_passes(passes)
        self._reset_passes()

    def load_state_dict(self, *args, **kwargs):
        self._end_step()
        self._synchronized = False
        self._should_synchronize = True
        return super().load_state_dict(*args, **kwargs)

    def zero_grad(self, *args, **kwargs):
        if self._backward_seen:
            raise AssertionError(_ZERO_GRAD_RACE)
        return super().zero_grad(*args, **kwargs)

    def _local_step(self):
        """The wrapped optimizer's step, on this rank's gradients as they are."""
        return super(_GradientHooks, self).step()


class _DistributedOptimizer(_GradientHooks):
    """Reduces the gradients (op Average or Sum; Adasum on one rank), individually or in
    groups, then steps the wrapped optimizer on the reduced gradients."""

    def _setup(self, named_parameters, compression, backward_passes_per_step, op,
               gradient_predivide_factor, groups, sparse_as_dense, process_set):
        self._setup_hooks(named_parameters, compression, backward_passes_per_step, process_set)
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        _check_groups(groups)
        self._groups = groups
        self._group_of = {}        # parameter -> its group, a tuple (of one without groups)
        self._due = Counter()      # group -> how many of its parameters' gradients are due
        self._submitted = {}       # group -> a callable that waits and writes its gradients

        # In an elastic job a rank that starts alone may have company after a reset: its
        # hooks are in place from the start (as Horovod's, for HOROVOD_ELASTIC).
        if self.process_set.included() and (size() > 1 or _C.is_elastic()):
            self._register_hooks()
            for group in self._form_groups():
                for p in group:
                    self._group_of[p] = group

    def _form_groups(self):
        params = list(self._hooked)
        if self._groups is None:
            return [(p,) for p in params]
        # Every rank forms the same groups, in the parameter order of the set's first rank.
        order = broadcast_object([self._parameter_names[p] for p in params], _first_rank(self.process_set),
                                 process_set=self.process_set)
        position = {name: i for i, name in enumerate(order)}
        missing = [self._parameter_names[p] for p in params if self._parameter_names[p] not in position]
        if missing:
            raise ValueError('DistributedOptimizer: parameters %s are not among the first rank\'s' % missing)
        params.sort(key=lambda p: position[self._parameter_names[p]])
        if isinstance(self._groups, list):
            hooked = {id(p) for p in params}
            formed = [tuple(p for p in group if id(p) in hooked) for group in self._groups]
            listed = {id(p) for group in formed for p in group}
            formed += [(p,) for p in params if id(p) not in listed]
        else:
            formed = [tuple(part) for part in _split(params, self._groups)]
        return [group for group in formed if group]

    def _gradient_due(self, p):
        group = self._group_of[p]
        self._due[group] += 1
        if self._due[group] == len(group):
            self._submitted[group] = self._submit(group)

    def _scale_factors(self):
        # Average divides by the set's size after the sum; the predivide factor moves part
        # of that before it (prescale 1/f, postscale f).
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _submit(self, group):
        grads = [self._zero_filled_grad(p) for p in group]
        if len(group) == 1 and grads[0].is_sparse and not self.sparse_as_dense:
            return self._submit_sparse(group[0])
        # In a group, sparse gradients travel dense: a grouped allreduce is of dense tensors.
        dense = [g.to_dense() if g.is_sparse else g for g in grads]
        prescale, postscale = self._scale_factors()
        # The compression goes to the allreduce, which hands fp16 to kolo's wire compression
        # and writes the result back into the gradient itself.
        options = dict(name=self._parameter_names[group[0]], op=self.op, prescale_factor=prescale,
                       postscale_factor=postscale, process_set=self.process_set, compression=self._compression)
        if len(group) == 1:
            handle = allreduce_async_(dense[0], **options)
            return lambda: self._set_grad(group[0], synchronize(handle))
        handle = grouped_allreduce_async_(dense, **options)

        def finish():
            for p, reduced in zip(group, synchronize(handle)):
                self._set_grad(p, reduced)
        return finish

    def _submit_sparse(self, p):
        handle = sparse_allreduce_async(p.grad, name=self._parameter_names[p], op=self.op,
                                        process_set=self.process_set)
        return lambda: self._set_grad(p, synchronize(handle))  # synchronize calls a sparse handle

    @staticmethod
    def _set_grad(p, reduced):
        if p.grad.is_sparse:
            # Sparse tensors have no set_; this keeps p.grad the same tensor.
            p.grad.zero_().add_(reduced if reduced.is_sparse else reduced.to_sparse())
        elif reduced is not p.grad:
            p.grad.set_(reduced)

    def _forget_submissions(self):
        self._submitted = {}
        self._due.clear()

    def synchronize(self):
        """Waits for every gradient of this step and writes the reduced gradients into the
        parameters' .grad; a gradient that was not due yet is submitted now."""
        if not self.process_set.included():
            self._synchronized = True
            return
        for group in dict.fromkeys(self._group_of.values()):
            if group not in self._submitted:
                self._submitted[group] = self._submit(group)
        try:
            _run_all(self._submitted.values())
        finally:
            self._end_step()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """step() does not synchronize inside this context: for a synchronize() called
        before it (to clip the reduced gradients, say)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn(_STEP_AFTER_SYNCHRONIZE)
            self.synchronize()
        self._synchronized = False
        return super().step(closure)


class _DistributedAdasumOptimizer(_GradientHooks):
    """Horovod's Adasum optimizer: when a parameter's gradient is due, the wrapped optimizer
    steps that parameter alone, and the change it made (not the gradient) is combined across
    the ranks with Adasum; step() applies the combined change to where the parameter was."""

    def _setup(self, named_parameters, compression, backward_passes_per_step):
        self._setup_hooks(named_parameters, compression, backward_passes_per_step, global_process_set)
        self._starts = {}      # parameter -> its value before the local step
        self._submitted = {}   # parameter -> the handle of its change
        self._register_hooks()

    def _gradient_due(self, p):
        self._submitted[p] = self._submit(p)

    def _submit(self, p):
        self._zero_filled_grad(p)
        start = self._starts.get(p)
        if start is None:
            start = self._starts[p] = torch.empty_like(p.data)
        start.copy_(p.data)
        self._step_alone(p)
        p.data.sub_(start)   # p now holds its change, reduced in place
        return allreduce_async_(p.data, name=self._parameter_names[p], op=Adasum, compression=self._compression)

    def _step_alone(self, p):
        saved = [group['params'] for group in self.param_groups]
        try:
            for group in self.param_groups:
                group['params'] = [p] if any(q is p for q in group['params']) else []
            super().step()
        finally:
            for group, params in zip(self.param_groups, saved):
                group['params'] = params

    def _forget_submissions(self):
        self._submitted = {}

    def synchronize(self):
        pass

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError('Skipping synchronization is not supported when using Adasum optimizer.')

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in self._hooked:
            if p not in self._submitted:
                self._submitted[p] = self._submit(p)
        def apply(p, handle):
            try:
                synchronize(handle)  # p holds the combined change
            finally:
                p.data.add_(self._starts[p])  # a parameter again, also after a failure

        try:
            _run_all(lambda p=p, handle=handle: apply(p, handle) for p, handle in self._submitted.items())
        finally:
            self._end_step()
        return loss


def _run_all(waits):
    """Runs every wait, also after one has failed, then raises the first failure: a handle
    not waited for would stay in kolo's table with its tensors, and its gradient would not
    be written back."""
    first_failure = None
    for wait in waits:
        try:
            wait()
        except Exception as e:  # noqa: BLE001 -- raised again below
            if first_failure is None:
                first_failure = e
    if first_failure is not None:
        raise first_failure


def _check_groups(groups):
    if groups is None:
        return
    if not (isinstance(groups, list) or groups > 0):
        raise ValueError('groups should be a non-negative integer or a list of list of torch.Tensor.')
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for p in group:
                if not isinstance(p, torch.Tensor):
                    raise ValueError('groups must consist of torch.Tensor.')
                if id(p) in seen:
                    raise ValueError('A parameter can only appear once in groups.')
                seen.add(id(p))


def _checked_passes(passes):
    """backward_passes_per_step: a count of at least 1 (0 or less would fail only at the first
    backward pass, with a misleading "computed more than backward_passes_per_step times")."""
    if isinstance(passes, bool) or not isinstance(passes, numbers.Integral) or passes < 1:
        raise ValueError(f'backward_passes_per_step must be an integer of at least 1, not {passes!r}')
    return int(passes)


def _split(items, n):
    """n consecutive parts of items, as even as can be (the first ones one longer)."""
    quotient, remainder = divmod(len(items), n)
    bounds = [i * quotient + min(i, remainder) for i in range(n + 1)]
    return [items[bounds[i]:bounds[i + 1]] for i in range(n)]


def _first_rank(process_set):
    ranks = getattr(process_set, 'ranks', None)
    return ranks[0] if ranks else 0


def _wrap(optimizer, mixin):
    """An instance of mixin + optimizer's class over optimizer's param groups: the groups
    are the same dicts (a learning-rate scheduler of the original still applies), the state
    starts as the original's, and attributes a custom optimizer set in its __init__ carry
    over. The class's own __init__ is not called again: it would reset its options to their
    defaults."""
    cls = type(optimizer.__class__.__name__, (mixin, optimizer.__class__), {})
    wrapped = cls.__new__(cls)
    torch.optim.Optimizer.__init__(wrapped, optimizer.param_groups, optimizer.defaults)
    wrapped.state.update(optimizer.state)
    for key, value in vars(optimizer).items():
        if key not in vars(wrapped) and not _patched_method(optimizer, key, value):
            setattr(wrapped, key, value)
    return wrapped


def _patched_method(optimizer, key, value):
    """Whether `value` stands on the instance in place of one of its class's methods (an LR
    scheduler's step counter, torch 1.13's bound to the original, 2.x's a plain function): it
    must not carry over, or the wrapper would step the original without the reduction. Other
    callables (a schedule, a model a custom optimizer keeps) do."""
    return callable(getattr(type(optimizer), key, None)) or getattr(value, '__self__', None) is optimizer


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps `optimizer` (a torch.optim.Optimizer) so that gradients are reduced across the
    ranks of `process_set` before each step, as horovod.torch.DistributedOptimizer.

    Each gradient is submitted the moment backward produces it (on the last of
    backward_passes_per_step passes; the others accumulate locally), overlapping the rest of
    backward; step() waits for them all. synchronize() waits without stepping (to clip the
    reduced gradients: then step() inside skip_synchronize()).

    named_parameters: (name, parameter) pairs naming the reductions, usually
        model.named_parameters(); every parameter of the optimizer must be named, uniquely.
    compression: Compression.none or Compression.fp16 (what travels).
    op: Average, Sum, or Adasum (the ranks' optimizer updates are combined, not the
        gradients; global process set only).
    gradient_predivide_factor: with Average, gradients are divided by it before the sum and
        multiplied by factor / size after it.
    groups: a number of groups to split the parameters into, or a list of lists of
        parameters (the others are one group each); a group is reduced as one grouped
        allreduce once all its gradients are due. num_groups is its deprecated name.
    sparse_as_dense: reduce sparse gradients as dense tensors (allreduce) rather than by
        allgathering their indices and values.
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError('gradient_predivide_factor not supported with op != Average')
    if num_groups != 0:
        warnings.warn('Parameter `num_groups` has been replaced by `groups` and will be removed '
                      'in v0.23.0.', DeprecationWarning)
        if groups is None:
            groups = num_groups

    if op != Adasum or size() == 1:
        wrapped = _wrap(optimizer, _DistributedOptimizer)
        wrapped._setup(named_parameters, compression, backward_passes_per_step, op,
                       gradient_predivide_factor, groups, sparse_as_dense, process_set)
        return wrapped
    if process_set != global_process_set:
        raise NotImplementedError('Adasum does not support non-global process sets yet.')
    wrapped = _wrap(optimizer, _DistributedAdasumOptimizer)
    wrapped._setup(named_parameters, compression, backward_passes_per_step)
    return wrapped
