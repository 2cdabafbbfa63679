#!/usr/bin/python3
"""Data-parallel training of the MNIST conv net on Fashion-MNIST with kolo.torch, shaped
like Horovod's examples/pytorch/pytorch_mnist.py:

    PYTHONPATH=build/python build/launcher/kolorun -np 2 /usr/bin/python3 examples/pytorch/pytorch_mnist.py

Reads the gzip (or plain) IDX files from --data-dir (Debian's dataset-fashion-mnist puts
them in /usr/share/datasets/fashion-mnist); nothing is downloaded. Each rank trains on its
shard of every epoch (DistributedSampler) with --batch-size images a step, and the
learning rate is scaled by the number of ranks (Horovod's idiom; --warmup-epochs ramps it
up, --lr-decay cosine brings it down to 0 by the end). --global-batch-size N instead
splits N images a step across the ranks and keeps the learning rate: the same training as
one process, up to float rounding. A run is deterministic given --seed.
"""
import argparse
import gzip
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data
import torch.utils.data.distributed

import kolo.torch as hvd
from mnist_convnet import MnistConvNet  # kolo's MNIST net, next to this file

# Training settings
parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--batch-size", type=int, default=64, help="input batch size per rank (default: 64)")
parser.add_argument("--global-batch-size", type=int, default=0,
                    help="images a step over all ranks, split evenly; the lr is not scaled (default: off)")
parser.add_argument("--test-batch-size", type=int, default=1000, help="input batch size for testing (default: 1000)")
parser.add_argument("--epochs", type=int, default=3, help="number of epochs to train (default: 3)")
parser.add_argument("--lr", type=float, default=0.01, help="learning rate of one rank (default: 0.01)")
parser.add_argument("--momentum", type=float, default=0.5, help="SGD momentum (default: 0.5)")
parser.add_argument("--warmup-epochs", type=float, default=0,
                    help="ramp the lr up from one rank's over these epochs, as Horovod's imagenet example (default: 0)")
parser.add_argument("--lr-decay", choices=["none", "cosine"], default="none",
                    help="after the warmup: a constant lr, or a cosine decay to 0 at the end (default: none)")
parser.add_argument("--seed", type=int, default=42, help="random seed (default: 42)")
parser.add_argument("--log-interval", type=int, default=100, help="batches between training status lines")
parser.add_argument("--threads", type=int, default=1, help="torch threads per rank (default: 1)")
parser.add_argument("--fp16-allreduce", action="store_true", default=False, help="use fp16 compression during allreduce")
parser.add_argument("--use-adasum", action="store_true", default=False, help="use adasum algorithm to do reduction")
parser.add_argument("--gradient-predivide-factor", type=float, default=1.0,
                    help="apply gradient predivide factor in optimizer (default: 1.0)")
parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist",
                    help="folder with train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...")
parser.add_argument("--train-limit", type=int, default=0, help="use the first N training images (default: all)")
parser.add_argument("--test-limit", type=int, default=0, help="use the first N test images (default: all)")

# Fashion-MNIST's pixel mean and standard deviation over the training set (pixels in [0, 1]).
MEAN, STD = 0.2860, 0.3530


