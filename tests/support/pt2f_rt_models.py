"""Small programs covering the features the round-trip tests check; each builder returns a Case.

A Case holds the exported program, inputs the program accepts (the example
inputs plus other valid sizes for dynamic dimensions) and inputs it must
reject. Builders are functions so that a test only pays for what it uses.
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any

import torch
from torch.export import Dim, export


@dataclasses.dataclass
class Case:
    ep: Any
    valid: list  # [(args, kwargs)]
    invalid: list = dataclasses.field(default_factory=list)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 8)
        self.l2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def mlp():
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    ep = export(MLP(), (x,))
    return Case(ep, [((x,), {})], [((torch.randn(3, 4),), {})])


class DerivedDims(torch.nn.Module):
    def forward(self, x, y, z):
        return torch.cat([x, x], 0) + y, z[1:] * 2, x.shape[0] * 3


def dynamic_derived():
    d = Dim("d", min=2, max=32)
    x, y, z = torch.randn(3, 4), torch.randn(6, 4), torch.randn(4, 2)
    ep = export(DerivedDims(), (x, y, z), dynamic_shapes={"x": {0: d}, "y": {0: 2 * d}, "z": {0: d + 1}})
    valid = [((x, y, z), {}), ((torch.randn(5, 4), torch.randn(10, 4), torch.randn(6, 2)), {}),
             ((torch.randn(32, 4), torch.randn(64, 4), torch.randn(33, 2)), {})]
    invalid = [((torch.randn(5, 4), torch.randn(9, 4), torch.randn(6, 2)), {}),  # y != 2*d
               ((torch.randn(1, 4), torch.randn(2, 4), torch.randn(2, 2)), {}),  # d < min
               ((torch.randn(33, 4), torch.randn(66, 4), torch.randn(34, 2)), {})]  # d > max
    return Case(ep, valid, invalid)


class Unbacked(torch.nn.Module):
    def forward(self, x, n):
        k = n.item()
        torch._check(k >= 2)
        torch._check(k <= 16)
        return torch.zeros(k) + x.sum(), x.nonzero()


def unbacked():
    x, n = torch.tensor([1.0, 0.0, 2.0]), torch.tensor(4)
    ep = export(Unbacked(), (x, n))
    return Case(ep, [((x, n), {}), ((torch.tensor([0.0, 5.0, 0.0]), torch.tensor(9)), {})],
                [((x, torch.tensor(1)), {})])


class NestedCond(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3))

    def forward(self, x, n):
        def inner_true(x):
            return torch.cond(x.sum() > 0, lambda x: x + self.w, lambda x: x - 1, (x,))

        def outer_false(x):
            return x * 2
        return torch.cond(n.sum() > 0, inner_true, outer_false, (x,))


def nested_cond():
    x, n = torch.randn(3), torch.tensor([1])
    ep = export(NestedCond(), (x, n))
    return Case(ep, [((x, n), {}), ((-x.abs(), torch.tensor([1])), {}), ((x, torch.tensor([-1])), {})])


class WhileLoop(torch.nn.Module):
    def forward(self, x, it):
        def cond_fn(i, x):
            return i < 3

        def body_fn(i, x):
            return i + 1, x * 2
        return torch._higher_order_ops.while_loop(cond_fn, body_fn, (it, x))


def while_loop():
    x, it = torch.randn(3), torch.tensor(0)
    return Case(export(WhileLoop(), (x, it)), [((x, it), {}), ((x, torch.tensor(2)), {})])


class MapBody(torch.nn.Module):
    def forward(self, xs, y):
        from torch._higher_order_ops.map import map as hop_map
        return hop_map(lambda x, y: x + y, xs, y)


def map_hop():
    xs, y = torch.randn(4, 3), torch.randn(3)
    return Case(export(MapBody(), (xs, y)), [((xs, y), {})])


class Scan(torch.nn.Module):
    def forward(self, init, xs):
        from torch._higher_order_ops.scan import scan

        def f(c, x):
            return c + x, c * x
        return scan(f, init, xs)


def scan_hop():
    init, xs = torch.randn(3), torch.randn(5, 3)
    return Case(export(Scan(), (init, xs)), [((init, xs), {})])


class BufferMutation(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(2))
        self.register_buffer("scratch", torch.ones(2), persistent=False)
        self.const = torch.tensor([10.0, 20.0])  # lifted tensor constant

    def forward(self, x):
        self.count.add_(1)
        self.scratch.mul_(2)
        return x + self.count + self.scratch + self.const


def buffers():
    x = torch.randn(2)
    return Case(export(BufferMutation(), (x,)), [((x,), {})])


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, idx):
        return self.head(self.emb(idx))


def tied():
    idx = torch.tensor([[1, 2, 3]])
    return Case(export(Tied(), (idx,)), [((idx,), {})])


class KwargsScalars(torch.nn.Module):
    def forward(self, x, scale: float, *, bias=None, flag: bool = True, n: int = 2, name: str = "a"):
        y = x * scale * n
        if bias is not None:
            y = y + bias
        return y if flag else -y


def kwargs_scalars():
    x = torch.randn(3)
    kw = {"bias": None, "flag": True, "n": 3, "name": "a"}
    ep = export(KwargsScalars(), (x, 2.0), kw)
    return Case(ep, [((x, 2.0), kw)])


class Views(torch.nn.Module):
    def __init__(self):
        super().__init__()
        base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
        self.p = torch.nn.Parameter(base.t())  # non-contiguous
        self.register_buffer("off", base[1:, 2:])  # offset, non-contiguous view of the same storage
        self.register_buffer("row", base[2])  # another view of it
        self.const = base[:, ::2]  # a lifted tensor constant: strided view of the same storage

    def forward(self, x):
        return x @ self.p + self.off.sum() + self.row.sum() + self.const.sum()


def views():
    x = torch.randn(2, 6)
    return Case(export(Views(), (x,)), [((x,), {})])


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64, torch.bool, torch.complex32, torch.complex64, torch.complex128, torch.uint16,
          torch.uint32, torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
          torch.float8_e5m2fnuz, torch.float8_e8m0fnu]


class Dtypes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        for i, dt in enumerate(DTYPES):
            raw = torch.randint(0, 255, (5 * torch.empty(0, dtype=dt).element_size(),), dtype=torch.uint8,
                                generator=g)
            self.register_buffer(f"b{i}", raw.view(dt))
        self.register_buffer("special", torch.tensor([float("nan"), -0.0, float("inf"), -float("inf")]))

    def forward(self, x):
        return x + self.special.sum() * 0 + self.b0.sum()


def dtypes():
    x = torch.randn(5)
    return Case(export(Dtypes(), (x,)), [((x,), {})])


Pair = namedtuple("Pair", ["a", "b"])


class NamedTupleOut(torch.nn.Module):
    def forward(self, x):
        return Pair(x + 1, x * 2)


def namedtuple_out():
    x = torch.randn(2)
    return Case(export(NamedTupleOut(), (x,)), [((x,), {})])


@dataclasses.dataclass
class Out:
    total: torch.Tensor
    scaled: torch.Tensor


torch.export.register_dataclass(Out, serialized_type_name="pt2f_rt_models.Out")


class DataclassOut(torch.nn.Module):
    def forward(self, x):
        return Out(total=x.sum(), scaled=x * 3)


def dataclass_out():
    x = torch.randn(3)
    return Case(export(DataclassOut(), (x,)), [((x,), {})])


class DictIO(torch.nn.Module):
    def forward(self, inputs: dict, xs: list):
        return {"sum": inputs["a"] + inputs["b"], "list": [xs[0] * 2, xs[1]]}


def dict_io():
    args = ({"a": torch.randn(2), "b": torch.randn(2)}, [torch.randn(2), torch.randn(2)])
    return Case(export(DictIO(), args), [(args, {})])


class NoneInput(torch.nn.Module):
    def forward(self, x, maybe=None, k: int = 3):
        return x * k if maybe is None else x + maybe


def none_input():
    x = torch.randn(2)
    return Case(export(NoneInput(), (x, None, 4)), [((x, None, 4), {})])


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = MLP()
        self.norm = torch.nn.LayerNorm(3)

    def forward(self, x):
        return self.norm(self.block(x))


def nested_modules():
    x = torch.randn(2, 4)
    ep = export(Nested(), (x,), preserve_module_call_signature=("block",))
    return Case(ep, [((x,), {})])


class SymIntInput(torch.nn.Module):
    def forward(self, x, n: int):
        return x.repeat(n, 1) * n, n + 1


def symint_input():
    x = torch.randn(2, 3)
    ep = export(SymIntInput(), (x, 3), dynamic_shapes={"x": None, "n": Dim.DYNAMIC})
    return Case(ep, [((x, 3), {}), ((x, 7), {})])


class GradAutocast(torch.nn.Module):
    """no_grad and autocast regions become wrap_with_set_grad_enabled / wrap_with_autocast subgraphs."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            y = self.lin(x) * 2
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = self.lin(x)
        return y + 1, z


