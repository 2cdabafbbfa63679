"""SyncBatchNorm (horovod/torch/sync_batch_norm.py): batch normalization whose batch
statistics are those of every rank's batch together, so that N ranks with batches of B
normalize as one process would with a batch of N*B. Forward allgathers each rank's count,
mean and centred sum of squares (one small tensor per layer) and combines them; backward
allreduces the two per-channel sums the input gradient needs. Plain torch arithmetic, so
CPU and GPU tensors alike."""
import torch
import torch.nn.functional as F
from torch.autograd import Function
from torch.nn.modules.batchnorm import _BatchNorm

from kolo.torch.mpi_ops import Sum, allgather_async, allreduce_async, global_process_set, synchronize


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the (N, C, ...) inputs of every rank of `process_set`
    together (torch.nn.BatchNorm1d/2d/3d's arguments and behaviour otherwise). In training,
    and in eval without running statistics, the statistics are the set's; in eval with
    running statistics, those are used, and nothing is communicated. Every rank of the set
    must run each SyncBatchNorm layer's forward and backward together; a rank's batch may be
    of any size, empty included.

    The weight and bias gradients are this rank's (DistributedOptimizer reduces them);
    the input gradient is that of the sum of every rank's loss.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError('expected at least 2D input (got {}D input)'.format(input.dim()))

    def forward(self, input):
        self._check_input_dim(input)
        tracking = self.training and self.track_running_stats
        if tracking:
            self.num_batches_tracked.add_(1)
        # As _BatchNorm: momentum None is a cumulative average over the batches seen.
        factor = 0.0
        if tracking:
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum

        if not self.training and self.track_running_stats:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                False, 0.0, self.eps)
        running_mean = self.running_mean if tracking else None
        running_var = self.running_var if tracking else None
        if self.process_set.size() == 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, True, factor, self.eps)
        return _SyncBatchNorm.apply(input, self.weight, self.bias, running_mean, running_var,
                                    self.eps, factor, self.process_set)


def _per_channel(t):
    """t's shape with every dimension but the channels' (1) set to 1, for broadcasting."""
    return [1, -1] + [1] * (t.dim() - 2)


class _SyncBatchNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_set):
        # Arithmetic in float32 at least (float16 inputs lose too much), float64 for the ranks'
        # statistics: their counts stay exact, and combining them loses nothing.
        compute = torch.float64 if input.dtype == torch.float64 else torch.float32
        x = input.contiguous().to(compute)
        channels = x.size(1)
        dims = [d for d in range(x.dim()) if d != 1]
        count = x.numel() // channels
        if count > 0:
            var, mean = torch.var_mean(x, dims, unbiased=False)
        else:   # an empty batch on this rank: it adds nothing
            var = mean = x.new_zeros(channels)
        local = torch.cat([mean.new_tensor([count]), mean, var * count]).double().unsqueeze(0)
        gathered = synchronize(allgather_async(local, name='sync_batch_norm.stats', process_set=process_set))

        counts, means, m2s = gathered[:, :1], gathered[:, 1:channels + 1], gathered[:, channels + 1:]
        total = counts.sum()
        if total <= 1:
            raise ValueError('Expected more than 1 value per channel when training, got input size {} '
                             'on this rank and {} values per channel in all'.format(list(input.shape), int(total)))
        mean = (counts * means).sum(0) / total
        var = (m2s + counts * (means - mean) ** 2).sum(0) / total

        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
            unbiased = var * (total / (total - 1))
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)

        shape = _per_channel(x)
        invstd = torch.rsqrt(var + eps).to(compute)
        xhat = (x - mean.to(compute).view(shape)) * invstd.view(shape)
        out = xhat if weight is None else xhat * weight.to(compute).view(shape)
        if bias is not None:
            out = out + bias.to(compute).view(shape)
        ctx.save_for_backward(xhat, weight, invstd)
        ctx.total = total.item()
        ctx.process_set = process_set
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        xhat, weight, invstd = ctx.saved_tensors
        dy = grad_output.contiguous().to(xhat.dtype)
        dims = [d for d in range(dy.dim()) if d != 1]
        shape = _per_channel(dy)
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * xhat).sum(dims)

        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            # The statistics depend on every rank's input: so does each input's gradient.
            sums = synchronize(allreduce_async(torch.cat([sum_dy, sum_dy_xhat]), name='sync_batch_norm.grad_sums',
                                               op=Sum, process_set=ctx.process_set))
            mean_dy, mean_dy_xhat = (sums / ctx.total).split(sum_dy.numel())
            scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
            grad_input = (dy - mean_dy.view(shape) - xhat * mean_dy_xhat.view(shape)) * scale.view(shape)
            grad_input = grad_input.to(grad_output.dtype)
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = sum_dy_xhat.to(weight.dtype)
        if ctx.needs_input_grad[2]:
            grad_bias = sum_dy.to(weight.dtype if weight is not None else grad_output.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None
