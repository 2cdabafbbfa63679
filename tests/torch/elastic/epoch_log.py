"""An elastic job written as Horovod's elastic integration tests write theirs
(test/integration/data/elastic_torch_main.py), for elastic_scenarios.py's 'horovod-*'
scenarios: a tiny model trains a few batches an epoch, rank 0 appends one JSON line per
epoch to --logfile (which the discovery script counts to choose the hosts), and the script
leans on what such a script reads from Horovod:

- HOROVOD_RANK and HOROVOD_HOSTNAME, the place the worker started in;
- state._host_messages.empty(), waited on by rank 0 when the hosts of the next epoch differ;
- a DistributedOptimizer made at one rank that must reduce once the job grows.

--fail-at EPOCH:START_RANKS makes the workers that started with those ranks raise at that
epoch's first batch (a program that fails: it shuts kolo down as it exits); --finish-first
START_RANK makes that worker's program end after the first epoch; --final-seconds keeps rank
0 working alone after training (a final save); --die-in-reset START_RANK kills that worker
in its first reset, as the others sync the state; --set-op sums over a
process set of the even ranks every batch (made again in each round; needs
KOLO_DYNAMIC_PROCESS_SETS=1)."""
import argparse
import json
import os
import signal
import time

import torch

import kolo.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument('--logfile', required=True)
parser.add_argument('--epochs', type=int, default=3)
parser.add_argument('--batches', type=int, default=5)
parser.add_argument('--hosts-change-after', type=int, nargs='*', default=[],
                    help='epochs after which the discovery script gives other hosts: rank 0 waits to hear it')
parser.add_argument('--fail-at', default='', help='EPOCH:R1,R2: the workers started as ranks R1, R2 raise')
parser.add_argument('--finish-first', type=int, default=-1, help='the worker started as this rank ends after epoch 0')
parser.add_argument('--set-op', action='store_true', help='a sum over a set of the even ranks every batch')
parser.add_argument('--die-in-reset', type=int, default=-1,
                    help='the worker started as this rank is SIGKILLed in its first reset, before the state is synced')
parser.add_argument('--final-seconds', type=float, default=0,
                    help='after training, rank 0 alone works this long (a final save) while the others have ended')
args = parser.parse_args()

hvd.init()
start_rank = int(os.environ['HOROVOD_RANK'])
hostname = os.environ['HOROVOD_HOSTNAME']
fail_epoch, fail_ranks = (args.fail_at.split(':') + [''])[:2] if args.fail_at else (None, '')
fail_ranks = {int(r) for r in fail_ranks.split(',') if r}

torch.manual_seed(0)
data, target = torch.randn(16, 3), torch.randint(0, 2, (16,))
model = torch.nn.Linear(3, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())


@hvd.elastic.run
def train(state):
    state.rounds += 1
    evens = hvd.add_process_set(list(range(0, hvd.size(), 2))) if args.set_op and hvd.size() > 1 else None
    last_epoch = 1 if start_rank == args.finish_first else args.epochs
    while state.epoch < last_epoch:
        while state.batch < args.batches:
            if str(state.epoch) == fail_epoch and state.batch == 0 and start_rank in fail_ranks:
                raise RuntimeError(f'failing as asked: epoch {state.epoch}, start rank {start_rank}')
            if evens is not None and evens.included():
                hvd.allreduce(torch.ones(1), op=hvd.Sum, name='evens', process_set=evens)
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(data), target).backward()
            optimizer.step()
            state.batch += 1
            state.commit()
        if hvd.rank() == 0:
            with open(args.logfile, 'a') as f:
                f.write(json.dumps({'epoch': state.epoch, 'start_rank': start_rank, 'hostname': hostname,
                                    'rank': hvd.rank(), 'size': hvd.size(), 'rounds': state.rounds}) + '\n')
            if state.epoch in args.hosts_change_after:
                deadline = time.monotonic() + 10
                while state._host_messages.empty():
                    if time.monotonic() > deadline:
                        raise TimeoutError('kolorun did not say that the hosts changed within 10 s')
                    time.sleep(0.1)
        state.epoch += 1
        state.batch = 0
        state.commit()


def on_reset():
    if start_rank == args.die_in_reset:
        os.kill(os.getpid(), signal.SIGKILL)  # the others are about to sync the state with it
    for group in optimizer.param_groups:
        group['lr'] = 0.01 * hvd.size()


state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0, rounds=0)
state.register_reset_callbacks([on_reset])
train(state)
if hvd.rank() == 0 and args.final_seconds:
    time.sleep(args.final_seconds)
    print('rank 0: final save done', flush=True)