def grad_autocast():
    x = torch.randn(2, 3)
    return Case(export(GradAutocast(), (x,)), [((x,), {})])


class Effects(torch.nn.Module):
    """A side-effecting op: effect tokens (with_effects) after decompositions."""

    def forward(self, x):
        torch.ops.aten._print("pt2f effects test")
        return x + 1


def effects():
    x = torch.randn(2)
    return Case(export(Effects(), (x,)), [((x,), {})])


class InputMutation(torch.nn.Module):
    """x.add_() on a user input: USER_INPUT_MUTATION output after decompositions."""

    def forward(self, x):
        x.add_(1)
        return x * 2


def input_mutation():
    x = torch.randn(3)
    return Case(export(InputMutation(), (x.clone(),)), [((x,), {})])


class Loss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        return (self.lin(x) ** 2).sum()


def joint_graph():
    """A forward-backward graph: LOSS_OUTPUT and GRADIENT_TO_PARAMETER outputs."""
    from torch.export.experimental import _export_forward_backward
    x = torch.randn(2, 3)
    ep = _export_forward_backward(export(Loss(), (x,)).run_decompositions())
    return Case(ep, [])


ALL = {f.__name__: f for f in [mlp, dynamic_derived, unbacked, nested_cond, while_loop, map_hop, scan_hop, buffers,
                              tied, kwargs_scalars, views, dtypes, namedtuple_out, dataclass_out, dict_io,
                              none_input, nested_modules, symint_input, grad_autocast, effects, input_mutation,
                              joint_graph]}


