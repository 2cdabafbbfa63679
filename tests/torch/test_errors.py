"""kolo.torch's errors: what a rank does wrong raises at once on that rank; what ranks disagree
on raises KoloError (code "Mismatch", kolo's message) on every rank; and the job goes on."""
import pytest
import torch

import kolo.torch as hvd

needs_two = pytest.mark.skipif(hvd.size() < 2, reason='ranks can disagree only with two or more')


def test_error_types_are_horovods():
    assert hvd.HorovodInternalError is hvd.KoloError
    assert issubclass(hvd.KoloError, RuntimeError)
    assert issubclass(hvd.InvalidArgumentError, hvd.KoloError)
    assert issubclass(hvd.InvalidArgumentError, ValueError)


@pytest.mark.parametrize('dtype', [torch.bool, torch.complex64], ids=str)
def test_dtypes_kolo_lacks_raise_at_once(dtype):
    tensor = torch.zeros(3, dtype=dtype)
    for call in (hvd.allreduce, hvd.allgather, lambda t: hvd.broadcast(t, 0), hvd.alltoall,
                 hvd.reducescatter, hvd.allreduce_async_):
        with pytest.raises(hvd.InvalidArgumentError, match=r'dtype .* is not supported') as error:
            call(tensor)
        assert error.value.code == 'InvalidArgument'


def test_an_unknown_op_raises_at_once_and_the_job_goes_on():
    for call in (lambda t: hvd.allreduce(t, op=99), lambda t: hvd.allreduce_async_(t, op=-1),
                 lambda t: hvd.grouped_allreduce([t], op=99), lambda t: hvd.reducescatter_async(t, op=99)):
        with pytest.raises(ValueError, match='unknown reduction op') as error:
            call(torch.ones(hvd.size(), 2))
        assert error.value.code == 'InvalidArgument'
    assert torch.equal(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full([3], float(hvd.size())))


def test_a_grouped_op_on_no_tensors_raises_at_once():
    # It once crashed the process (kolo's one failed handle for an empty group had no tensor).
    for call in (hvd.grouped_allreduce, hvd.grouped_allreduce_async, hvd.grouped_allreduce_async_,
                 hvd.grouped_allgather, hvd.grouped_allgather_async, hvd.grouped_reducescatter,
                 hvd.grouped_reducescatter_async):
        with pytest.raises(hvd.InvalidArgumentError, match='empty list of tensors'):
            call([])
    assert torch.equal(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full([3], float(hvd.size())))


def test_a_bad_root_raises_at_once():
    for root in (hvd.size(), -1):
        with pytest.raises(hvd.InvalidArgumentError) as error:
            hvd.broadcast(torch.zeros(2), root)
        assert error.value.code == 'InvalidArgument'
    with pytest.raises(ValueError, match='root_rank'):
        hvd.broadcast(torch.zeros(2), 0.5)


def test_a_tensor_on_an_unsupported_device_raises_at_once():
    with pytest.raises(hvd.InvalidArgumentError, match='meta'):
        hvd.allreduce(torch.zeros(2, device='meta'))


def test_arguments_horovod_rejects():
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.poll(10 ** 9)
    with pytest.raises(ValueError, match='no id'):
        hvd.allreduce(torch.zeros(1), process_set=hvd.ProcessSet([0]))
    with pytest.raises(ValueError, match='must be a 1-D integer tensor'):
        hvd.alltoall(torch.zeros(2), splits=torch.ones(1, 1, dtype=torch.int32))


@needs_two
def test_a_name_already_in_flight_raises_at_once():
    # Rank 0 submits 'duplicate' twice before the others submit it at all, so the first one
    # is surely still in flight when the second comes.
    tensor = torch.ones(4)
    if hvd.rank() == 0:
        first = hvd.allreduce_async(tensor, name='duplicate', op=hvd.Sum)
        with pytest.raises(hvd.InvalidArgumentError, match='duplicate') as error:
            hvd.allreduce_async(tensor, name='duplicate', op=hvd.Sum)
        assert error.value.code == 'InvalidArgument'
        hvd.broadcast(torch.zeros(1), 0, name='duplicate.checked')
    else:
        hvd.broadcast(torch.zeros(1), 0, name='duplicate.checked')
        first = hvd.allreduce_async(tensor, name='duplicate', op=hvd.Sum)
    assert torch.equal(hvd.synchronize(first), torch.full((4,), float(hvd.size())))


def mismatch(call, name):
    """Runs call() on every rank and returns the KoloError it raised."""
    with pytest.raises(hvd.KoloError) as error:
        call()
    assert error.value.code == 'Mismatch', str(error.value)
    assert name in str(error.value)
    return error.value


@needs_two
def test_ranks_that_disagree_get_a_mismatch_on_every_rank():
    r = hvd.rank()
    mismatch(lambda: hvd.allreduce(torch.zeros(2 + r), name='mismatch.shape'), 'mismatch.shape')
    mismatch(lambda: hvd.allreduce(torch.zeros(2, dtype=torch.float32 if r else torch.float64),
                                   name='mismatch.dtype'), 'mismatch.dtype')
    mismatch(lambda: hvd.allreduce(torch.zeros(2), name='mismatch.op', op=hvd.Sum if r else hvd.Max),
             'mismatch.op')
    mismatch(lambda: hvd.allgather(torch.zeros(1, 2 + r), name='mismatch.allgather'), 'mismatch.allgather')
    mismatch(lambda: hvd.broadcast(torch.zeros(2), r, name='mismatch.root'), 'mismatch.root')
    mismatch(lambda: hvd.synchronize(hvd.grouped_allreduce_async([torch.zeros(1), torch.zeros(1 + r)],
                                                                 name='mismatch.group')), 'mismatch.group')
    # The job goes on.
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(hvd.size())))


def test_adasum_on_a_number_of_ranks_that_is_no_power_of_two_raises_at_once():
    if hvd.size() & (hvd.size() - 1) == 0:
        assert hvd.allreduce(torch.ones(2), op=hvd.Adasum).shape == (2,)
    else:
        with pytest.raises(hvd.InvalidArgumentError, match='power-of-two'):
            hvd.allreduce(torch.ones(2), op=hvd.Adasum)


@needs_two
def test_a_failed_gradient_leaves_no_handle_behind_and_the_others_are_written():
    # 'a' has another shape on every rank (a Mismatch everywhere); 'b' is fine. synchronize()
    # submits them in parameter order, so 'a' fails first: 'b' must still be waited for and
    # written, and no handle stay in kolo.torch's table.
    from kolo.torch import mpi_ops
    a = torch.nn.Parameter(torch.zeros(2 + hvd.rank()))
    b = torch.nn.Parameter(torch.zeros(3))
    a.grad = torch.ones_like(a)
    b.grad = torch.full_like(b, float(hvd.rank()))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD([a, b], lr=0.1),
                                         named_parameters=[('failing.a', a), ('failing.b', b)], op=hvd.Sum)
    mismatch(optimizer.synchronize, 'failing.a')
    assert not mpi_ops._handle_map
    assert torch.equal(b.grad, torch.full((3,), float(sum(range(hvd.size())))))
