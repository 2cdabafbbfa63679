"""hvd.DistributedOptimizer: N ranks on their own parts of a batch must train as one process
on the whole batch. Every rank runs every test, in the same order; a test needing more than
one rank checks the single-rank behaviour instead where there is one (no hooks: a plain
optimizer), or is skipped on every rank alike."""
import warnings
import weakref

import pytest
import torch

import kolo.torch as hvd
from split_sets import evens_and_odds

PER_RANK = 4   # samples per rank per backward pass
LR = 0.1


def sgd(params):
    return torch.optim.SGD(params, lr=LR)


def sgd_momentum(params):
    return torch.optim.SGD(params, lr=LR, momentum=0.9, weight_decay=0.01)


def adam(params):
    return torch.optim.Adam(params, lr=0.01)


def make_model(dtype=torch.float64):
    torch.manual_seed(1234)  # the same model on every rank and in the reference
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).to(dtype)


def whole_batch(index, dtype=torch.float64):
    """Batch `index` of all ranks together; rank r's part is rows r*PER_RANK... ."""
    g = torch.Generator().manual_seed(100 + index)
    n = hvd.size() * PER_RANK
    return torch.randn(n, 5, generator=g).to(dtype), torch.randn(n, 2, generator=g).to(dtype)


def parts_of(ranks):
    """Selects the rows of `ranks` from a whole batch."""
    return lambda t: torch.cat([t[r * PER_RANK:(r + 1) * PER_RANK] for r in ranks])


def my_part(t):
    return parts_of([hvd.rank()])(t)


def whole(t):
    return t


def mse(model, x, y):
    return ((model(x) - y) ** 2).mean()


def train(optimizer, model, steps=3, passes=1, dtype=torch.float64, rows=my_part, loss_scale=1.0):
    """`steps` steps of `passes` backward passes each, on the `rows` of each batch: this
    rank's part, or for the single-process reference the whole batch (or the parts of a
    process set's ranks)."""
    for step in range(steps):
        optimizer.zero_grad()
        for k in range(passes):
            x, y = whole_batch(step * passes + k, dtype)
            (loss_scale * mse(model, rows(x), rows(y))).backward()
        optimizer.step()
    return model


def reference(make_optimizer, dtype=torch.float64, rows=whole, **kwargs):
    model = make_model(dtype)
    return train(make_optimizer(model.parameters()), model, dtype=dtype, rows=rows, **kwargs)


def distributed(make_optimizer, dtype=torch.float64, steps=3, passes=1, **options):
    model = make_model(dtype)
    optimizer = hvd.DistributedOptimizer(make_optimizer(model.parameters()),
                                         named_parameters=model.named_parameters(), **options)
    return train(optimizer, model, steps=steps, passes=passes, dtype=dtype)


def assert_same_parameters(model, expected, atol=1e-12, rtol=1e-10):
    for (name, p), q in zip(model.named_parameters(), expected.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=atol, rtol=rtol, msg=name)


def needs_several_ranks():
    # Decided at run time (kolo starts in a fixture), alike on every rank.
    if hvd.size() == 1:
        pytest.skip('one rank runs no hooks (a plain optimizer), as in Horovod')


# ---- the reductions ----------------------------------------------------------------------------

@pytest.mark.parametrize('make_optimizer', [sgd_momentum, adam], ids=['sgd_momentum', 'adam'])
def test_average_matches_one_process_on_the_whole_batch(make_optimizer):
    assert_same_parameters(distributed(make_optimizer), reference(make_optimizer))


def test_sum_matches_the_sum_of_the_ranks_losses():
    assert_same_parameters(distributed(sgd, op=hvd.Sum), reference(sgd, loss_scale=hvd.size()))


@pytest.mark.parametrize('factor', [2.0, 0.5])
def test_gradient_predivide_factor_still_averages(factor):
    assert_same_parameters(distributed(sgd_momentum, gradient_predivide_factor=factor), reference(sgd_momentum))


@pytest.mark.parametrize('how', ['constructor', 'setter'])
def test_backward_passes_per_step_accumulates_locally_then_reduces_once(how):
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd_momentum(model.parameters()), named_parameters=model.named_parameters(),
                                         backward_passes_per_step=2 if how == 'constructor' else 1)
    if how == 'setter':
        optimizer.set_backward_passes_per_step(2)
    train(optimizer, model, passes=2)
    assert_same_parameters(model, reference(sgd_momentum, passes=2))


