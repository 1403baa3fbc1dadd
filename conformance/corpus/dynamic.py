"""Dynamic shapes: Dim ranges, derived dims, unbacked values, SymInt/SymFloat/SymBool nodes and outputs."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.export import Dim

from conformance.corpus._case import Program, case
from conformance.corpus.basic import MLP


@case("dynamic_batch", tags=("fast",))
def dynamic_batch():
    """A batch Dim with min and max; other batch sizes valid, sizes outside the range rejected.

    Every invalid input here is rejected before the graph runs: by a guard
    (batch > 16, a wrong static size) or by the input tree spec (one input too
    many). A rank mismatch is not listed: torch has no guard for it, it fails
    inside the matmul."""
    batch = Dim("batch", min=2, max=16)
    return Program(MLP(), (torch.randn(4, 8),), dynamic_shapes=({0: batch},),
                   extra_inputs=[((torch.randn(2, 8),), {}), ((torch.randn(16, 8),), {})],
                   invalid_inputs=[((torch.randn(17, 8),), {}), ((torch.randn(4, 9),), {}),
                                   ((torch.randn(4, 8), torch.randn(4, 8)), {})])


class TwoInputs(nn.Module):
    def forward(self, x, y):
        return torch.cat([x, x], dim=0) + y, x.sum() * y.shape[0]


@case("derived_dim_mul", tags=("fast",))
def derived_dim_mul():
    """A derived dim: y.shape[0] == 2 * x.shape[0]."""
    d = Dim("d", min=1, max=32)
    return Program(TwoInputs(), (torch.randn(3, 4), torch.randn(6, 4)),
                   dynamic_shapes={"x": {0: d}, "y": {0: 2 * d}},
                   extra_inputs=[((torch.randn(5, 4), torch.randn(10, 4)), {})],
                   invalid_inputs=[((torch.randn(5, 4), torch.randn(9, 4)), {})])


class Shifted(nn.Module):
    def forward(self, x, y):
        return x + y[1:], y[:-1] - x


@case("derived_dim_add", tags=("fast",))
def derived_dim_add():
    """A derived dim: y.shape[0] == x.shape[0] + 1."""
    d = Dim("d", min=2, max=32)
    return Program(Shifted(), (torch.randn(4, 3), torch.randn(5, 3)),
                   dynamic_shapes={"x": {0: d}, "y": {0: d + 1}},
                   extra_inputs=[((torch.randn(7, 3), torch.randn(8, 3)), {})],
                   invalid_inputs=[((torch.randn(7, 3), torch.randn(7, 3)), {})])


class Unbacked(nn.Module):
    def forward(self, x, n):
        k = n.item()
        torch._check(k >= 1)
        torch._check(k <= 8)
        return x[:k] * 2, torch.zeros(k, 2)


@case("unbacked_item", tags=("fast",))
def unbacked_item():
    """An unbacked SymInt from .item() bounded with torch._check; out-of-range values rejected at run time."""
    return Program(Unbacked(), (torch.randn(8, 3), torch.tensor(3)),
                   extra_inputs=[((torch.randn(8, 3), torch.tensor(8)), {})],
                   invalid_inputs=[((torch.randn(8, 3), torch.tensor(9)), {})])


class Nonzero(nn.Module):
    def forward(self, x):
        idx = torch.nonzero(x > 0)
        return idx, x[x > 0].sum()


@case("unbacked_nonzero", tags=("full",))
def unbacked_nonzero():
    """Data-dependent output sizes (nonzero, boolean masking)."""
    return Program(Nonzero(), (torch.tensor([[1.0, -1.0], [2.0, 0.5]]),),
                   extra_inputs=[((torch.tensor([[-1.0, -1.0], [-2.0, -0.5]]),), {})])


class SelectUnbacked(nn.Module):
    def forward(self, x, y):
        i = x.item()  # select binds symbols of its own for the index and the storage offset
        return y.select(0, i), y[:, i]


@case("unbacked_select", tags=("full",))
def unbacked_select():
    """select at an unbacked index: the node binds a symbol defined by its own output's storage offset."""
    return Program(SelectUnbacked(), (torch.tensor(1), torch.randn(4, 4)),
                   extra_inputs=[((torch.tensor(3), torch.randn(4, 4)), {}),
                                 ((torch.tensor(-2), torch.randn(4, 4)), {})])


