"""Small exported programs for the tests that mirror the converter modules (tests/exporter, tests/loaders).

Each is torch's own `torch.export.export` output, built once per session:
the reference every mirror test compares a converter's result with.
"""

from __future__ import annotations

import functools

import torch
from torch.export import Dim


class Small(torch.nn.Module):
    """Parameters, a mutated buffer, a non-persistent buffer, a lifted constant, tuple and keyword inputs."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("count", torch.zeros(1))
        self.register_buffer("scratch", torch.ones(3), persistent=False)
        self.c = torch.tensor([2.0, 2.0, 2.0])

    def forward(self, x, pair, *, bias):
        self.count.add_(1)
        y = self.lin(x) * self.c + pair[0] + self.scratch + bias
        return {"out": y, "aux": (pair[1].sum(),)}


def small_inputs():
    return (torch.randn(2, 4), (torch.randn(3), torch.randn(5))), {"bias": torch.randn(3)}


@functools.lru_cache(maxsize=None)
def small_ep() -> torch.export.ExportedProgram:
    torch.manual_seed(0)
    args, kwargs = small_inputs()
    return torch.export.export(Small(), args, kwargs)


class Dynamic(torch.nn.Module):
    def forward(self, x):
        return (x * 2).sum(0) + x.shape[0]


@functools.lru_cache(maxsize=None)
def dynamic_ep() -> torch.export.ExportedProgram:
    batch = Dim("batch", min=2, max=64)
    return torch.export.export(Dynamic(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: batch}})
