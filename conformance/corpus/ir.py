"""IR variants: the default training IR, run_decompositions() output, effect tokens."""

from __future__ import annotations

import torch
import torch.nn as nn

from conformance.corpus._case import Program, case
from conformance.corpus.basic import ConvNet


class TrainingIR(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.ln = nn.LayerNorm(4)

    def forward(self, x):
        y = self.ln(self.lin(x))
        y.add_(1)  # in-place op kept in the training IR
        return torch.nn.functional.gelu(y), y.detach()


@case("training_ir", tags=("fast",))
def training_ir():
    """The default export (training IR: linear, layer_norm, in-place add_, detach kept as such)."""
    return Program(TrainingIR(), (torch.randn(3, 4),))


@case("decomposed_core_aten", tags=("fast",))
def decomposed_core_aten():
    """run_decompositions() output (core ATen inference IR) of a conv net in training mode."""
    return Program(ConvNet().train(), (torch.randn(2, 3, 8, 8),), post=lambda ep: ep.run_decompositions())


@case("decomposed_custom_table", tags=("full",))
def decomposed_custom_table():
    """run_decompositions() with linear kept undecomposed (a custom decomposition table)."""
    def post(ep):
        table = torch.export.default_decompositions()
        table.pop(torch.ops.aten.linear.default, None)
        return ep.run_decompositions(table)

    return Program(TrainingIR(), (torch.randn(3, 4),), post=post)


class Print(nn.Module):
    def forward(self, x):
        torch.ops.aten._print("pt2format conformance: effect token")
        return x + 1


@case("effect_tokens", tags=("fast",))
def effect_tokens():
    """aten._print after run_decompositions(): with_effects, token inputs and outputs."""
    return Program(Print(), (torch.randn(2),), post=lambda ep: ep.run_decompositions())


class Annotated(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        y = self.lin(x) * self.scale
        return torch.nn.functional.silu(y), y.sum(0)


def _with_module_custom(ep):
    ep.graph_module.meta["custom"] = {"owner": "pt2format conformance", "version": 3, "flags": [True, False]}
    return ep


@case("node_and_module_metadata", tags=("fast",))
def node_and_module_metadata():
    """Node metadata torch carries (tensor_meta, requires_grad differing from val's) and graph_module.meta["custom"]."""
    return Program(Annotated(), (torch.randn(3, 4),), post=_with_module_custom)


@case("decomposed_metadata", tags=("fast",))
def decomposed_metadata():
    """run_decompositions() metadata: placeholder `desc` (AOT descriptors), seq_nr, original_aten."""
    return Program(Annotated(), (torch.randn(3, 4),),
                   post=lambda ep: _with_module_custom(ep.run_decompositions()))


class NoArguments(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.arange(6.0).reshape(2, 3))

    def forward(self):
        return self.table.cos() * 2


@case("no_arguments", tags=("full",))
def no_arguments():
    """A forward without arguments: torch records forward_arg_names == [] (not None)."""
    return Program(NoArguments(), ())
