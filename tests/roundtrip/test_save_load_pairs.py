"""Save/load pairs change together: every field of the shared tables is written by the exporter and read back.

exporter/_values.py pairs with loaders/_values.py (generic `Value` trees) and
exporter/_arguments.py with loaders/_arguments.py (node arguments, through the
graph exporter and builder). A field added to a table on one side only is the
failure these tests catch, by walking the schema's own field lists
(`pt2format._generated.model`):

- Values: samples the exporter converts (`to_value`) cover every field of
  every `ValueKind` member with a non-default value, and the loader gives back
  an object of the same type and value (`from_value`), which converts to the
  same tree again. A new field the exporter never sets leaves a field
  uncovered; a field the loader ignores changes the object or the second tree.
- Arguments: one program whose nodes use most `ArgumentValue` members is
  saved, loaded and saved again; every node's arguments must be equal trees,
  and every field of every member the program uses must be set somewhere.

The members no small program can produce (torchbind objects, effect tokens,
nested tensor lists, ...) are listed in `_ARGUMENTS_NOT_DRAWN` with why; a
member outside both lists fails the test until someone adds it to one.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import io
import warnings

import torch
import torch.nn as nn

import pt2format
from pt2format._generated import model as m
from pt2format.exporter._values import to_value
from pt2format.loaders._values import from_value


class Color(enum.Enum):
    RED = 1


@dataclasses.dataclass
class Box:
    w: int
    tag: str


Pair = collections.namedtuple("Pair", ["a", "b"])

_TRUSTED = {f"{c.__module__}.{c.__qualname__}": c for c in (Color, Box, Pair)}


def _samples():
    t, u = torch.arange(3.0), torch.ones(2)
    return [u, 
        None, True, -7, 2.5, "text", b"\x00\xff", 1 - 2j, [1, [2.0]], (1, "a"), torch.Size([2, 3]),
        {"k": 1, 3: None}, t, torch.float16, torch.device("cpu", 0), Color.RED, Box(4, "x"), Pair(1, t),
    ]


def _same(a, b) -> bool:
    """Equal values of the same types all the way down (tensors by identity of the callback's result)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a is b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return a == b


def _set_fields(obj, out: set) -> None:
    """(table, field) of every field holding a non-default value anywhere in a model tree."""
    if isinstance(obj, list):
        for x in obj:
            _set_fields(x, out)
        return
    if not isinstance(obj, m.ModelObject):
        return
    for name, _id, _kind, _elem, _ref, default, deprecated, _req in type(obj).FIELDS:
        v = getattr(obj, name)
        if deprecated:
            continue
        if v is not None and v != default and v != []:
            out.add((type(obj).__name__, name))
        _set_fields(v, out)


def _member_fields(union: str) -> set:
    return {(name, f[0]) for name in m.UNIONS[union] for f in getattr(m, name).FIELDS if not f[6]}


def test_every_value_field_is_written_by_the_exporter_and_read_by_the_loader():
    tensors: list = []

    def tensor_ref(t, path):
        for i, u in enumerate(tensors):
            if u is t:
                return i
        tensors.append(t)
        return len(tensors) - 1

    covered: set = set()
    for obj in _samples():
        v = to_value(obj, tensor_ref=tensor_ref, objects=True)
        _set_fields(v, covered)
        back = from_value(v, tensor=lambda i, path: tensors[i], classes=_TRUSTED)
        assert _same(back, obj), f"{obj!r} came back as {back!r}"
        assert to_value(back, tensor_ref=tensor_ref, objects=True) == v
    missing = _member_fields("ValueKind") - covered
    assert not missing, f"Value fields no exporter sample sets (add a sample, or write them): {sorted(missing)}"


# ArgumentValue members a small program here does not produce, and why (the rest must be covered).
_ARGUMENTS_NOT_DRAWN = {
    "NestedTensorListArgument": "lists of tensor lists: only some fbgemm/custom operators take them",
    "TokenArgument": "effect tokens: programs with ordered side effects (torchbind, with_effects)",
    "CustomObjArgument": "torchbind objects: needs a compiled torchbind test library",
    "IntListListArgument": "int[][] parameters: no aten operator of a small program takes one",
    "FloatListListArgument": "float[][] parameters: no aten operator of a small program takes one",
    "SymFloatListArgument": "SymFloat[] parameters: no aten operator takes one",
    "SymBoolListArgument": "SymBool[] parameters: no aten operator takes one",
    "SymBoolArgument": "a SymBool argument: only torch._check-style asserts on unbacked values",
    "OperatorArgument": "an operator as an argument: auto_functionalized and other HOPs with custom ops",
    "StringToArgumentMapArgument": "kwargs maps: auto_functionalized_v2 of custom ops",
    "MixedListArgument": "lists mixing kinds: HOP operands such as flex_attention's",
    "TreeSpecArgument": "tree specs: flat_apply nodes of nonstrict export of autograd Functions",
    "ComplexArgument": "a complex scalar: needs a complex tensor operator in the program",
    "StringListArgument": "str[] parameters: einsum-like operators only",
    "FloatListArgument": "float[] parameters: upsample scale factors",
    "BoolListArgument": "bool[] parameters: rare (native_batch_norm_backward output_mask)",
    "SymFloatArgument": "a SymFloat argument: float inputs made dynamic",
    "OptionalTensorArgument": "Tensor? parameters given a tensor",
}


class _ArgKinds(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, y):
        a = torch.cat([x, x])  # Tensor[], int
        b = a.view(-1, x.shape[1])  # SymInt[] with a symbol
        c = torch.nn.functional.layer_norm(b, (4,), None, None, 1e-5)  # None, float
        d = x.new_zeros((2, 4), dtype=torch.float16, layout=torch.strided, device="cpu")  # dtype, layout, device
        e = c.clone(memory_format=torch.contiguous_format)  # memory format
        f = torch.ops.aten.index.Tensor(y, [None, torch.tensor([0, 1])])  # Tensor?[] with a None
        g = torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))  # subgraphs
        h = torch.arange(x.shape[0]) + torch.full((x.shape[0],), 2.0)  # a SymInt, a SymInt[]
        i = torch.nn.functional.gelu(x, approximate="tanh")  # a string
        j = x.sum(dim=0, keepdim=True)  # a bool
        return self.lin(e), d, f, g, h, i, j


