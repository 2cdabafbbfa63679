#!/usr/bin/python3
"""Writes the simulator's model profiles (sim/profiles/<model>.json): each layer that holds
parameters, in the order the forward pass runs it, with its parameter tensors (the
gradients kolo allreduces) and its forward FLOPs for one image.

    sim/profiles/make_profiles.py [--out sim/profiles] [MODEL ...]

The nets are torchvision's (Debian's python3-torchvision), built and run once on one
image with forward hooks; FLOPs are counted as 2 per multiply-add for convolutions and
linear layers, and 2 per output element for the rest (batch norm and the like). The
MNIST net is kolo's (models/; its PyTorch definition is examples/pytorch/mnist_convnet.py).
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
# The MNIST net's one PyTorch definition (examples/pytorch/mnist_convnet.py).
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "pytorch"))
from mnist_convnet import MnistConvNet  # noqa: E402


def torchvision_model(name):
    import torchvision.models as models
    if name == "inception_v3":
        return models.inception_v3(weights=None, aux_logits=False, init_weights=False), (3, 299, 299)
    return getattr(models, name)(weights=None), (3, 224, 224)


MODELS = {
    "mnist_convnet": lambda: (MnistConvNet(), (1, 28, 28)),
    "resnet18": lambda: torchvision_model("resnet18"),
    "resnet50": lambda: torchvision_model("resnet50"),
    "resnet101": lambda: torchvision_model("resnet101"),
    "resnet152": lambda: torchvision_model("resnet152"),
    "inception_v3": lambda: torchvision_model("inception_v3"),
    "vgg16": lambda: torchvision_model("vgg16"),
}


def layer_flops(module, output):
    if isinstance(module, nn.Conv2d):
        kh, kw = module.kernel_size
        return 2 * output.numel() * (module.in_channels // module.groups) * kh * kw
    if isinstance(module, nn.Linear):
        return 2 * output.numel() * module.in_features
    return 2 * output.numel()


def profile(name):
    model, input_shape = MODELS[name]()
    model.eval()
    layers = []

    def hook(module, _inputs, output):
        params = [(n, p) for n, p in module.named_parameters(recurse=False)]
        if params:
            layers.append({"name": module_names[module], "forward_flops": int(layer_flops(module, output)),
                           "params": [{"name": f"{module_names[module]}.{n}", "elements": p.numel()}
                                      for n, p in params]})

    module_names = {m: n for n, m in model.named_modules()}
    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    with torch.no_grad():
        model(torch.zeros(1, *input_shape))
    for h in handles:
        h.remove()
    counted = sum(p["elements"] for layer in layers for p in layer["params"])
    total = sum(p.numel() for p in model.parameters())
    if counted != total:
        sys.exit(f"{name}: the hooks saw {counted} parameters of {total}")
    import torchvision
    return {
        "model": name,
        "input": list(input_shape),
        "source": f"sim/profiles/make_profiles.py: torch {torch.__version__}, torchvision {torchvision.__version__}",
        "parameters": total,
        "forward_flops_per_image": sum(layer["forward_flops"] for layer in layers),
        "layers": layers,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=HERE)
    p.add_argument("models", nargs="*", default=list(MODELS))
    args = p.parse_args()
    for name in args.models:
        if name not in MODELS:
            sys.exit(f"unknown model '{name}': one of {', '.join(MODELS)}")
        data = profile(name)
        path = os.path.join(args.out, f"{name}.json")
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        print(f"{path}: {data['parameters']:,} parameters in {len(data['layers'])} layers, "
              f"{data['forward_flops_per_image'] / 1e9:.2f} GFLOP forward per image")


if __name__ == "__main__":
    main()
