"""Plain programs: MLPs, convolutions, pytree inputs and outputs of every container kind."""

from __future__ import annotations

import collections
import dataclasses

import torch
import torch.nn as nn
import torch.utils._pytree as pytree

from conformance.corpus._case import Program, case


class MLP(nn.Module):
    def __init__(self, sizes=(8, 16, 4)):
        super().__init__()
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers[:-1])

    def forward(self, x):
        return self.net(x)


@case("mlp", tags=("fast",))
def mlp():
    """Two Linear layers with a ReLU: the smallest real program."""
    return Program(MLP(), (torch.randn(3, 8),))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(self.pool(x).flatten(1))


@case("convnet_eval", tags=("full",))
def convnet_eval():
    """Conv2d + BatchNorm (eval: running stats are read-only buffers) + pooling."""
    return Program(ConvNet().eval(), (torch.randn(2, 3, 8, 8),))


@case("convnet_train", tags=("full",))
def convnet_train():
    """BatchNorm in training mode: running stats are buffers mutated in forward."""
    return Program(ConvNet().train(), (torch.randn(2, 3, 8, 8),))


Pair = collections.namedtuple("Pair", ["first", "second"])


class Containers(nn.Module):
    def forward(self, x, cfg):
        a = x * cfg["scale"][0]
        b = [x + t for t in cfg["shifts"]]
        return {"sum": a, "list": b, "tuple": (a.sum(), b[0].mean()), "pair": Pair(a, b[-1])}


@case("pytree_containers", tags=("fast",))
def pytree_containers():
    """Dict/list/tuple inputs and dict/list/tuple/namedtuple outputs (namedtuple defined by the producer)."""
    cfg = {"scale": [torch.tensor(2.0)], "shifts": [torch.ones(3), torch.full((3,), 2.0)]}
    return Program(Containers(), (torch.randn(2, 3), cfg))


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    hidden: torch.Tensor


pytree.register_dataclass(Output, serialized_type_name="conformance.corpus.basic.Output")


class DataclassOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return Output(logits=h.softmax(-1), hidden=h)


@case("dataclass_output", tags=("fast",))
def dataclass_output():
    """A registered dataclass output whose class only the producer can import (loader falls back)."""
    return Program(DataclassOut(), (torch.randn(2, 4),))


class ManyOps(nn.Module):
    def forward(self, x, y):
        z = torch.cat([x, y], dim=0)
        z = z.transpose(0, 1).contiguous().view(-1)
        idx = torch.argsort(z)
        w = torch.where(z > 0, z, torch.zeros_like(z))
        return torch.gather(w, 0, idx), z.max(), torch.nn.functional.layer_norm(x, (4,)), x.to(torch.float16)


@case("many_ops", tags=("full",))
def many_ops():
    """A mix of view, reduction, indexing and dtype-conversion ops."""
    return Program(ManyOps(), (torch.randn(3, 4), torch.randn(2, 4)))
