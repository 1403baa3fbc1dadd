"""Programs calling custom operators from torch.library.custom_op (functional and mutating)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.export import Dim

import conformance.oplibs.custom_ops  # noqa: F401 - defines pt2f_conf::*
from conformance.corpus._case import Program, case

_OPS = ("conformance.oplibs.custom_ops",)


class Functional(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, y):
        a = torch.ops.pt2f_conf.scaled_add(self.lin(x), y, 0.5)
        s = torch.ops.pt2f_conf.stack_sum([a, y, x], dim=1)
        p, q = torch.ops.pt2f_conf.split_pair(a)
        return s, p * q


@case("custom_op", tags=("fast",), child_imports=_OPS)
def custom_op():
    """Functional custom ops: float, tensor-list and optional-int arguments, two outputs."""
    return Program(Functional(), (torch.randn(2, 4), torch.randn(2, 4)),
                   dynamic_shapes=({0: Dim("b", max=64)}, {0: Dim("b", max=64)}),
                   extra_inputs=[((torch.randn(5, 4), torch.randn(5, 4)), {})])


class Mutating(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(4))

    def forward(self, x, out):
        torch.ops.pt2f_conf.add_into(self.total, x)
        torch.ops.pt2f_conf.add_into(out, x * 2)
        return self.total * 1.0, out + 0


@case("custom_op_mutating", tags=("full",), child_imports=_OPS)
def custom_op_mutating():
    """A mutating custom op on a buffer and on a user input (called in place in the training IR)."""
    return Program(Mutating(), (torch.randn(4), torch.zeros(4)))


@case("custom_op_mutating_decomposed", tags=("fast",), child_imports=_OPS)
def custom_op_mutating_decomposed():
    """The mutating custom op after run_decompositions() (auto_functionalized_v2 in the inference IR)."""
    return Program(Mutating(), (torch.randn(4), torch.zeros(4)), post=lambda ep: ep.run_decompositions())
