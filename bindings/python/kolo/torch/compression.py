"""Gradient compression, as horovod/torch/compression.py: a Compressor turns a tensor into the
one sent and back. allreduce hands Compression.fp16 of float32/float64 tensors to kolo's own
wire compression instead (mpi_ops.py), so those are never cast in Python; any other
Compressor, a user's subclass included, runs its compress/decompress here."""
import torch


class Compressor:
    """Interface for compressing and decompressing a given tensor."""

    @staticmethod
    def compress(tensor):
        """Returns the tensor to send and the context decompress needs."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        """Returns the tensor that compress was given, from the one received."""
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16; other dtypes as they are."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point:
            return tensor.type(torch.float16), tensor.dtype
        return tensor, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        if ctx.is_floating_point:
            return tensor.type(ctx)
        return tensor


class Compression:
    """The compressors, by name (hvd.Compression.none, hvd.Compression.fp16)."""
    none = NoneCompressor
    fp16 = FP16Compressor
