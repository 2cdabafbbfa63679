"""Gradient compression (horovod/torch/compression.py)."""


class Compression:
    none = None
    fp16 = None