# -- custom operators ---------------------------------------------------------------------------------

@torch.library.custom_op("pt2f_rt::scale", mutates_args=())
def _scale(x: torch.Tensor, factor: float = 2.0, *, bias: int = 0) -> torch.Tensor:
    return x * factor + bias


@_scale.register_fake
def _(x, factor=2.0, *, bias=0):
    return torch.empty_like(x)


@torch.library.custom_op("pt2f_rt::accumulate", mutates_args=("acc",))
def _accumulate(acc: torch.Tensor, x: torch.Tensor) -> None:
    acc.add_(x)


@_accumulate.register_fake
def _(acc, x):
    return None


@torch.library.custom_op("pt2f_rt::split2", mutates_args=())
def _split2(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x[:1].clone(), x[1:].clone()


@_split2.register_fake
def _(x):
    return x[:1].clone(), x[1:].clone()


class CustomOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.zeros(3))

    def forward(self, x):
        y = torch.ops.pt2f_rt.scale(x, 3.0, bias=1)
        torch.ops.pt2f_rt.accumulate(self.acc, y)  # mutating: auto_functionalized after decompositions
        a, b = torch.ops.pt2f_rt.split2(y)
        return a + self.acc[:1], b


def custom_ops():
    x = torch.randn(3)
    return Case(export(CustomOps(), (x,)), [((x,), {})])


ALL["custom_ops"] = custom_ops
