"""String classes (pt2format/_strings.py): the reserved names match torch's, and real programs' names fit."""

import functools
import json
import keyword
import subprocess
import sys

import pytest
import torch

from pt2format._strings import (CHECKERS, RESERVED_MEMBER_NAMES, RESERVED_NODE_META_KEYS, STRING_CLASSES,
                                class_admits, is_identifier)
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


def test_reserved_member_names_are_torchs_own():
    """Our list (SPEC.md §9, taken from torch 2.13.0) is exactly torch's: fails when torch adds or drops one."""
    torch_names = _torch_member_names()
    missing, extra = torch_names - RESERVED_MEMBER_NAMES, RESERVED_MEMBER_NAMES - torch_names
    assert not missing, f"torch's modules define names the attr_path class accepts: {sorted(missing)}"
    assert not extra, f"names reserved here that torch {torch.__version__} no longer defines: {sorted(extra)}"


def test_reserved_lists_are_spelled_out_in_the_spec():
    """SPEC.md §9 lists every reserved name in full, not as examples."""
    from pathlib import Path

    spec = (Path(__file__).resolve().parents[2] / "schema" / "SPEC.md").read_text()
    section = spec.split("## 9. String classes", 1)[1].split("\n## 10.", 1)[0]
    for name in sorted(RESERVED_MEMBER_NAMES | RESERVED_NODE_META_KEYS):
        assert f"`{name}`" in section, f"SPEC.md §9 does not list reserved name {name!r}"


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
            CHECKERS["module_stack_path"](path, "ModuleStackEntry.path")
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
    ("token", ["L__self__layers.0", "method-wrapper.__get__", "L__self__mod_list_1.slice(2, 3, None).2",
               "L__self__modül", "a'b"], ["a\nb", "a\u2028b", "a\x85b", ""]),
    ("module_call_path", ["", "n1.n2", "n1.n2@1", "n1.n2@12", "modül@2"],
     ["@1", "n1.n2@0", "n1.n2@01", "n1.n2@", "n1@1@2", "n1@1.n2", "forward@1", "n1.n2@x"]),
    ("module_stack_path", ["", "layers.0", "mod_list_1.slice(2, 3, None).2", "seq.slice(None, -1, None).0"],
     ["seq.slice(1, 2)", 'seq.slice("), 2, None)', "seq.slice(1,2,None)", "seq.slice(1, 2, None).forward",
      "a..b", "seq.slice(a, 2, None)"]),
    ("identifier", ["modül", "bü", "Straße", "数据", "संख्या"], ["\ufb01", "\uff46orward", "u\u0308", "x\u00b2", "1x"]),
    ("attr_path", ["modül.weight", "layers.0.bü"], ["x.\uff46orward", "a.\u212b"]),
    ("qualified_name", ["__main__.Modül", "f.<locals>.Blöck"], ["a.\ufb01"]),
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


def test_token_refuses_exactly_spec_control_characters():
    """SPEC's token rule (no C0, DEL, C1, U+2028, U+2029), written out here, against the checker, over every
    ASCII pair (the checker's fast path) and single code points of the Latin-1 and separator ranges."""
    def spec_ok(s):
        return bool(s) and not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029" for c in s)

    samples = [chr(a) + chr(b) for a in range(128) for b in range(128)]
    samples += [f"x{chr(c)}y" for c in range(0x80, 0x2100)] + ["a\u2028", "\u2029", "L__self__mod\u00fcl"]
    for s in samples:
        for cls in ("token", "metadata_key"):
            try:
                CHECKERS[cls](s, "T.f")
                ok = True
            except StringClassError:
                ok = False
            assert ok == spec_ok(s), (cls, s)


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


def _torch_meta_keys() -> set:
    """node.meta keys torch itself writes on exported programs and through its own save and load."""
    import io
    import re as _re

    import torch._export.serde.serialize as serde
    from torch._higher_order_ops.cond import cond

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, n):
            y = cond(x.sum() > 0, lambda a: self.lin(a).relu(), lambda a: self.lin(a) - 1, (x,))
            k = n.item()
            torch._check(k >= 0)
            return self.lin(y), torch.zeros(k)

    ep = torch.export.export(M(), (torch.randn(2, 4), torch.tensor(3)))
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    keys = set()
    for prog in (ep, torch.export.load(buf)):
        for gm in prog.graph_module.modules():
            if isinstance(gm, torch.fx.GraphModule):
                for node in gm.graph.nodes:
                    keys |= set(node.meta)
    src = open(serde.__file__).read()
    keys |= set(_re.findall(r"\bnode\.meta(?:\.get\(|\[)\"(\w+)\"", src))
    return keys


def test_reserved_meta_keys_cover_what_torch_writes():
    """Every node.meta key torch writes (export, its serializer) is reserved: fails when torch adds one."""
    missing = _torch_meta_keys() - RESERVED_NODE_META_KEYS
    assert not missing, f"torch {torch.__version__} writes node.meta keys an `extra` entry could override: {sorted(missing)}"


def test_identifiers_are_what_python_compiles_to_themselves():
    """Every accepted identifier is one to str.isidentifier and is in NFKC (so Python compiles it to itself)."""
    import random
    import sys
    import unicodedata

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "support"))
    import name_samples

    rng = random.Random(22)
    pool = [c for s in name_samples.samples() for c in s] + list("abcXYZ_09")
    cands = name_samples.samples() + ["".join(rng.choice(pool) for _ in range(rng.randrange(1, 6))) for _ in range(20000)]
    accepted = 0
    for s in cands:
        if is_identifier(s):
            accepted += 1
            assert s.isidentifier() and unicodedata.is_normalized("NFKC", s), repr(s)
    assert accepted > 1000


def test_identifier_table_refuses_only_marks_that_may_compose():
    """Against Python itself over every code point: `a` + c is refused while Python compiles it to itself
    only when c is a combining mark that may compose with what precedes it (the table's one simplification)."""
    import unicodedata

    refused = []
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        s = "a" + chr(cp)
        if s.isidentifier() and unicodedata.is_normalized("NFKC", s) and not is_identifier(s):
            refused.append(cp)
    hangul_vowels_and_finals = {*range(0x1161, 0x1176), *range(0x11A8, 0x11C3)}  # compose with a leading jamo
    odd = [cp for cp in refused if unicodedata.category(chr(cp)) not in ("Mn", "Mc") and cp not in hangul_vowels_and_finals]
    assert not odd, [hex(c) for c in odd[:20]]
    assert len(refused) < 200, len(refused)


@pytest.mark.parametrize("wide", sorted(STRING_CLASSES))
def test_declared_class_order_holds_on_samples(wide):
    """`class_admits` (used by the evolution diff) is true on every sample: what the narrow class accepts,
    the wide one accepts too."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "support"))
    import name_samples

    samples = name_samples.samples() + ["x", "self", "forward", "a.0", "cpu", "a-b.c", "__main__.M", "a b", "\n"]
    for narrow in STRING_CLASSES:
        if not class_admits(wide, narrow):
            continue
        for s in samples:
            try:
                CHECKERS[narrow](s, "T.f")
            except (StringClassError, EncodingError):
                continue
            CHECKERS[wide](s, "T.f")
