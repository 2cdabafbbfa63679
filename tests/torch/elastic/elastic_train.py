"""A small elastic training job for the elastic tests (elastic_scenarios.py): an MLP learns a
synthetic classification (labels from a fixed random linear map), with kolo.torch.elastic's
TorchState and ElasticSampler, as Horovod's elastic examples do.

Each worker writes, under --log-dir, worker-<pid>.jsonl: one line per committed batch
(round size, rank, the batch's sample indices) and a last line with the final accuracy and a
checksum of the parameters. Faults are staged by the worker itself, once:
--die-on HOST:STEP (SIGKILL), --stop-on HOST:STEP (SIGSTOP: a hung worker), --stall-on
HOST:STEP (the worker sleeps for good in its own code: kolo's threads still answer)."""
import argparse
import json
import os
import sys
import signal
import time

import torch

import kolo.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=3)
parser.add_argument('--samples', type=int, default=1536)
parser.add_argument('--batch-size', type=int, default=16)
parser.add_argument('--commit-every', type=int, default=4)
parser.add_argument('--log-dir', required=True)
parser.add_argument('--die-on', default='')
parser.add_argument('--stop-on', default='')
parser.add_argument('--stall-on', default='')
parser.add_argument('--step-seconds', type=float, default=0.0, help='sleep per step (to give time to act)')
parser.add_argument('--process-set', action='store_true',
                    help="each round makes a process set of its even ranks and sums on it every step "
                         "(needs KOLO_DYNAMIC_PROCESS_SETS=1): sets made again after a reset")
parser.add_argument('--die-before-init', default='',
                    help='HOST:SLOT: the worker there exits with 1 before it reaches kolo (a broken new host)')
args = parser.parse_args()

if args.die_before_init == f"{os.environ.get('KOLO_HOSTNAME', '')}:{os.environ.get('KOLO_LOCAL_RANK')}":
    sys.exit(1)
hvd.init()
torch.manual_seed(0)
generator = torch.Generator().manual_seed(1)
features = torch.randn(args.samples, 10, generator=generator)
labels = (features @ torch.randn(10, 4, generator=generator)).argmax(dim=1)
dataset = torch.utils.data.TensorDataset(features, labels)

model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05 * hvd.size(), momentum=0.9)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
host = os.environ.get('KOLO_HOSTNAME', '')
log = open(os.path.join(args.log_dir, f'worker-{os.getpid()}.jsonl'), 'a', buffering=1)
log.write(json.dumps({'start': True, 'host': host, 'slot': os.environ.get('KOLO_LOCAL_RANK')}) + '\n')
steps_done = 0


def fault_due(spec, step):
    if not spec:
        return False
    where, at = spec.rsplit(':', 1)
    marker = os.path.join(args.log_dir, 'fault-' + spec.replace(':', '-'))
    if where != host or step != int(at) or os.path.exists(marker):
        return False
    with open(marker, 'w') as f:  # once: a worker started later on the same host does not do it again
        f.write(str(time.time()))
    return True


def on_reset():
    # Horovod's idiom: the rate follows the number of workers (and the schedule's decay).
    for group in optimizer.param_groups:
        group['lr'] = 0.05 * hvd.size() * 0.9 ** scheduler.last_epoch


def write_pending(state):
    for done in state.pending:
        log.write(json.dumps({'epoch': state.epoch, 'size': hvd.size(), 'rank': hvd.rank(), 'indices': done}) + '\n')
    state.pending = []


def commit(state):
    """Logs the batches since the last commit, then commits: save() has no collective and
    cannot fail, so every logged batch is a committed one (and a batch redone after a
    failure was never logged)."""
    write_pending(state)
    state.commit()


@hvd.elastic.run
def train(state):
    global steps_done
    # When this round began training (after the reset and the sync): the recovery timeline.
    log.write(json.dumps({'round_start': time.time(), 'size': hvd.size(), 'rank': hvd.rank()}) + '\n')
    loss_fn = torch.nn.CrossEntropyLoss()
    # Process sets do not outlive a round: each round makes its own (docs/elastic.md).
    evens = hvd.add_process_set(list(range(0, hvd.size(), 2))) if args.process_set else None
    while state.epoch < args.epochs:
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=state.sampler)
        indices = list(iter(state.sampler))
        for batch_in_round, (x, y) in enumerate(loader):
            batch = indices[batch_in_round * args.batch_size:(batch_in_round + 1) * args.batch_size]
            if fault_due(args.die_on, steps_done):
                os.kill(os.getpid(), signal.SIGKILL)
            if fault_due(args.stop_on, steps_done):
                os.kill(os.getpid(), signal.SIGSTOP)
            if fault_due(args.stall_on, steps_done):
                while True:
                    time.sleep(60)
            if evens is not None and evens.included():
                total = hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=evens, name='evens').item()
                if total != len(evens.ranks):
                    raise SystemExit(f'FAILED: a sum over the process set {evens.ranks} gave {total}')
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
            steps_done += 1
            time.sleep(args.step_seconds)
            state.sampler.record_batch(state.batch, args.batch_size)
            state.batch += 1
            state.pending.append(batch)
            if state.batch % args.commit_every == 0:
                commit(state)
        write_pending(state)
        state.epoch += 1
        state.scheduler.step()
        state.batch = 0
        state.sampler.set_epoch(state.epoch)
        state.commit()


# A scheduler in the state too (its position is synced from rank 0 after a reset): the rate
# decays by 0.9 each epoch.
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, scheduler=scheduler, epoch=0, batch=0, pending=[])
state.register_reset_callbacks([on_reset])
train(state)

with torch.no_grad():
    accuracy = (model(features).argmax(dim=1) == labels).float().mean().item()
    checksum = sum(p.double().sum().item() for p in model.parameters())
log.write(json.dumps({'end': True, 'size': hvd.size(), 'rank': hvd.rank(), 'accuracy': accuracy,
                      'checksum': checksum, 'scheduler_epoch': scheduler.last_epoch}) + '\n')
print(f'rank {hvd.rank()} of {hvd.size()}: accuracy {accuracy:.3f}', flush=True)
