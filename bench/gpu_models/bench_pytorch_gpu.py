#!/usr/bin/python3
"""PyTorch's side of the GPU benchmark (bench/gpu_models/run.sh): the configuration of
kolo-gpu-benchmark, in PyTorch 2 eager mode on the same GPU, printed as the same JSON line.

    python3 bench/gpu_models/bench_pytorch_gpu.py --model resnet50 --batch 64 --size 224 --precision fp16

The nets are kolo's layouts: torchvision's ResNets (tests/parity/export_fixtures.py, the ones
kolo-parity checks) and Keras' ResNetV2 written out below as kolo's resnet_v2.cc builds it.
A step is zero_grad, forward, cross-entropy, backward and SGD (momentum 0.9); fp16 runs under
torch.autocast with a GradScaler, bf16 under autocast alone. cudnn.benchmark is on (kolo
also measures its convolution algorithms once per shape); TF32 stays at PyTorch's defaults
(on for convolutions, off for matrix products), as in kolo.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "parity"))
from export_fixtures import make_net as make_fixture_net  # noqa: E402

V2_BLOCKS = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


def keras_bn(channels):
    return nn.BatchNorm2d(channels, eps=1.001e-5, momentum=0.01)


class PreactBlock(nn.Module):
    def __init__(self, inp, filters, stride, conv_shortcut):
        super().__init__()
        self.stride = stride
        self.preact_bn = keras_bn(inp)
        self.shortcut_conv = nn.Conv2d(inp, 4 * filters, 1, stride, 0, bias=True) if conv_shortcut else None
        self.conv1 = nn.Conv2d(inp, filters, 1, 1, 0, bias=False)
        self.bn1 = keras_bn(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, stride, 1, bias=False)
        self.bn2 = keras_bn(filters)
        self.conv3 = nn.Conv2d(filters, 4 * filters, 1, 1, 0, bias=True)

    def forward(self, x):
        preact = F.relu(self.preact_bn(x))
        if self.shortcut_conv is not None:
            shortcut = self.shortcut_conv(preact)
        elif self.stride > 1:
            shortcut = F.max_pool2d(x, 1, self.stride)
        else:
            shortcut = x
        y = F.relu(self.bn1(self.conv1(preact)))
        y = self.conv3(F.relu(self.bn2(self.conv2(y))))
        return y + shortcut


class ResNetV2(nn.Module):
    def __init__(self, depth, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=True)
        blocks, inp = [], 64
        for stack, count in enumerate(V2_BLOCKS[depth]):
            filters = 64 << stack
            for b in range(1, count + 1):
                stride = 2 if (b == count and stack < 3) else 1
                blocks.append(PreactBlock(inp, filters, stride, b == 1))
                inp = 4 * filters
        self.blocks = nn.Sequential(*blocks)
        self.post_bn = keras_bn(inp)
        self.fc = nn.Linear(inp, classes)

    def forward(self, x):
        x = F.max_pool2d(F.pad(self.conv1(x), (1, 1, 1, 1)), 3, 2)
        x = F.relu(self.post_bn(self.blocks(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def make_net(model, classes):
    if model.endswith("v2"):
        return ResNetV2(int(model[len("resnet"):-2]), classes)
    return make_fixture_net(model, classes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--upload", action="store_true", help="copy the batch from pinned host memory every step")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"framework": "pytorch", "skipped": "no CUDA device"}))
        sys.exit(77)
    dev = torch.device("cuda", a.device)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    net = make_net(a.model, a.classes).to(dev)
    channels = 1 if a.model == "mnist_convnet" else 3
    x_host = (torch.arange(a.batch * channels * a.size * a.size) * 7919 % 1000).float().div(1000).sub(0.5)
    x_host = x_host.reshape(a.batch, channels, a.size, a.size).pin_memory()
    x = x_host.to(dev)
    y = (torch.arange(a.batch) % a.classes).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    net.train()

    def step():
        opt.zero_grad(set_to_none=False)  # kolo zeroes its gradients too
        inputs = x_host.to(dev, non_blocking=True) if a.upload else x
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = F.cross_entropy(net(inputs), y)
        loss.item()  # kolo's loss is a host value: the same synchronisation
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        torch.cuda.synchronize(dev)

    for _ in range(a.warmup):
        step()
    torch.cuda.reset_peak_memory_stats(dev)
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    median = times[len(times) // 2]
    print(json.dumps({"framework": "pytorch", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
                      "model": a.model, "batch": a.batch, "size": a.size, "precision": a.precision,
                      "upload": a.upload, "step_ms_min": round(times[0], 3), "step_ms_median": round(median, 3),
                      "images_per_s": round(a.batch / median * 1e3, 1),
                      "peak_allocated_mb": round(torch.cuda.max_memory_allocated(dev) / 2**20, 1),
                      "peak_reserved_mb": round(torch.cuda.max_memory_reserved(dev) / 2**20, 1)}))


if __name__ == "__main__":
    main()