def test_every_argument_field_survives_save_load_save():
    x, y = torch.randn(3, 4), torch.randn(5, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(_ArgKinds(), (x, y), dynamic_shapes={"x": {0: torch.export.Dim("n", max=64)},
                                                                     "y": None})
    first = io.BytesIO()
    pt2format.save(ep, first)
    second = io.BytesIO()
    pt2format.save(pt2format.load(first.getvalue()), second)
    graphs = [pt2format.read(b.getvalue()).package.programs[0].graph for b in (first, second)]

    def nodes(g):
        out = []
        for n in g.nodes:
            out.append(n)
            for a in n.inputs:
                if isinstance(a.value, m.GraphArgument):
                    out += nodes(a.value.graph)
        return out

    covered: set = set()
    pairs = list(zip(nodes(graphs[0]), nodes(graphs[1]), strict=True))
    for n1, n2 in pairs:
        assert (n1.name, n1.target) == (n2.name, n2.target)
        assert n1.inputs == n2.inputs, f"node {n1.name}: arguments differ after load and save"
        for a in n1.inputs:
            _set_fields(a.value, covered)
    used = {type(a.value).__name__ for n1, _ in pairs for a in n1.inputs}
    members = set(m.UNIONS["ArgumentValue"])
    assert not members - used - set(_ARGUMENTS_NOT_DRAWN), \
        f"members neither drawn here nor listed in _ARGUMENTS_NOT_DRAWN: {sorted(members - used - set(_ARGUMENTS_NOT_DRAWN))}"
    missing = {(t, f) for t, f in _member_fields("ArgumentValue") if t in used} - covered
    # Set only when a subgraph's get_attr node is named apart from its target, and for a SymInt argument holding
    # a plain int (torch gives such an argument an IntArgument): neither occurs in this program.
    missing -= {("GraphArgument", "node_name"), ("SymIntArgument", "value")}
    assert not missing, f"argument fields the exporter never set on this program: {sorted(missing)}"