def test_fp16_compression_matches_within_half_precision():
    model = distributed(sgd_momentum, dtype=torch.float32, compression=hvd.Compression.fp16)
    assert_same_parameters(model, reference(sgd_momentum, dtype=torch.float32), atol=2e-3, rtol=2e-3)


def test_fp16_compression_sends_half_precision():
    # Sum: the reduced gradients are sums of float16 values, so float16 values themselves.
    model = make_model(torch.float32)
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters(),
                                         compression=hvd.Compression.fp16, op=hvd.Sum)
    x, y = whole_batch(0, torch.float32)
    mse(model, my_part(x), my_part(y)).backward()
    optimizer.synchronize()
    expected = make_model(torch.float32)
    (hvd.size() * mse(expected, x, y)).backward()
    for p, e in zip(model.parameters(), expected.parameters()):
        assert p.grad.dtype == torch.float32
        torch.testing.assert_close(p.grad, e.grad, atol=2e-3, rtol=2e-3)
        if hvd.size() > 1:   # one rank reduces nothing (no hooks)
            assert torch.equal(p.grad, p.grad.half().float())


@pytest.mark.parametrize('groups', ['two', 'list', 'num_groups'])
def test_groups_reduce_the_same_gradients(groups):
    model = make_model()
    first, _, last = model
    options = {'two': dict(groups=2), 'list': dict(groups=[[first.weight, last.bias]]),
               'num_groups': dict(num_groups=2)}[groups]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        optimizer = hvd.DistributedOptimizer(sgd_momentum(model.parameters()),
                                             named_parameters=model.named_parameters(), **options)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught) == (groups == 'num_groups')
    if hvd.size() > 1:
        formed = set(optimizer._group_of.values())
        if groups == 'list':
            assert (first.weight, last.bias) in formed and len(formed) == 3
        else:
            assert sorted(len(g) for g in formed) == [2, 2]
    train(optimizer, model)
    assert_same_parameters(model, reference(sgd_momentum))


@pytest.mark.parametrize('sparse_as_dense', [False, True])
def test_sparse_gradients(sparse_as_dense):
    def embedding_model():
        torch.manual_seed(99)
        return torch.nn.ModuleDict({'embedding': torch.nn.Embedding(12, 3, sparse=True),
                                    'head': torch.nn.Linear(3, 1)}).double()

    def loss(model, rank):
        # Each rank looks up other rows (some shared), so the gathered indices overlap.
        rows = torch.tensor([rank, rank + 1, 7, (3 * rank) % 12])
        target = torch.linspace(-1, 1, 4, dtype=torch.float64) * (rank + 1)
        return ((model['head'](model['embedding'](rows)).squeeze(1) - target) ** 2).mean()

    model = embedding_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters(),
                                         sparse_as_dense=sparse_as_dense)
    expected = embedding_model()
    expected_optimizer = sgd(expected.parameters())
    for _ in range(2):
        optimizer.zero_grad()
        loss(model, hvd.rank()).backward()
        assert model['embedding'].weight.grad.is_sparse
        optimizer.step()
        expected_optimizer.zero_grad()
        (sum(loss(expected, r) for r in range(hvd.size())) / hvd.size()).backward()
        expected_optimizer.step()
    assert_same_parameters(model, expected)


def test_a_parameter_that_some_ranks_do_not_reach_is_reduced_as_zeros():
    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(7)
            self.body = torch.nn.Linear(5, 4)
            self.heads = torch.nn.ModuleList([torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)])

        def forward(self, x, head):
            return self.heads[head](torch.tanh(self.body(x)))

    def loss(model, rank):
        x, y = whole_batch(0)
        part = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
        return ((model(x[part], rank % 2) - y[part]) ** 2).mean()

    model = TwoHeads().double()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    loss(model, hvd.rank()).backward()   # rank r's backward reaches head r % 2 only
    optimizer.step()
    expected = TwoHeads().double()
    expected_optimizer = sgd(expected.parameters())
    (sum(loss(expected, r) for r in range(hvd.size())) / hvd.size()).backward()
    expected_optimizer.step()
    assert_same_parameters(model, expected)


def test_load_state_dict_resumes_from_a_checkpoint():
    checkpoint_model = make_model()
    checkpoint = sgd_momentum(checkpoint_model.parameters())
    train(checkpoint, checkpoint_model, steps=1, rows=whole)   # momentum buffers, on every rank alike

    model = make_model()
    model.load_state_dict(checkpoint_model.state_dict())
    optimizer = hvd.DistributedOptimizer(sgd_momentum(model.parameters()), named_parameters=model.named_parameters())
    optimizer.load_state_dict(checkpoint.state_dict())
    train(optimizer, model, steps=2)
    train(checkpoint, checkpoint_model, steps=2, rows=whole)
    assert_same_parameters(model, checkpoint_model)


