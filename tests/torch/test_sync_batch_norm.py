"""hvd.SyncBatchNorm on each rank's rows of a batch must compute what torch's BatchNorm does
on the whole batch in one process: outputs, input gradients (of the sum of every rank's
loss), running statistics, and weight and bias gradients once summed over the ranks. The
ranks' batches differ in size; in one test a rank's is empty."""
import pytest
import torch

import kolo.torch as hvd
from split_sets import evens_and_odds

CHANNELS = 3


def uneven_sizes():
    return [r + 2 for r in range(hvd.size())]


def my_rows(t, sizes):
    start = sum(sizes[:hvd.rank()])
    return t[start:start + sizes[hvd.rank()]]


def layers(reference_class, process_set=hvd.global_process_set, dtype=torch.float64, **options):
    """A SyncBatchNorm and a torch BatchNorm with the same (random) weight and bias."""
    sync = hvd.SyncBatchNorm(CHANNELS, process_set=process_set, **options).to(dtype)
    reference = reference_class(CHANNELS, **options).to(dtype)
    if sync.affine:
        g = torch.Generator().manual_seed(5)
        with torch.no_grad():
            for p, q in zip(sync.parameters(), reference.parameters()):
                p.copy_(torch.randn(CHANNELS, generator=g))
                q.copy_(p)
    return sync, reference


def whole_batch(sizes, tail, seed, dtype=torch.float64):
    """The input of all ranks together, and a weight per output element for the loss."""
    g = torch.Generator().manual_seed(seed)
    shape = (sum(sizes), CHANNELS) + tail
    return (torch.randn(shape, generator=g).to(dtype) * 2 + 1, torch.randn(shape, generator=g).to(dtype))


def summed(t, process_set):
    return hvd.allreduce(t, op=hvd.Sum, process_set=process_set)


def run_and_compare(sync, reference, sizes, tail, seed):
    """One forward and backward of both on batch `seed`; compares everything."""
    x_all, loss_weights = whole_batch(sizes, tail, seed, reference.weight.dtype if reference.affine else torch.float64)
    x = my_rows(x_all, sizes).clone().requires_grad_()
    out = sync(x)
    (out * my_rows(loss_weights, sizes)).sum().backward()
    x_ref = x_all.clone().requires_grad_()
    out_ref = reference(x_ref)
    (out_ref * loss_weights).sum().backward()

    # Every rank reduces before any compares: a rank that fails must not leave the others
    # waiting in a collective.
    grads = {name: summed(getattr(sync, name).grad, sync.process_set) for name, _ in reference.named_parameters()}
    sync.zero_grad()
    torch.testing.assert_close(out, my_rows(out_ref, sizes))
    torch.testing.assert_close(x.grad, my_rows(x_ref.grad, sizes))
    for name, buffer in reference.named_buffers():
        torch.testing.assert_close(getattr(sync, name), buffer, msg=name)
    for name, p in reference.named_parameters():
        torch.testing.assert_close(grads[name], p.grad, msg=name)
    reference.zero_grad()


@pytest.mark.parametrize('reference_class, tail', [
    (torch.nn.BatchNorm1d, ()), (torch.nn.BatchNorm1d, (5,)), (torch.nn.BatchNorm2d, (3, 4)),
    (torch.nn.BatchNorm3d, (2, 2, 3))], ids=['1d', '1d_length', '2d', '3d'])
def test_training_matches_batch_norm_on_the_whole_batch(reference_class, tail):
    sync, reference = layers(reference_class, momentum=0.3)
    for seed in range(3):   # the running statistics accumulate
        run_and_compare(sync, reference, uneven_sizes(), tail, seed)
    assert int(sync.num_batches_tracked) == 3


def test_float32():
    sync, reference = layers(torch.nn.BatchNorm2d, dtype=torch.float32)
    for seed in range(2):
        run_and_compare(sync, reference, uneven_sizes(), (2, 2), seed)


def test_float16_input_is_normalized_in_float32():
    if hvd.size() == 1:
        # One rank normalizes with torch's batch_norm, which torch 1.13 lacks for float16 on CPU.
        pytest.skip('one rank runs torch\'s own batch_norm')
    sync = hvd.SyncBatchNorm(CHANNELS)
    reference = torch.nn.BatchNorm2d(CHANNELS)
    sizes = uneven_sizes()
    x_all, loss_weights = whole_batch(sizes, (2, 2), 0, torch.float16)
    x = my_rows(x_all, sizes).clone().requires_grad_()
    out = sync(x)
    (out * my_rows(loss_weights, sizes)).sum().backward()
    x_ref = x_all.float().requires_grad_()
    (reference(x_ref) * loss_weights.float()).sum().backward()
    assert out.dtype == x.grad.dtype == torch.float16
    torch.testing.assert_close(out.float(), my_rows(reference(x_all.float()), sizes), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(x.grad.float(), my_rows(x_ref.grad, sizes), atol=1e-2, rtol=1e-2)


def test_cumulative_running_average_when_momentum_is_none():
    sync, reference = layers(torch.nn.BatchNorm2d, momentum=None)
    for seed in range(3):
        run_and_compare(sync, reference, uneven_sizes(), (2, 2), seed)


def test_without_affine_parameters_or_running_statistics():
    # Without running statistics eval mode normalizes with the batch's, synchronized too.
    sync, reference = layers(torch.nn.BatchNorm2d, affine=False, track_running_stats=False)
    run_and_compare(sync, reference, uneven_sizes(), (2, 2), 0)
    sync.eval()
    reference.eval()
    run_and_compare(sync, reference, uneven_sizes(), (2, 2), 1)


def test_eval_uses_the_running_statistics():
    sync, reference = layers(torch.nn.BatchNorm2d)
    run_and_compare(sync, reference, uneven_sizes(), (2, 2), 0)
    sync.eval()
    reference.eval()
    # Each rank its own input, of its own size: nothing is synchronized.
    g = torch.Generator().manual_seed(10 + hvd.rank())
    x = torch.randn(1 + hvd.rank(), CHANNELS, 2, 2, generator=g, dtype=torch.float64)
    torch.testing.assert_close(sync(x), reference(x))


def test_statistics_of_a_process_sets_ranks_only():
    with evens_and_odds() as (mine, _):
        sync, reference = layers(torch.nn.BatchNorm2d, process_set=mine)
        # The whole batch is that of the set's ranks: the others have no rows in it.
        sizes = [r + 2 if r in mine.ranks else 0 for r in range(hvd.size())]
        for seed in range(2):
            run_and_compare(sync, reference, sizes, (2, 2), seed)


def test_a_rank_with_an_empty_batch():
    if hvd.size() == 1:
        pytest.skip('needs a second rank with data')
    sync, reference = layers(torch.nn.BatchNorm2d)
    sizes = [0] + [3] * (hvd.size() - 1)
    run_and_compare(sync, reference, sizes, (2, 2), 0)


def test_training_on_one_value_per_channel_in_all_is_an_error():
    sync = hvd.SyncBatchNorm(CHANNELS)
    x = torch.randn(1 if hvd.rank() == 0 else 0, CHANNELS)
    with pytest.raises(ValueError, match='Expected more than 1 value per channel when training'):
        sync(x)


def test_input_must_have_a_channel_dimension():
    with pytest.raises(ValueError, match='expected at least 2D input'):
        hvd.SyncBatchNorm(CHANNELS)(torch.randn(CHANNELS))
