"""A chain of elementwise layers: a program of any number of call nodes (three a layer), cheap to export."""

from __future__ import annotations

import torch

import pt2format


class Chain(torch.nn.Module):
    def __init__(self, layers: int):
        super().__init__()
        self.layers = layers
        self.w = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        for _ in range(self.layers):
            x = torch.tanh(x * self.w) + 0.5
        return x


def saved_chain(directory, layers: int):
    """(path of a saved Chain(layers) in `directory`, the module, an input); seeded, so the same every call."""
    torch.manual_seed(0)
    module = Chain(layers)
    x = torch.randn(4, 8)
    path = directory / f"chain{layers}.pt2f"
    pt2format.save(torch.export.export(module, (x,)), path)
    return path, module, x