@pytest.mark.parametrize('which', ['own', 'evens'])
def test_a_process_set_reduces_over_its_ranks_and_a_rank_outside_it_steps_alone(which):
    with evens_and_odds() as (mine, evens):
        process_set = mine if which == 'own' else evens
        model = distributed(sgd_momentum, process_set=process_set)
        ranks = process_set.ranks if process_set.included() else [hvd.rank()]
        assert_same_parameters(model, reference(sgd_momentum, rows=parts_of(ranks)))


# ---- synchronize(), skip_synchronize() -------------------------------------------------------------

def test_skip_synchronize_steps_on_the_gradients_synchronize_produced():
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    x, y = whole_batch(0)
    mse(model, my_part(x), my_part(y)).backward()
    optimizer.synchronize()
    # Changed differently on each rank after the reduction: a second reduction would undo it.
    for p in model.parameters():
        p.grad.add_(hvd.rank())
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with optimizer.skip_synchronize():
            optimizer.step()

    expected = make_model()
    mse(expected, x, y).backward()
    with torch.no_grad():
        for p in expected.parameters():
            p -= LR * (p.grad + hvd.rank())
    assert_same_parameters(model, expected)


def test_step_after_synchronize_without_skip_synchronize_warns():
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    x, y = whole_batch(0)
    mse(model, my_part(x), my_part(y)).backward()
    optimizer.synchronize()
    with pytest.warns(UserWarning, match='skip_synchronize'):
        optimizer.step()


# ---- Adasum ------------------------------------------------------------------------------------

def adasum(a, b):
    """a ⊕ b of Maleki et al. (docs/adasum.md)."""
    dot, aa, bb = (a * b).sum(), (a * a).sum(), (b * b).sum()
    return (1 - dot / (2 * aa) if aa > 0 else 1) * a + (1 - dot / (2 * bb) if bb > 0 else 1) * b


def test_adasum_combines_the_ranks_updates():
    def one_rank_update(rank):
        """What rank `rank`'s SGD step would change each parameter by, alone."""
        model = make_model()
        x, y = whole_batch(0)
        part = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
        mse(model, x[part], y[part]).backward()
        return [-LR * p.grad for p in model.parameters()]

    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters(),
                                         op=hvd.Adasum)
    x, y = whole_batch(0)
    n = hvd.size()
    if n & (n - 1):
        with pytest.raises(ValueError, match='power-of-two'):
            mse(model, my_part(x), my_part(y)).backward()
            optimizer.step()
        return
    mse(model, my_part(x), my_part(y)).backward()
    optimizer.step()

    updates = [one_rank_update(r) for r in range(n)]
    expected = make_model()
    with torch.no_grad():
        for i, p in enumerate(expected.parameters()):
            level = [u[i] for u in updates]
            while len(level) > 1:   # the binary tree ((v0 ⊕ v1) ⊕ (v2 ⊕ v3)) ...
                level = [adasum(level[j], level[j + 1]) for j in range(0, len(level), 2)]
            p += level[0]
    assert_same_parameters(model, expected)


def test_adasum_optimizer_refuses_skip_synchronize():
    needs_several_ranks()
    if hvd.size() & (hvd.size() - 1):
        pytest.skip('Adasum needs a power-of-two number of ranks')
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters(),
                                         op=hvd.Adasum)
    with pytest.raises(AssertionError, match='not supported when using Adasum'):
        with optimizer.skip_synchronize():
            pass


# ---- the wrapper ---------------------------------------------------------------------------------

