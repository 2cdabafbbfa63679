"""The training programs a scaling run can time, their command lines, and how to read
what they measured.

  mnist                 examples/mnist: the MNIST net on Fashion-MNIST, --images per epoch
                        shared by the ranks (strong scaling). Rank 0 writes one CSV row per
                        epoch (epoch,steps,seconds,lr,loss,acc,val_acc,images_per_s); seconds
                        include the evaluation, images_per_s does not, so an epoch's training
                        time is images / images_per_s. The first of several epochs is not
                        timed (start-up).
  synthetic_benchmark   bench/synthetic_benchmark (Horovod's synthetic benchmark): any net,
                        one fixed random batch per rank, --steps timed steps after
                        --warmup-steps (weak scaling: each rank does all the steps). Rank 0
                        prints "Iter #k: X img/sec per rank" per step; the "epoch" is the
                        timed steps.

Every program gives a Measurement, from which the harness builds its rows.
"""
import csv
import os
import re
import statistics
from dataclasses import dataclass


@dataclass
class Measurement:
    epoch_s: float          # the timed "epoch": median over timed epochs (mnist), the timed steps
    images: float           # trained in that epoch, all ranks
    steps: int              # per rank, everything the timeline covers (for bytes per step)
    train_seconds: float    # training time the timeline covers (for the allreduce share)


class Mnist:
    name = "mnist"
    target = "examples/mnist/mnist"
    models = ("mnist_convnet",)

    def arguments(self, build, settings, ranks, metrics_csv):
        """`settings.images` per epoch (all ranks) is rounded down to whole steps of every
        rank, so that each epoch has only full batches."""
        per_step = settings.batch * ranks
        limit = max(per_step, settings.images // per_step * per_step)
        return [os.path.join(build, self.target), "--epochs", str(settings.epochs),
                "--batch-size", str(settings.batch), "--threads", str(settings.threads),
                "--train-limit", str(limit), "--test-limit", "1000", "--progress", "off",
                "--metrics-csv", metrics_csv]

    def read(self, output, metrics_csv, settings, ranks):
        with open(metrics_csv) as f:
            rows = list(csv.DictReader(f))
        if not rows:
            raise ValueError(f"{metrics_csv}: no epoch rows (the run did not finish an epoch)")
        steps = [int(r["steps"]) for r in rows]
        seconds = [s * settings.batch * ranks / float(r["images_per_s"]) for s, r in zip(steps, rows)]
        return Measurement(epoch_s=statistics.median(seconds[1:] or seconds),
                           images=steps[0] * settings.batch * ranks, steps=sum(steps),
                           train_seconds=sum(seconds))


class SyntheticBenchmark:
    name = "synthetic_benchmark"
    target = "bench/synthetic_benchmark/synthetic_benchmark"
    models = ("mnist_convnet", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
              "resnet50v2", "resnet101v2", "resnet152v2")
    ITER = re.compile(r"Iter #\d+: ([\d.]+) img/sec per rank$", re.M)

    def arguments(self, build, settings, ranks, metrics_csv):
        args = [os.path.join(build, self.target), "--model", settings.model, "--batch-size", str(settings.batch),
                "--threads", str(settings.threads), "--num-warmup-batches", str(settings.warmup_steps),
                "--num-batches-per-iter", "1", "--num-iters", str(settings.steps)]
        if settings.image_size and settings.model != "mnist_convnet":
            args += ["--image-size", str(settings.image_size), "--classes", "10"]
        return args

    def read(self, output, metrics_csv, settings, ranks):
        rates = [float(x) for x in self.ITER.findall(output)]
        if len(rates) != settings.steps:
            raise ValueError(f"expected {settings.steps} 'Iter #k: ... img/sec per rank' lines, found {len(rates)}")
        timed = sum(settings.batch / rate for rate in rates)
        # The timeline also covers the warm-up steps; they are counted at the timed steps' pace.
        all_steps = settings.steps + settings.warmup_steps
        return Measurement(epoch_s=timed, images=settings.batch * ranks * settings.steps, steps=all_steps,
                           train_seconds=timed * all_steps / settings.steps)


PROGRAMS = {p.name: p for p in (Mnist(), SyntheticBenchmark())}


def choose(name, model, build):
    """The program for --program NAME (or, with "auto", the first that trains `model`),
    checked to be built."""
    candidates = [PROGRAMS[name]] if name != "auto" else list(PROGRAMS.values())
    for program in candidates:
        if model in program.models:
            path = os.path.join(build, program.target)
            if not os.access(path, os.X_OK):
                raise ValueError(f"model {model} is trained by {program.target}, which is not built in {build}")
            return program
    known = ", ".join(sorted({m for p in candidates for m in p.models}))
    raise ValueError(f"no program trains model '{model}' (known: {known})")