def read_idx(folder, name):
    """One IDX file as a uint8 array, from `name` or `name`.gz in folder."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        path += ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        zero, dtype, ndim = struct.unpack(">HBB", f.read(4))
        if zero != 0 or dtype != 0x08:
            raise ValueError("%s: not an IDX file of unsigned bytes" % path)
        shape = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(shape)


def load_split(folder, prefix, limit):
    """Images as normalized float tensors N x 1 x 28 x 28, labels as int64."""
    images = read_idx(folder, prefix + "-images-idx3-ubyte")
    labels = read_idx(folder, prefix + "-labels-idx1-ubyte")
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy((images.astype(np.float32) / 255.0 - MEAN) / STD).unsqueeze(1)
    return x, torch.from_numpy(labels.astype(np.int64))


def train(args):
    def train_epoch(epoch):
        model.train()
        # Horovod: set epoch to sampler for shuffling.
        train_sampler.set_epoch(epoch)
        for batch_idx, (data, target) in enumerate(train_loader):
            adjust_learning_rate(epoch, batch_idx)
            optimizer.zero_grad()
            output = model(data)
            loss = F.cross_entropy(output, target)
            loss.backward()
            optimizer.step()
            if batch_idx % args.log_interval == 0 and hvd.rank() == 0:
                # Horovod: use train_sampler to determine the number of examples in this worker's partition.
                print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                    epoch, batch_idx * args.batch_size, len(train_sampler), 100. * batch_idx / len(train_loader),
                    loss.item()), flush=True)

    def adjust_learning_rate(epoch, batch_idx):
        # Horovod: a large lr x size from the first step can diverge, so ramp up to it
        # (Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour").
        done = epoch - 1 + float(batch_idx) / len(train_loader)
        if done < args.warmup_epochs:
            factor = 1. / lr_scaler * (done * (lr_scaler - 1) / args.warmup_epochs + 1)
        elif args.lr_decay == "cosine":
            factor = 0.5 * (1 + math.cos(math.pi * (done - args.warmup_epochs) / (args.epochs - args.warmup_epochs)))
        else:
            factor = 1.
        for param_group in optimizer.param_groups:
            param_group["lr"] = args.lr * lr_scaler * factor

    def metric_average(val, name):
        tensor = torch.tensor(val)
        avg_tensor = hvd.allreduce(tensor, name=name)
        return avg_tensor.item()

    def test(epoch):
        model.eval()
        test_loss = 0.
        test_accuracy = 0.
        with torch.no_grad():
            for data, target in test_loader:
                output = model(data)
                # sum up batch loss
                test_loss += F.cross_entropy(output, target, reduction="sum").item()
                # get the index of the max log-probability
                pred = output.max(1, keepdim=True)[1]
                test_accuracy += pred.eq(target.view_as(pred)).float().sum().item()

        # Horovod: use test_sampler to determine the number of examples in this worker's partition.
        test_loss /= len(test_sampler)
        test_accuracy /= len(test_sampler)

        # Horovod: average metric values across workers.
        test_loss = metric_average(test_loss, "avg_loss")
        test_accuracy = metric_average(test_accuracy, "avg_accuracy")

        # Horovod: print output only on first rank.
        if hvd.rank() == 0:
            print("Test set after epoch {}: Average loss: {:.4f}, Accuracy: {:.2f}%".format(
                epoch, test_loss, 100. * test_accuracy), flush=True)
        return test_accuracy

    # Horovod: initialize library.
    hvd.init()
    torch.manual_seed(args.seed)

    # Horovod: limit # of CPU threads to be used per worker.
    torch.set_num_threads(args.threads)

    if args.global_batch_size:
        if args.global_batch_size % hvd.size():
            raise SystemExit("--global-batch-size %d: not a multiple of the %d ranks" % (
                args.global_batch_size, hvd.size()))
        args.batch_size = args.global_batch_size // hvd.size()

    train_dataset = torch.utils.data.TensorDataset(*load_split(args.data_dir, "train", args.train_limit))
    # Horovod: use DistributedSampler to partition the training data. Its shuffle depends
    # on the seed and the epoch only, so every rank draws the same permutation.
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_dataset, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=True, seed=args.seed)
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size, sampler=train_sampler)

    test_dataset = torch.utils.data.TensorDataset(*load_split(args.data_dir, "t10k", args.test_limit))
    # Horovod: use DistributedSampler to partition the test data.
    test_sampler = torch.utils.data.distributed.DistributedSampler(
        test_dataset, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=False)
    test_loader = torch.utils.data.DataLoader(test_dataset, batch_size=args.test_batch_size, sampler=test_sampler)

    model = MnistConvNet()

    # By default, Adasum doesn't need scaling up learning rate; nor does a global batch
    # split across the ranks.
    lr_scaler = hvd.size() if not args.use_adasum and not args.global_batch_size else 1

    # Horovod: scale learning rate by lr_scaler.
    optimizer = optim.SGD(model.parameters(), lr=args.lr * lr_scaler, momentum=args.momentum)

    # Horovod: broadcast parameters & optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    # Horovod: (optional) compression algorithm.
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none

    # Horovod: wrap optimizer with DistributedOptimizer.
    optimizer = hvd.DistributedOptimizer(optimizer,
                                         named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average,
                                         gradient_predivide_factor=args.gradient_predivide_factor)

    if hvd.rank() == 0:
        print("Fashion-MNIST from {}: {} training and {} test images; {} rank(s), batch {} per rank, lr {:g}{}".format(
            args.data_dir, len(train_dataset), len(test_dataset), hvd.size(), args.batch_size, args.lr * lr_scaler,
            "".join([", warmup {:g} epochs".format(args.warmup_epochs) if args.warmup_epochs else "",
                     ", cosine decay" if args.lr_decay == "cosine" else ""])), flush=True)
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        train_epoch(epoch)
        accuracy = test(epoch)
    if hvd.rank() == 0:
        seconds = time.perf_counter() - start
        print("Final test accuracy: {:.2f}% after {} epochs in {:.1f} s ({:.0f} training img/s)".format(
            100. * accuracy, args.epochs, seconds, args.epochs * len(train_dataset) / seconds), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    train(parser.parse_args())
