#!/usr/bin/python3
"""Horovod's PyTorch synthetic benchmark on kolo: the img/s of training steps on one fixed
random batch per rank, with the gradients averaged by kolo.torch's DistributedOptimizer.

    PYTHONPATH=build/python build/launcher/kolorun -np 2 /usr/bin/python3 \
        examples/pytorch/pytorch_synthetic_benchmark.py --model resnet18 --batch-size 32 --image-size 32 --classes 10

--model is a torchvision net (resnet18, resnet50, ...; random weights) or mnist_convnet,
kolo's MNIST net. It prints what bench/synthetic_benchmark and ddp_benchmark.py print, so
bench/synthetic_benchmark/compare_scaling.py reads all three. --no-kolo runs the same steps
in plain PyTorch (one process, no kolo at all): the baseline of kolo's overhead at np 1.
"""
import argparse
import resource
import timeit

import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim
from torchvision import models

import kolo.torch as hvd
from mnist_convnet import MnistConvNet  # kolo's MNIST net, next to this file

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--model", default="resnet50", help="a torchvision model, or mnist_convnet")
parser.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
parser.add_argument("--image-size", type=int, default=0, help="default: 224, or 28 for mnist_convnet")
parser.add_argument("--classes", type=int, default=0, help="default: 1000, or 10 for mnist_convnet")
parser.add_argument("--num-warmup-batches", type=int, default=10, help="warmup batches, not timed")
parser.add_argument("--num-batches-per-iter", type=int, default=10, help="batches per timed iteration")
parser.add_argument("--num-iters", type=int, default=10, help="timed iterations")
parser.add_argument("--threads", type=int, default=1, help="torch threads per rank")
parser.add_argument("--fp16-allreduce", action="store_true", help="use fp16 compression during allreduce")
parser.add_argument("--use-adasum", action="store_true", help="use the Adasum reduction")
parser.add_argument("--sync-batch-norm", action="store_true", help="torchvision nets: hvd.SyncBatchNorm layers")
parser.add_argument("--no-kolo", action="store_true", help="plain PyTorch in one process: no kolo.torch at all")
args = parser.parse_args()
mnist = args.model == "mnist_convnet"
args.image_size = args.image_size or (28 if mnist else 224)
args.classes = args.classes or (10 if mnist else 1000)


def cpu_seconds():
    """CPU time of this process so far, all its threads (torch's and kolo's background thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if not args.no_kolo:
    hvd.init()
rank = 0 if args.no_kolo else hvd.rank()
size = 1 if args.no_kolo else hvd.size()

# Horovod: one compute thread per rank by default, so that kolo's background thread finds a core.
torch.set_num_threads(args.threads)
torch.manual_seed(1)

if mnist:
    model = MnistConvNet(args.classes)
else:
    norm_layer = hvd.SyncBatchNorm if args.sync_batch_norm and not args.no_kolo else None
    model = getattr(models, args.model)(num_classes=args.classes, norm_layer=norm_layer)

# By default, Adasum doesn't need scaling up learning rate.
lr_scaler = size if not args.use_adasum else 1
optimizer = optim.SGD(model.parameters(), lr=0.01 * lr_scaler)

if not args.no_kolo:
    # Horovod: (optional) compression algorithm.
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    # Horovod: wrap optimizer with DistributedOptimizer.
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average)
    # Horovod: broadcast parameters & optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

# Fixed fake data, different on every rank.
channels = 1 if mnist else 3
generator = torch.Generator().manual_seed(1 + rank)
data = torch.randn(args.batch_size, channels, args.image_size, args.image_size, generator=generator)
target = torch.randint(0, args.classes, (args.batch_size,), generator=generator)


def benchmark_step():
    optimizer.zero_grad()
    output = model(data)
    loss = F.cross_entropy(output, target)
    loss.backward()
    optimizer.step()


def log(s):
    if rank == 0:
        print(s, flush=True)


log("Model: %s" % args.model)
log("Batch size: %d" % args.batch_size)
log("Number of ranks: %d (%d thread%s each), images %dx%dx%d, %d classes, PyTorch %s, %s" % (
    size, args.threads, "" if args.threads == 1 else "s", channels, args.image_size, args.image_size, args.classes,
    torch.__version__, "no kolo" if args.no_kolo else "kolo.torch"))

log("Running warmup...")
timeit.timeit(benchmark_step, number=args.num_warmup_batches)

log("Running benchmark...")
img_secs = []
cpu_start = cpu_seconds()
for x in range(args.num_iters):
    time = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
    img_sec = args.batch_size * args.num_batches_per_iter / time
    log("Iter #%d: %.1f img/sec per rank" % (x, img_sec))
    img_secs.append(img_sec)
cpu_ms_per_image = 1e3 * (cpu_seconds() - cpu_start) / (args.batch_size * args.num_batches_per_iter * args.num_iters)

# Results
img_sec_mean = np.mean(img_secs)
img_sec_conf = 1.96 * np.std(img_secs)
log("Img/sec per rank: %.1f +-%.1f" % (img_sec_mean, img_sec_conf))
log("Total img/sec on %d rank(s): %.1f +-%.1f" % (size, size * img_sec_mean, size * img_sec_conf))
log("CPU time per image on rank 0: %.2f ms" % cpu_ms_per_image)

if not args.no_kolo:
    hvd.shutdown()
