#!/usr/bin/python3
"""PyTorch DDP's side of compare_scaling.py: Horovod's synthetic benchmark
(pytorch_synthetic_benchmark.py) under torch.nn.parallel.DistributedDataParallel on the
gloo backend, printing what synthetic_benchmark prints, so one parser reads both.
Needs Debian's python3-torch; starts its own --np processes (torch.multiprocessing), which
meet through a file (no network but loopback: gloo's pairs connect over lo).

    /usr/bin/python3 bench/synthetic_benchmark/ddp_benchmark.py --np 2 --model resnet18 --batch-size 32 \
        --image-size 32 --classes 10 --threads 1 --num-iters 5

The nets are tests/parity/export_fixtures.py's, the same definitions kolo-parity checks kolo's
against. A step is zero_grad, forward, cross-entropy, backward (DDP averages the gradients
in buckets as backward produces them) and SGD with lr 0.01 x ranks, on one fixed random
batch per rank; the times are rank 0's.
"""
import argparse
import os
import resource
import sys
import tempfile
import timeit

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "parity"))
from export_fixtures import make_net  # noqa: E402  (the same nets as kolo's)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=1, help="processes (ranks)")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--image-size", type=int, default=0, help="default: 224, or 28 for mnist_convnet")
    p.add_argument("--classes", type=int, default=0, help="default: 1000, or 10 for mnist_convnet")
    p.add_argument("--num-warmup-batches", type=int, default=10)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=10)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    a = p.parse_args(argv)
    mnist = a.model == "mnist_convnet"
    a.image_size = a.image_size or (28 if mnist else 224)
    a.classes = a.classes or (10 if mnist else 1000)
    return a


def cpu_seconds():
    """CPU time of this process so far, all its threads (torch's, DDP's and gloo's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rank_main(rank, a, rendezvous):
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method="file://" + rendezvous, rank=rank, world_size=a.np)
    size = dist.get_world_size()
    torch.manual_seed(1)
    model = DistributedDataParallel(make_net(a.model, a.classes))  # broadcasts rank 0's weights
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * size)
    channels = 1 if a.model == "mnist_convnet" else 3
    generator = torch.Generator().manual_seed(1 + rank)
    data = torch.randn(a.batch_size, channels, a.image_size, a.image_size, generator=generator)
    target = torch.randint(0, a.classes, (a.batch_size,), generator=generator)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    def log(line):
        if rank == 0:
            print(line, flush=True)

    log("Model: %s" % a.model)
    log("Batch size: %d" % a.batch_size)
    log("Number of ranks: %d (%d thread%s each), images %dx%dx%d, %d classes, PyTorch %s DDP on gloo" % (
        size, a.threads, "" if a.threads == 1 else "s", channels, a.image_size, a.image_size, a.classes,
        torch.__version__))
    log("Running warmup...")
    timeit.timeit(step, number=a.num_warmup_batches)
    log("Running benchmark...")
    img_secs = []
    cpu_start = cpu_seconds()
    for i in range(a.num_iters):
        seconds = timeit.timeit(step, number=a.num_batches_per_iter)
        img_secs.append(a.batch_size * a.num_batches_per_iter / seconds)
        log("Iter #%d: %.1f img/sec per rank" % (i, img_secs[-1]))
    cpu_ms_per_image = 1e3 * (cpu_seconds() - cpu_start) / (a.batch_size * a.num_batches_per_iter * a.num_iters)
    mean, conf = np.mean(img_secs), 1.96 * np.std(img_secs)
    log("Img/sec per rank: %.1f +-%.1f" % (mean, conf))
    log("Total img/sec on %d rank(s): %.1f +-%.1f" % (size, size * mean, size * conf))
    log("CPU time per image on rank 0: %.2f ms" % cpu_ms_per_image)
    dist.destroy_process_group()


def main():
    a = parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    with tempfile.TemporaryDirectory(prefix="kolo-ddp-") as folder:
        mp.spawn(rank_main, args=(a, os.path.join(folder, "rendezvous")), nprocs=a.np, join=True)


if __name__ == "__main__":
    main()
