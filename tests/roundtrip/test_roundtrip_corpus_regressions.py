"""Regressions found by the conformance corpus, each compared with torch's own behaviour.

Model output classes (transformers' ModelOutput: dataclasses whose pytree
context is a list of keys), stand-in containers re-saved, programs of one
file loaded separately and saved together, strict export's constants that
keep a `persistent` flag, sub-byte dtypes, cond subgraph order, and empty or
0-d state.
"""

from __future__ import annotations

import io
import warnings

import pytest
import torch

import pt2f_rt_helpers as H
import pt2format
from pt2format.exporter import export_package
from pt2format.loaders import build_program


def _save(ep, path, **kw):
    pt2format.save(ep, path, progress=False, fsync=False, **kw)


def _torch_roundtrip(ep):
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    return torch.export.load(buf)


def _export(m, args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(m, args, **kw)


# -- transformers ModelOutput ---------------------------------------------------------------------

class _TwoKeys(torch.nn.Module):
    def forward(self, x):
        from transformers.modeling_outputs import BaseModelOutputWithPooling
        return BaseModelOutputWithPooling(last_hidden_state=x * 2, pooler_output=x.sum(0))


class _ThreeKeys(torch.nn.Module):
    def forward(self, x):
        from transformers.modeling_outputs import BaseModelOutput
        return BaseModelOutput(last_hidden_state=x + 1, hidden_states=(x, x * 3), attentions=(x - 1,))


@pytest.mark.parametrize("module", [_TwoKeys, _ThreeKeys])
def test_model_output_spec_keeps_its_keys(tmp_path, module):
    """A ModelOutput context is a list of keys; with two keys it once came back as two lists of characters."""
    outputs = pytest.importorskip("transformers.modeling_outputs")
    for cls in (outputs.BaseModelOutputWithPooling, outputs.BaseModelOutput):
        cls(last_hidden_state=torch.zeros(1))  # transformers registers the pytree node on first use
    ep = _export(module(), (torch.randn(3, 4),))
    _save(ep, tmp_path / "m.pt2f")
    loaded = pt2format.load(tmp_path / "m.pt2f")
    theirs = _torch_roundtrip(ep)
    orig_spec = ep.module_call_graph[0].signature.out_spec
    spec = loaded.module_call_graph[0].signature.out_spec
    assert spec.type is orig_spec.type and spec.context == orig_spec.context
    assert spec == orig_spec == theirs.module_call_graph[0].signature.out_spec
    x = torch.randn(3, 4)
    want, got = ep.module()(x), loaded.module()(x)
    assert type(got) is type(want) and list(got.keys()) == list(want.keys())
    assert H.outputs_equal(tuple(want.values()), tuple(got.values()))
    _save(loaded, tmp_path / "again.pt2f")
    assert (tmp_path / "m.pt2f").read_bytes() == (tmp_path / "again.pt2f").read_bytes()


# -- programs of one file, loaded one by one, saved together --------------------------------------

class _Shared(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(16, 8)
        self.head = torch.nn.Linear(8, 16, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("count", torch.zeros(()))

    def forward(self, ids):
        return self.head(self.emb(ids)) + self.count


def _two_programs():
    m = _Shared().eval()
    return {"decode": _export(m, (torch.tensor([[3]]),)), "prefill": _export(m, (torch.tensor([[1, 2, 3]]),))}


def test_programs_loaded_separately_resave_to_the_same_bytes(tmp_path):
    progs = _two_programs()
    _save(progs, tmp_path / "m.pt2f")
    loaded = {k: pt2format.load(tmp_path / "m.pt2f", program=k) for k in progs}
    for k in progs:
        H.assert_same_program(progs[k], loaded[k])
    _save(loaded, tmp_path / "again.pt2f")
    assert (tmp_path / "m.pt2f").read_bytes() == (tmp_path / "again.pt2f").read_bytes()
    f = pt2format.read(tmp_path / "again.pt2f")
    try:
        # The original's sharing, counted from the original objects: weights (tied) once, buffer once,
        # and one example input per program.
        assert len(f.package.storages) == 4
    finally:
        f.close()


def test_changed_copy_of_a_shared_storage_is_not_merged(tmp_path):
    """Loads map the file copy-on-write: a weight changed in one program is saved as its own storage."""
    progs = _two_programs()
    _save(progs, tmp_path / "m.pt2f")
    loaded = {k: pt2format.load(tmp_path / "m.pt2f", program=k) for k in progs}
    with torch.no_grad():
        loaded["prefill"].state_dict["emb.weight"][0, 0] += 1.0
    _save(loaded, tmp_path / "again.pt2f")
    back = {k: pt2format.load(tmp_path / "again.pt2f", program=k) for k in progs}
    for k in progs:
        for name, t in loaded[k].state_dict.items():
            H.assert_same_tensor(t, back[k].state_dict[name], f"{k}.{name}")
    a, b = back["decode"].state_dict["emb.weight"], back["prefill"].state_dict["emb.weight"]
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert not torch.equal(a, b)
    # Tying inside each program survives.
    for k in progs:
        sd = back[k].state_dict
        assert sd["emb.weight"].untyped_storage().data_ptr() == sd["head.weight"].untyped_storage().data_ptr()


# -- strict export: a constant that keeps the buffer's persistent flag ----------------------------

def test_strict_constant_keeps_persistent_flag(tmp_path):
    from torch._export.db.examples import all_examples

    ex = all_examples()["optional_input"]
    ep = _export(ex.model, tuple(ex.example_args), strict=True)
    kinds = [(s.kind, s.persistent) for s in ep.graph_signature.input_specs]
    if (torch.export.graph_signature.InputKind.CONSTANT_TENSOR, True) not in kinds:
        pytest.skip(f"torch {torch.__version__}'s strict export gives this constant no persistent flag")
    _save(ep, tmp_path / "o.pt2f")
    loaded = pt2format.load(tmp_path / "o.pt2f")
    H.assert_same_program(ep, loaded)
    assert [(s.kind, s.persistent) for s in loaded.graph_signature.input_specs] == kinds


def test_plain_constant_has_no_persistent_flag(tmp_path):
    class C(torch.nn.Module):
        def forward(self, x):
            return x + torch.tensor([1.0, 2.0])

    ep = _export(C(), (torch.randn(2),))
    specs = [s for s in ep.graph_signature.input_specs if s.kind.name == "CONSTANT_TENSOR"]
    assert specs and specs[0].persistent is None
    _save(ep, tmp_path / "c.pt2f")
    assert pt2format.load(tmp_path / "c.pt2f").graph_signature.input_specs == ep.graph_signature.input_specs


# -- sub-byte and bit dtypes ----------------------------------------------------------------------

SUB_BYTE = (torch.bits1x8, torch.bits2x4, torch.bits4x2, *(getattr(torch, f"uint{k}") for k in range(1, 8)),
            *(getattr(torch, f"int{k}") for k in range(1, 8)))


class _SubByte(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i, dt in enumerate(SUB_BYTE):
            raw = (torch.arange(6, dtype=torch.int64) * 37 + i) % 256
            self.register_buffer(f"b{i}", raw.to(torch.uint8).view(dt))

    def forward(self, x):
        return (x + 1, *[getattr(self, f"b{i}") for i in range(len(SUB_BYTE))])


def test_sub_byte_dtypes_round_trip_in_memory():
    """Every dtype torch.export accepts as a buffer has a ScalarType; the bytes come back as they were.

    In memory: the file path also needs the validator's item sizes for these
    values (pt2format/_validate/).
    """
    ep = _export(_SubByte(), (torch.randn(2),))
    assert {ep.state_dict[f"b{i}"].dtype for i in range(len(SUB_BYTE))} == set(SUB_BYTE)
    pkg, payloads = export_package(ep)
    copies = [memoryview(bytearray(p)) for p in payloads]
    loaded = build_program(pkg, None, lambda i: copies[i])
    H.assert_same_program(ep, loaded)
    x = torch.randn(2)
    want, got = ep.module()(x), loaded.module()(x)
    assert [t.dtype for t in got] == [t.dtype for t in want]
    assert all(torch.equal(H.bits(a), H.bits(b)) for a, b in zip(want, got))


# -- cond subgraphs: registration order -----------------------------------------------------------

class _NestedCond(torch.nn.Module):
    def forward(self, x, y):
        def true_fn(x, y):
            return torch.cond(y.sum() > 0, lambda a: a.cos(), lambda a: a.sin(), (x,))

        def false_fn(x, y):
            return x * 2

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x, y))


def test_cond_submodules_in_torchs_order(tmp_path):
    ep = _export(_NestedCond(), (torch.randn(3), torch.randn(3)))
    _save(ep, tmp_path / "c.pt2f")
    loaded, theirs = pt2format.load(tmp_path / "c.pt2f"), _torch_roundtrip(ep)
    names = [n for n, _ in ep.graph_module.named_modules()]
    assert names == [n for n, _ in loaded.graph_module.named_modules()] == \
        [n for n, _ in theirs.graph_module.named_modules()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # unflatten's own order follows set iteration (the hash seed); within one process it must agree.
        u = [[n for n, _ in torch.export.unflatten(e).named_modules()] for e in (ep, loaded, theirs)]
    assert u[0] == u[1] == u[2]


# -- empty and 0-d state --------------------------------------------------------------------------

class _Empty(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("nothing", torch.empty(0, 4))
        self.register_buffer("also_nothing", torch.empty(0))
        self.register_buffer("scalar", torch.tensor(2.5))

    def forward(self, x):
        return torch.cat([self.nothing, x]) * self.scalar + self.also_nothing.sum()


def test_empty_and_scalar_state(tmp_path):
    ep = _export(_Empty(), (torch.randn(2, 4),))
    _save(ep, tmp_path / "e.pt2f")
    loaded = pt2format.load(tmp_path / "e.pt2f")
    H.assert_same_program(ep, loaded)
    f = pt2format.read(tmp_path / "e.pt2f")
    try:
        sizes = sorted(s.size for s in f.package.storages)
    finally:
        f.close()
    # scalar (4 bytes) and the example input (32 bytes) once each; empty storages hold no bytes.
    assert [s for s in sizes if s] == [4, 32]
    x = torch.randn(2, 4)
    assert torch.equal(ep.module()(x), loaded.module()(x))
