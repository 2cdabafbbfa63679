"""The training programs a scaling run can time, and how to read what they measured.

Each program is a kolo example that takes the shared training flags (examples/common:
--epochs, --batch-size, --threads, --metrics-csv) and writes one CSV row per epoch:
  epoch,steps,seconds,lr,loss,acc,val_acc,images_per_s
`seconds` includes the epoch's evaluation; images_per_s is training only, so the
training time of an epoch is recovered as images / images_per_s.

Only examples/mnist exists so far (model mnist_convnet, Fashion-MNIST). A synthetic-data
benchmark for the ResNets would be one more entry in PROGRAMS.
"""
import csv
import os
from dataclasses import dataclass


@dataclass
class Program:
    target: str        # path under the build folder
    models: tuple      # the --model values it can train

    def executable(self, build):
        return os.path.join(build, self.target)


PROGRAMS = {
    "mnist": Program(target="examples/mnist/mnist", models=("mnist_convnet",)),
}


def program_for(model, build):
    for name, program in PROGRAMS.items():
        if model in program.models:
            if not os.access(program.executable(build), os.X_OK):
                raise ValueError(f"model {model} is trained by {program.target}, which is not built in {build}")
            return name, program
    known = ", ".join(m for p in PROGRAMS.values() for m in p.models)
    raise ValueError(f"no training program for model '{model}' (available: {known}; the ResNets need a "
                     "synthetic-data benchmark example, which kolo does not have yet)")


def arguments(program, build, *, ranks, batch, epochs, images, threads, metrics_csv):
    """The program's command line. `images` per epoch (all ranks together) is rounded down
    to whole steps of every rank, so that each epoch has only full batches."""
    per_step = batch * ranks
    limit = max(per_step, images // per_step * per_step)
    return [program.executable(build), "--epochs", str(epochs), "--batch-size", str(batch),
            "--threads", str(threads), "--train-limit", str(limit), "--test-limit", "1000",
            "--progress", "off", "--metrics-csv", metrics_csv]


@dataclass
class Epochs:
    """What the metrics CSV says about a run's epochs."""
    train_seconds: list   # per epoch, training only
    images_per_s: list    # per epoch
    steps: int            # per rank, all epochs together


def read_metrics(path, batch, ranks):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no epoch rows (the run did not finish an epoch)")
    rates = [float(r["images_per_s"]) for r in rows]
    steps = [int(r["steps"]) for r in rows]
    seconds = [s * batch * ranks / rate for s, rate in zip(steps, rates)]
    return Epochs(train_seconds=seconds, images_per_s=rates, steps=sum(steps))
