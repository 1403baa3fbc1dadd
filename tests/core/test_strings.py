"""String classes (pt2format/_strings.py): the reserved names match torch's, and real programs' names fit."""

import functools
import json
import keyword
import subprocess
import sys

import pytest
import torch

from pt2format._strings import CHECKERS, RESERVED_MEMBER_NAMES, RESERVED_NODE_META_KEYS
from pt2format.errors import EncodingError, StringClassError


_MEMBER_NAMES_CODE = """
import json, torch, torch.fx as fx
from torch.export.unflatten import InterpreterModule, UnflattenedModule
gm = fx.GraphModule(torch.nn.Module(), fx.Graph())
names = set(dir(gm)) | set(vars(gm)) | set(dir(fx.GraphModule))
names |= set(dir(UnflattenedModule)) | set(dir(InterpreterModule)) | set(vars(InterpreterModule(fx.Graph())))
print(json.dumps(sorted(n for n in names if not (n.startswith("__") and n.endswith("__")))))
"""


@functools.cache
def _torch_member_names() -> frozenset:
    """Every non-dunder attribute of the modules torch builds from a program (GraphModule, unflattened modules).

    Asked of a fresh interpreter: other libraries in the test process (transformers) add methods to
    nn.Module at import time, and the list is about torch's own classes.
    """
    out = subprocess.run([sys.executable, "-c", _MEMBER_NAMES_CODE], capture_output=True, text=True, check=True)
    return frozenset(json.loads(out.stdout))


def test_reserved_member_names_cover_torchs_modules():
    missing = _torch_member_names() - RESERVED_MEMBER_NAMES
    assert not missing, f"torch's modules define names the attr_path class accepts: {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(n for n in _torch_member_names() if hasattr(torch.nn.Module(), n)))
def test_torch_refuses_a_submodule_named_like_a_module_member(name):
    """torch itself refuses these as submodule names, so no real module produces a state path with one."""
    with pytest.raises(KeyError, match="already exists"):
        torch.nn.Module().add_module(name, torch.nn.Module())


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(2)])
        self.register_buffer("running", torch.zeros(4))

    def forward(self, x, *, scale):
        for layer in self.layers:
            x = layer(x).relu() * scale["s"]
        return {"out": x + self.running}


def test_names_of_a_real_export_fit_their_classes():
    ep = torch.export.export(_Block(), (torch.randn(2, 4),), {"scale": {"s": torch.tensor(2.0)}})
    for node in ep.graph.nodes:
        CHECKERS["local_name"](node.name, "Node.name")
        for key, (path, type_name) in node.meta.get("nn_module_stack", {}).items():
            CHECKERS["token"](key, "ModuleStackEntry.key")
            CHECKERS["optional_attr_path"](path, "ModuleStackEntry.path")
            CHECKERS["qualified_name"](type_name, "ModuleStackEntry.type_name")
    for name in ep.state_dict:
        CHECKERS["attr_path"](name, "StateEntry.name")


@pytest.mark.parametrize("cls,good,bad", [
    ("local_name", ["x", "p_layers_0_weight", "getitem_3", "to"], ["self", "class", "__init__", "a-b", "1x", ""]),
    ("identifier", ["self", "x_1"], ["lambda", "__class__", "a b"]),
    ("attr_path", ["layers.0.weight", "_tensor_constant0"], ["training", "lin.forward", "a..b", "a.__dict__", ""]),
    ("optional_attr_path", ["", "layers.0"], ["_modules"]),
    ("qualified_name", ["torch.ops.aten.add.Tensor", "f.<locals>.M", "__main__.M"], ["os;x", "a.b c", "a.class"]),
    ("file_name", ["m-00001-of-00002.pt2shard"], ["..", ".hidden", "a/b", "a\\b", ""]),
    ("token", ["L__self__layers.0", "method-wrapper.__get__"], ["a b", "a'b", 'a"b', "a`b"]),
    ("metadata_key", ["notes.txt", "ünï"], ["a\nb", "a\u2028b", ""]),
    ("free_text", ["", "any\ntext 'quotes' \"too\""], []),
])
def test_class_grammar(cls, good, bad):
    for s in good:
        assert CHECKERS[cls](s, "T.f") == s
    for s in bad:
        with pytest.raises(StringClassError) as e:
            CHECKERS[cls](s, "T.f")
        assert e.value.string_class == cls and e.value.path == "T.f"


def test_keywords_are_never_identifiers():
    for kw in keyword.kwlist:
        with pytest.raises(StringClassError):
            CHECKERS["identifier"](kw, "T.f")


def test_names_are_bounded_and_lone_surrogates_are_encoding_errors():
    with pytest.raises(StringClassError):
        CHECKERS["identifier"]("a" * 1025, "T.f")
    with pytest.raises(EncodingError, match="surrogate"):
        CHECKERS["free_text"]("\ud800", "T.f")


def test_structured_meta_keys_are_reserved():
    assert {"val", "tensor_meta", "stack_trace", "nn_module_stack", "custom"} <= RESERVED_NODE_META_KEYS