def test_the_wrapper_is_an_instance_of_the_wrapped_class_with_its_options_and_state():
    model = make_model()
    original = sgd_momentum(model.parameters())
    x, y = whole_batch(0)
    mse(model, x, y).backward()
    original.step()   # a momentum buffer per parameter
    optimizer = hvd.DistributedOptimizer(original, named_parameters=model.named_parameters())
    assert isinstance(optimizer, torch.optim.SGD) and type(optimizer).__name__ == 'SGD'
    assert optimizer.defaults == original.defaults
    assert optimizer.param_groups[0]['momentum'] == 0.9
    assert all(torch.equal(optimizer.state[p]['momentum_buffer'], original.state[p]['momentum_buffer'])
               for p in model.parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    optimizer.zero_grad()
    optimizer.step()
    scheduler.step()
    assert optimizer.param_groups[0]['lr'] == LR / 2


def test_a_custom_optimizers_callable_attributes_carry_over_but_not_a_schedulers_patched_step():
    model = make_model()

    class Scheduled(torch.optim.SGD):
        def __init__(self, params, schedule, keeps):
            super().__init__(params, lr=LR)
            self.schedule, self.keeps = schedule, keeps

    def schedule(t):
        return 0.5 ** t

    original = Scheduled(model.parameters(), schedule, keeps=model)
    torch.optim.lr_scheduler.StepLR(original, step_size=1)   # patches original.step, bound to it
    assert 'step' in vars(original)
    optimizer = hvd.DistributedOptimizer(original, named_parameters=model.named_parameters())
    assert optimizer.schedule is schedule and optimizer.keeps is model   # once dropped as callables
    assert 'step' not in vars(optimizer)   # it would step the original, without the reduction
    # torch 2.x's scheduler patches a plain function, with no __self__.
    original = Scheduled(model.parameters(), schedule, keeps=model)
    original.step = lambda closure=None: None
    assert 'step' not in vars(hvd.DistributedOptimizer(original, named_parameters=model.named_parameters()))


def test_a_dropped_optimizer_leaves_no_hooks_behind():
    needs_several_ranks()
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    dropped = weakref.ref(optimizer)
    del optimizer   # gone at once, not at the next garbage collection
    assert dropped() is None
    x, y = whole_batch(0)
    mse(model, my_part(x), my_part(y)).backward()   # no reductions: nothing to wait for


# ---- errors --------------------------------------------------------------------------------------

def test_backward_passes_per_step_must_be_at_least_one():
    model = make_model()
    for passes in (0, -1, 1.5):
        with pytest.raises(ValueError, match='backward_passes_per_step must be an integer of at least 1'):
            hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters(),
                                     backward_passes_per_step=passes)
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    with pytest.raises(ValueError, match='at least 1'):
        optimizer.set_backward_passes_per_step(0)
    assert optimizer.backward_passes_per_step == 1


def test_named_parameters_must_be_unique_tuples_naming_every_parameter():
    model = make_model()
    (w, b), rest = list(model.named_parameters())[:2], list(model.named_parameters())[2:]
    with pytest.raises(ValueError, match='Found duplicates: a'):
        hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=[('a', w[1]), ('a', b[1])] + rest)
    with pytest.raises(ValueError, match='sequence of tuples'):
        hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=list(model.parameters()))
    with pytest.raises(ValueError, match='were not named'):
        hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=rest)


def test_groups_must_be_positive_or_lists_of_distinct_tensors():
    model = make_model()
    w = model[0].weight
    for groups, message in [(-1, 'non-negative integer'), ([[w, 3]], 'consist of torch.Tensor'),
                            ([[w], [w]], 'only appear once')]:
        with pytest.raises(ValueError, match=message):
            hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters(),
                                     groups=groups)


def test_gradient_predivide_factor_needs_average():
    model = make_model()
    with pytest.raises(ValueError, match='op != Average'):
        hvd.DistributedOptimizer(sgd(model.parameters()), op=hvd.Sum, gradient_predivide_factor=2.0)


def test_adasum_needs_the_global_process_set():
    model = make_model()
    subset = hvd.ProcessSet([0])
    if hvd.size() == 1:   # one rank: a plain optimizer, as in Horovod
        hvd.DistributedOptimizer(sgd(model.parameters()), op=hvd.Adasum, process_set=subset)
        return
    with pytest.raises(NotImplementedError, match='non-global process sets'):
        hvd.DistributedOptimizer(sgd(model.parameters()), op=hvd.Adasum, process_set=subset)


def test_more_backward_passes_than_backward_passes_per_step_is_an_error():
    needs_several_ranks()
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    x, y = whole_batch(0)
    mse(model, my_part(x), my_part(y)).backward()
    with pytest.raises(AssertionError, match='more than backward_passes_per_step'):
        mse(model, my_part(x), my_part(y)).backward()
    optimizer.synchronize()   # the first pass's reductions


def test_zero_grad_between_backward_and_step_is_an_error():
    needs_several_ranks()
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    x, y = whole_batch(0)
    mse(model, my_part(x), my_part(y)).backward()
    with pytest.raises(AssertionError, match='zero_grad\\(\\) was called after loss.backward\\(\\)'):
        optimizer.zero_grad()
    optimizer.step()
    optimizer.zero_grad()
