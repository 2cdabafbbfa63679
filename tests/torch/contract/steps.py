#!/usr/bin/python3
"""Two training steps through kolo.torch's DistributedOptimizer, for the contract check
(contract_check.py): the same net, data and steps as steps.cc does through kolo::torch's.

    mpirun -np 2 python3 steps.py --op average|sum|adasum --passes N --out FILE

Rank 0 writes the parameters after the two steps, one value per line (float64, repr).
"""
import argparse

import torch

import kolo.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument('--op', choices=['average', 'sum', 'adasum'], required=True)
parser.add_argument('--passes', type=int, required=True)
parser.add_argument('--out', required=True)
args = parser.parse_args()

hvd.init()
torch.set_num_threads(1)
f64 = torch.float64


# The net and the data: closed formulas of torch ops, written alike in steps.cc.
def parameters():
    w1 = (torch.arange(12, dtype=f64).reshape(3, 4) * 0.37).sin() * 0.5
    b1 = (torch.arange(3, dtype=f64) * 0.11).cos() * 0.1
    w2 = (torch.arange(6, dtype=f64).reshape(2, 3) * 0.23).cos() * 0.5
    b2 = torch.zeros(2, dtype=f64)
    return [('w1', w1), ('b1', b1), ('w2', w2), ('b2', b2)]


def batch(rank, step, pass_):
    k = rank + 10 * step + 100 * pass_
    x = ((torch.arange(32, dtype=f64).reshape(8, 4) + 100 * k) * 0.013).sin()
    target = ((torch.arange(16, dtype=f64).reshape(8, 2) + 7 * k) * 0.029).cos()
    return x, target


named = [(name, value.requires_grad_()) for name, value in parameters()]
params = dict(named)
op = {'average': hvd.Average, 'sum': hvd.Sum, 'adasum': hvd.Adasum}[args.op]
sgd = torch.optim.SGD([p for _, p in named], lr=0.1, momentum=0.9)
opt = hvd.DistributedOptimizer(sgd, named_parameters=named, op=op, backward_passes_per_step=args.passes)
for step in range(2):
    opt.zero_grad()
    for pass_ in range(args.passes):
        x, target = batch(hvd.rank(), step, pass_)
        y = torch.tanh(x @ params['w1'].t() + params['b1']) @ params['w2'].t() + params['b2']
        ((y - target) ** 2).mean().backward()
    opt.step()

if hvd.rank() == 0:
    with open(args.out, 'w') as out:
        for name, value in named:
            for v in value.detach().flatten().tolist():
                out.write(f'{name} {v!r}\n')
hvd.shutdown()
