"""Traceable wrapper tensor subclasses for the subclass round-trip tests (module level, so they are importable).

`PairTensor` holds two tensors and applies every operator to both (like
torch's test TwoTensor); its flatten context carries plain values of each
kind the format stores (str, int, float, bool, list, dict, dtype, device).
`BadContextTensor` has a context the format must refuse (an arbitrary object).
`records()` is a context with an enum member, a (frozen, nested) dataclass
and a namedtuple, as torchao's contexts hold (structured values, schema 1.1).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import NamedTuple

import torch
from torch.utils import _pytree as pytree

import crafting
from pt2format._generated import model as m


class PairTensor(torch.Tensor):
    @staticmethod
    def __new__(cls, a, b, tag="pair", extra=None):
        return torch.Tensor._make_wrapper_subclass(cls, a.shape, strides=a.stride(), storage_offset=a.storage_offset(),
                                                   dtype=a.dtype, device=a.device, requires_grad=False)

    def __init__(self, a, b, tag="pair", extra=None):
        self.a, self.b = a, b
        self.tag = tag
        self.extra = extra if extra is not None else {"n": 3, "x": 0.5, "flag": True, "dims": [1, 2],
                                                       "dtype": torch.float16, "device": torch.device("cpu")}

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __tensor_flatten__(self):
        return ["a", "b"], {"tag": self.tag, "extra": self.extra}

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return PairTensor(inner["a"], inner["b"], ctx["tag"], ctx["extra"])

    def __repr__(self):
        return f"PairTensor({self.a!r}, {self.b!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        pair = next(x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, PairTensor))
        out_a = func(*pytree.tree_map_only(PairTensor, lambda t: t.a, args),
                     **pytree.tree_map_only(PairTensor, lambda t: t.a, kwargs))
        out_b = func(*pytree.tree_map_only(PairTensor, lambda t: t.b, args),
                     **pytree.tree_map_only(PairTensor, lambda t: t.b, kwargs))
        if isinstance(out_a, torch.Tensor):
            return PairTensor(out_a, out_b, pair.tag, pair.extra)
        return out_a


class BadContextTensor(PairTensor):
    def __tensor_flatten__(self):
        return ["a", "b"], object()


def pair(n: int = 3, seed: int = 0) -> PairTensor:
    g = torch.Generator().manual_seed(seed)
    return PairTensor(torch.randn(n, generator=g), torch.randn(n, generator=g))


class Mode(enum.Enum):
    FAST = "fast"
    EXACT = 2


@dataclasses.dataclass(frozen=True)
class Granule:
    dim: int


@dataclasses.dataclass
class Settings:
    granule: Granule
    mode: Mode
    scale: float = 1.0
    tags: list = dataclasses.field(default_factory=list)
    derived: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        self.derived = self.granule.dim * 10


class Span(NamedTuple):
    lo: int
    hi: int


RECORD_CLASSES = (Mode, Granule, Settings, Span)


def records() -> dict:
    s = Settings(Granule(-1), Mode.FAST, 0.5, ["x", 1])
    s.derived = 7  # a value __init__ would not compute: the loader must not run __init__/__post_init__
    return {"mode": Mode.EXACT, "settings": s, "span": Span(1, 2), "spans": [Span(3, 4)], "none": None}


def record_pair(seed: int = 0) -> PairTensor:
    p = pair(3, seed)
    return PairTensor(p.a, p.b, "records", records())


class RecordModule(torch.nn.Module):
    """A program whose parameter's flatten context holds `records()`."""

    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(record_pair(), requires_grad=False)

    def forward(self, x):
        return x + self.p


def _enum_value():
    return m.Value(m.EnumValue(class_fqn="subclass_samples.Mode", name="FAST"))


def record_mutations():
    """(name, mutate, message): files each reader must refuse with a ValidationError."""
    def outside(p):
        """EnumValue/ObjectValue name classes; only a subclass context, where the trust list applies, may hold them."""
        node = crafting.nodes(p)[0]
        node.metadata.custom = m.MapValue([m.MapEntry(m.Value(m.StringValue("k")), _enum_value())])

    def duplicate_field(p):
        row = next(t for t in p.tensors if t.subclass is not None)
        row.subclass.context = m.Value(m.ObjectValue(
            class_fqn="subclass_samples.Span", kind=m.ObjectKind.NAMEDTUPLE,
            fields=[m.ObjectField("lo", m.Value(m.IntValue(1))), m.ObjectField("lo", m.Value(m.IntValue(2)))]))

    def tensor_in_context(p):
        row = next(t for t in p.tensors if t.subclass is not None)
        row.subclass.context = m.Value(m.ObjectValue(
            class_fqn="subclass_samples.Span", kind=m.ObjectKind.NAMEDTUPLE,
            fields=[m.ObjectField("lo", m.Value(m.TensorRefValue(0))), m.ObjectField("hi", _enum_value())]))

    return [("outside", outside, "only in a tensor subclass's context"),
            ("duplicate_field", duplicate_field, "field names must be unique"),
            ("tensor_in_context", tensor_in_context, "tensor index out of range")]