class TolistSplit(nn.Module):
    def forward(self, x, y, z):
        sizes = x.tolist()  # unbind + item per element
        for s in sizes:
            torch._check(s >= 0)
        torch._check(sum(sizes) == y.shape[0])
        a, b = z.unbind(0)
        return [t * 2 for t in y.split(sizes)], y[a.item()] + y[b.item()]


@case("unbacked_tolist_unbind", tags=("full",))
def unbacked_tolist_unbind():
    """tolist() sizes for split_with_sizes and unbind().item() indices: unbacked symbols from several nodes."""
    return Program(TolistSplit(), (torch.tensor([1, 2]), torch.randn(3, 2), torch.tensor([0, 2])),
                   extra_inputs=[((torch.tensor([3, 0]), torch.randn(3, 2), torch.tensor([2, 1])), {})],
                   invalid_inputs=[((torch.tensor([2, 2]), torch.randn(3, 2), torch.tensor([0, 2])), {})])


class SymFloatBool(nn.Module):
    def forward(self, x):
        n = x.shape[0]
        scaled = x * (n / 3)  # SymFloat node (operator.truediv)
        as_float = torch.sym_float(n)
        branch = torch.cond(n > 4, lambda y: y + 1, lambda y: y - 1, (x,))  # SymBool predicate
        return scaled, as_float, branch


@case("symfloat_symbool", tags=("fast",))
def symfloat_symbool():
    """SymFloat (n / 3, sym_float) and SymBool (n > 4 as a cond predicate) nodes; a SymFloat output."""
    n = Dim("n", min=2, max=20)
    return Program(SymFloatBool(), (torch.randn(6, 2),), dynamic_shapes=({0: n},),
                   extra_inputs=[((torch.randn(3, 2),), {}), ((torch.randn(20, 2),), {})],
                   invalid_inputs=[((torch.randn(21, 2),), {})])


class SymIntOut(nn.Module):
    def forward(self, x):
        return x.shape[0] * 2, x.sum(1), x.shape[1]


@case("symint_output", tags=("full",))
def symint_output():
    """SymInt outputs (x.shape[0] * 2) next to a static int output."""
    return Program(SymIntOut(), (torch.randn(5, 3),), dynamic_shapes=({0: Dim("n", min=1, max=64)},),
                   extra_inputs=[((torch.randn(9, 3),), {})])


class Reshapes(nn.Module):
    def forward(self, x):
        b, s, h = x.shape
        y = x.reshape(b * s, h) * 2
        return y.reshape(b, s, h).sum(1), torch.arange(s) * b, x.new_zeros(b, s + 1)


@case("dynamic_multi_dims", tags=("full",))
def dynamic_multi_dims():
    """Several dynamic dims in arithmetic (b*s views, arange(s))."""
    b, s = Dim("b", min=1, max=8), Dim("s", min=2, max=64)
    return Program(Reshapes(), (torch.randn(2, 5, 4),), dynamic_shapes=({0: b, 1: s},),
                   extra_inputs=[((torch.randn(8, 64, 4),), {}), ((torch.randn(1, 2, 4),), {})],
                   invalid_inputs=[((torch.randn(9, 5, 4),), {})])


@case("dynamic_auto", tags=("full",))
def dynamic_auto():
    """Dim.AUTO dims: ranges inferred by export."""
    return Program(MLP(), (torch.randn(4, 8),), dynamic_shapes=({0: Dim.AUTO},),
                   extra_inputs=[((torch.randn(7, 8),), {})])
