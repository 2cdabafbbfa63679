"""ElasticSampler: DistributedSampler's split of an epoch, re-split over the workers of each
new round so that the epoch goes on where the job left it."""
import math
import random

import torch.utils.data

from kolo.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Each epoch is one shuffled order of the dataset (the same on every rank: seed + epoch).
    The job consumes it in steps of batch_size x workers; record_batch() counts each step's
    samples, and after a reset the rest of the order is split among the new workers. So every
    sample is seen once per epoch across graceful resets (host changes), and across a failure
    the samples since the last commit are seen again, as their updates were rolled back (the
    traps of horovod#3143 and #3399). As DistributedSampler, the last step is padded with the
    epoch's first samples so that every rank has the same number of batches.

    Call record_batch(batch_idx, batch_size) after each batch, and set_epoch(epoch + 1) at the
    end of each epoch (not at its start), and track the sampler in a TorchState."""
    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0  # samples of this epoch's order consumed by the whole job
        self.reset()

    def set_epoch(self, epoch):
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        self.processed_num += batch_size * self.num_replicas

    def state_dict(self):
        return dict(epoch=self.epoch, processed_num=self.processed_num)

    def load_state_dict(self, state_dict):
        self.epoch = state_dict['epoch']
        self.processed_num = state_dict['processed_num']
        self.reset()

    def reset(self):
        self.num_replicas = size()
        self.rank = rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        indices = self.remaining_indices[:]
        indices += indices[:self.total_size - len(indices)]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples
