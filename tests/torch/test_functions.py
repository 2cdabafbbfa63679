"""hvd.broadcast_parameters, broadcast_optimizer_state, broadcast_object, allgather_object:
every rank starts from its own values (its rank as the seed) and must end with the root's,
rebuilt here from the root's seed. The root is the last rank, so not always rank 0."""
import pickle

import pytest
import torch

import kolo.torch as hvd
from split_sets import evens_and_odds


def root():
    return hvd.size() - 1


def make_model(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    with torch.no_grad():
        model[1].running_mean.add_(seed)
        model[1].num_batches_tracked.fill_(seed)
    return model


def assert_same(actual, expected, where='value'):
    """Equal values, recursively, tensors by dtype, shape and bits, other values by type too."""
    if torch.is_tensor(expected):
        assert torch.is_tensor(actual) and actual.dtype == expected.dtype and torch.equal(actual, expected), where
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), where
        for key in expected:
            assert_same(actual[key], expected[key], '%s[%r]' % (where, key))
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, '%s[%d]' % (where, i))
    else:
        assert type(actual) is type(expected) and actual == expected, '%s: %r != %r' % (where, actual, expected)


# ---- broadcast_parameters ----------------------------------------------------------------------

def test_broadcast_parameters_of_a_state_dict_includes_the_buffers():
    model = make_model(hvd.rank())
    hvd.broadcast_parameters(model.state_dict(), root_rank=root())
    assert_same(model.state_dict(), make_model(root()).state_dict())


@pytest.mark.parametrize('form', ['named_parameters_list', 'named_parameters', 'parameters', 'parameters_list'])
def test_broadcast_parameters_of_parameters(form):
    model = make_model(hvd.rank())
    params = {'named_parameters_list': lambda: list(model.named_parameters()),
              'named_parameters': model.named_parameters, 'parameters': model.parameters,
              'parameters_list': lambda: list(model.parameters())}[form]()
    hvd.broadcast_parameters(params, root_rank=root())
    expected = make_model(root())
    for (name, p), q in zip(model.named_parameters(), expected.parameters()):
        assert torch.equal(p, q), name
        assert p.requires_grad and p.grad_fn is None   # still a leaf of autograd
    # Buffers are not parameters: each rank keeps its own.
    assert_same(model[1].running_mean, make_model(hvd.rank())[1].running_mean)


def test_broadcast_parameters_refuses_other_types():
    with pytest.raises(ValueError, match='invalid params of type'):
        hvd.broadcast_parameters(42, root_rank=0)


# ---- broadcast_optimizer_state ------------------------------------------------------------------

def loss_of(model, seed):
    g = torch.Generator().manual_seed(1000 + seed)
    x, y = torch.randn(6, 3, generator=g), torch.randn(6, 2, generator=g)
    return ((model(x) - y) ** 2).mean()


OPTIMIZERS = {
    'sgd_momentum': lambda params, seed: torch.optim.SGD(params, lr=0.1 * (seed + 1), momentum=0.5 + 0.1 * seed,
                                                         nesterov=True),
    'adam': lambda params, seed: torch.optim.Adam(params, lr=0.01 * (seed + 1), betas=(0.8 + 0.01 * seed, 0.99),
                                                  amsgrad=seed % 2 == 0),
    'adagrad': lambda params, seed: torch.optim.Adagrad(params, lr=0.1, initial_accumulator_value=0.1 * seed),
    'rmsprop': lambda params, seed: torch.optim.RMSprop(params, lr=0.01, momentum=0.1 * seed, centered=True),
    'lbfgs': lambda params, seed: torch.optim.LBFGS(params, lr=0.5 + 0.1 * seed, history_size=3 + seed),
}


def trained_optimizer(kind, seed, steps):
    """An optimizer of `kind` with seed-dependent options, after `steps` steps on seed-dependent
    data (Adagrad has state before any)."""
    model = make_model(0)
    optimizer = OPTIMIZERS[kind](model.parameters(), seed)
    model.train()
    for step in range(steps):
        def closure():
            optimizer.zero_grad()
            loss = loss_of(model, seed * 10 + step)
            loss.backward()
            return loss
        optimizer.step(closure)
    return model, optimizer


def assert_same_optimizer_state(optimizer, expected):
    assert_same(optimizer.state_dict(), expected.state_dict(), 'state_dict()')


@pytest.mark.parametrize('kind', sorted(OPTIMIZERS))
def test_broadcast_optimizer_state_gives_every_rank_the_roots_options_and_state(kind):
    _, optimizer = trained_optimizer(kind, hvd.rank(), steps=1 + hvd.rank() % 2)
    hvd.broadcast_optimizer_state(optimizer, root_rank=root())
    _, expected = trained_optimizer(kind, root(), steps=1 + root() % 2)
    assert_same_optimizer_state(optimizer, expected)


def test_broadcast_optimizer_state_overwrites_the_state_tensors_in_place():
    # Adam's moments: a learning-rate scheduler or a checkpoint may hold them.
    model, optimizer = trained_optimizer('adam', hvd.rank(), steps=1)
    before = {p: dict(optimizer.state[p]) for p in model.parameters()}
    hvd.broadcast_optimizer_state(optimizer, root_rank=root())
    for p in model.parameters():
        assert optimizer.state[p]['exp_avg'] is before[p]['exp_avg']
        assert optimizer.state[p]['exp_avg_sq'] is before[p]['exp_avg_sq']
    assert_same_optimizer_state(optimizer, trained_optimizer('adam', root(), steps=1)[1])


def test_broadcast_optimizer_state_to_ranks_without_state():
    _, optimizer = trained_optimizer('adam', hvd.rank(), steps=1 if hvd.rank() == root() else 0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=root())
    assert_same_optimizer_state(optimizer, trained_optimizer('adam', root(), steps=1)[1])


