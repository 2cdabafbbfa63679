"""kolo's MNIST net in PyTorch, defined once for every Python file that needs it.

The layers and parameter names of kolo::models::mnist_convnet (models/nets/mnist_convnet.cc):
conv 5x5 to 32 channels, ReLU, max-pool 2; conv 5x5 to 64, ReLU, max-pool 2; linear
1024 -> classes. forward() returns logits.

Imported by pytorch_mnist.py and pytorch_synthetic_benchmark.py (this folder is their
sys.path[0]), and, with this folder put on sys.path, by tests/parity/export_fixtures.py (the
C++ net's parity fixtures, and through it bench/synthetic_benchmark/ddp_benchmark.py) and
sim/profiles/make_profiles.py.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MnistConvNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.fc = nn.Linear(1024, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))
