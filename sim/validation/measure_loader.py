#!/usr/bin/python3
"""Measures the CPU cost of loading one ImageNet training image, on one core of this
machine: the `--loader-cpu-ms` that kolo-sim needs for a PyTorch data loader.

    sim/validation/measure_loader.py [--images 200] [--rounds 7] [--content noise|smooth] [--json]

What is timed, per image (the standard ImageNet training input pipeline of torchvision's
examples/imagenet/main.py, minus the file read from disk):

    PIL.Image.open(JPEG bytes in memory).convert("RGB")      # decode
    RandomResizedCrop(224) + RandomHorizontalFlip()
    ToTensor() + Normalize(ImageNet mean, std)

The JPEG is ImageNet's mean size, about 400 x 350 pixels (the ILSVRC-2012 training set
averages roughly 400 x 350, about 110 KB per file), quality 90, made with numpy and encoded
with PIL. Its content is random, made with numpy: by default ("noise") i.i.d. uniform
pixels, which at quality 90 (with PIL's 4:2:0 chroma subsampling) gives a file of about
120 KB, close to an average ImageNet JPEG; "smooth" is a low-resolution random image
upsampled plus a little pixel noise, a smaller file (about 70 KB) that decodes faster.
A pool of distinct images is made so that caches do not flatter the decode.

The process is pinned to one core, and torch uses one thread, as each DataLoader worker
does. Each round times --images images; the result is the median over --rounds rounds, in
ms per image. Not included: reading the file, the DataLoader's collate and the transfer of
the batch between processes (a few % more in a real loader).
"""
import argparse
import io
import json
import os
import statistics
import sys
import time

import numpy as np
from PIL import Image


def make_jpegs(count, content, seed=0, width=400, height=350, quality=90):
    rng = np.random.default_rng(seed)
    blobs = []
    for _ in range(count):
        if content == "noise":
            pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
        else:
            low = rng.integers(0, 256, size=(height // 8 + 1, width // 8 + 1, 3), dtype=np.uint8)
            up = np.asarray(Image.fromarray(low).resize((width, height), Image.BICUBIC), dtype=np.int16)
            noisy = up + rng.normal(0, 12, size=up.shape).astype(np.int16)
            pixels = np.clip(noisy, 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=quality)
        blobs.append(buffer.getvalue())
    return blobs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=200, help="images per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds; the median is reported")
    parser.add_argument("--pool", type=int, default=50, help="distinct JPEGs, cycled")
    parser.add_argument("--content", choices=["noise", "smooth"], default="noise")
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    args = parser.parse_args(argv)

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import torch
    import torchvision.transforms as T

    torch.set_num_threads(1)
    torch.manual_seed(0)
    transform = T.Compose([
        T.RandomResizedCrop(224),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    blobs = make_jpegs(args.pool, args.content)

    def load(blob):
        return transform(Image.open(io.BytesIO(blob)).convert("RGB"))

    for blob in blobs:  # warm-up
        load(blob)
    per_image_ms = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for i in range(args.images):
            load(blobs[i % len(blobs)])
        per_image_ms.append((time.perf_counter() - start) * 1e3 / args.images)
    result = {
        "loader_cpu_ms": round(statistics.median(per_image_ms), 3),
        "rounds_ms": [round(x, 3) for x in per_image_ms],
        "content": args.content,
        "jpeg_kb_mean": round(sum(len(b) for b in blobs) / len(blobs) / 1024, 1),
        "size": "400x350, quality 90",
        "torch": torch.__version__,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"loader CPU per image (one core, median of {args.rounds} rounds of {args.images}): "
              f"{result['loader_cpu_ms']} ms; rounds {result['rounds_ms']}; "
              f"JPEG {result['jpeg_kb_mean']} KB mean ({args.content} content)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