def test_broadcast_optimizer_state_from_a_root_without_state_starts_it_as_horovod_does():
    # Horovod steps an optimizer without state once on zero gradients, so the root's state
    # is zero momentum buffers, which become every rank's.
    model, optimizer = trained_optimizer('sgd_momentum', hvd.rank(), steps=0 if hvd.rank() == root() else 1)
    hvd.broadcast_optimizer_state(optimizer, root_rank=root())
    state = optimizer.state_dict()['state']
    assert sorted(state) == list(range(len(list(model.parameters()))))
    assert all(torch.count_nonzero(s['momentum_buffer']) == 0 for s in state.values())
    expected = trained_optimizer('sgd_momentum', root(), steps=0)[1]
    assert_same(optimizer.state_dict()['param_groups'], expected.state_dict()['param_groups'])


def test_broadcast_optimizer_state_gives_a_new_optimizer_zero_gradients_as_horovod_does():
    # Horovod's test_broadcast_state_no_grad: a parameter without gradient stays without one;
    # the others get zero gradients, which the script may then broadcast.
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.index = torch.nn.Parameter(torch.tensor([1, 3], dtype=torch.int32), requires_grad=False)
            self.weight = torch.nn.Parameter(torch.rand(4))

    model = Model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=root())
    hvd.broadcast_optimizer_state(optimizer, root_rank=root())
    assert model.index.grad is None
    assert torch.equal(model.weight.grad, torch.zeros(4))
    assert torch.equal(hvd.broadcast(model.weight.grad, root_rank=root()), torch.zeros(4))


def test_broadcast_optimizer_state_of_a_distributed_optimizer():
    # No step is taken: no rank waits in a reduction the others do not join.
    model, optimizer = trained_optimizer('sgd_momentum', hvd.rank(), steps=1)
    wrapped = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(wrapped, root_rank=root())
    assert_same_optimizer_state(wrapped, trained_optimizer('sgd_momentum', root(), steps=1)[1])


def test_broadcast_optimizer_state_needs_the_same_param_groups():
    if hvd.size() == 1:
        pytest.skip('the root is the only rank')
    model = make_model(0)
    if hvd.rank() == root():
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    else:   # two groups: the first layer's parameters, then the others
        params = list(model.parameters())
        optimizer = torch.optim.SGD([{'params': params[:2]}, {'params': params[2:]}], lr=0.1)
    if hvd.rank() == root():
        hvd.broadcast_optimizer_state(optimizer, root_rank=root())
    else:
        with pytest.raises(ValueError, match='param groups'):
            hvd.broadcast_optimizer_state(optimizer, root_rank=root())


# ---- objects -----------------------------------------------------------------------------------

def object_of(rank):
    return {'rank': rank, 'tensor': torch.arange(rank + 1.0), 'list': [rank] * (rank + 1),
            'bytes': bytes(range(rank + 1)) * 1000, 'nothing': None}


@pytest.mark.parametrize('name', [None, 'the_object'])
def test_broadcast_object(name):
    mine = object_of(hvd.rank()) if hvd.rank() == root() else None
    result = hvd.broadcast_object(mine, root_rank=root(), name=name)
    assert_same(result, object_of(root()))
    if hvd.rank() == root():
        assert result is mine


def test_broadcast_object_of_a_large_object():
    mine = bytes([hvd.rank()]) * (3 << 20)
    assert hvd.broadcast_object(mine, root_rank=root()) == bytes([root()]) * (3 << 20)


@pytest.mark.parametrize('name', [None, 'the_objects'])
def test_allgather_object(name):
    result = hvd.allgather_object(object_of(hvd.rank()), name=name)
    assert_same(result, [object_of(r) for r in range(hvd.size())])


def test_an_object_that_cannot_be_pickled_raises_on_every_rank_at_once():
    # Before, only the rank that pickled raised; one that caught it and went on left the
    # others waiting until the stall bound.
    unpicklable = lambda: None  # noqa: E731 (pickle refuses lambdas)
    with pytest.raises(Exception) as error:   # the root raises pickle's own error
        hvd.broadcast_object(unpicklable if hvd.rank() == root() else None, root_rank=root())
    if hvd.rank() != root():
        assert isinstance(error.value, pickle.PicklingError)
        assert f'on rank {root()} could not be pickled' in str(error.value)
    last = hvd.size() - 1
    with pytest.raises(Exception) as error:
        hvd.allgather_object(unpicklable if hvd.rank() == last else hvd.rank())
    if hvd.rank() != last:
        assert isinstance(error.value, pickle.PicklingError)
        assert f'on rank {last} could not be pickled' in str(error.value)
    assert hvd.allgather_object(hvd.rank()) == list(range(hvd.size()))   # and the job goes on


def test_within_a_process_set():
    # Both sets at once, each from its last rank.
    with evens_and_odds() as (mine, _):
        set_root = mine.ranks[-1]
        model = make_model(hvd.rank())
        hvd.broadcast_parameters(model.state_dict(), root_rank=set_root, process_set=mine)
        _, optimizer = trained_optimizer('adam', hvd.rank(), steps=1 + hvd.rank() % 2)
        hvd.broadcast_optimizer_state(optimizer, root_rank=set_root, process_set=mine)
        obj = hvd.broadcast_object(object_of(hvd.rank()), root_rank=set_root, process_set=mine)
        gathered = hvd.allgather_object(object_of(hvd.rank()), process_set=mine)

        assert_same(model.state_dict(), make_model(set_root).state_dict())
        assert_same_optimizer_state(optimizer, trained_optimizer('adam', set_root, steps=1 + set_root % 2)[1])
        assert_same(obj, object_of(set_root))
        assert_same(gathered, [object_of(r) for r in mine.ranks])
