"""Node and graph-module metadata torch carries (exporter/_metadata.py, loaders/_metadata.py), field by field.

Expected values are the freshly exported program's own: tensor_meta (derived
on load, requires_grad kept), placeholder `desc` (torch's AOT descriptors),
seq_nr, original_aten, graph_module.meta["custom"] and forward_arg_names.
"""

from __future__ import annotations

import pytest
import torch

import pt2format
from pt2format.errors import LoadError
from pt2format.loaders._metadata import build_desc


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        y = self.lin(x) * self.scale
        return torch.nn.functional.silu(y), y.sum(0)


KEYS = ("tensor_meta", "desc", "seq_nr", "original_aten")


def _programs():
    ep = torch.export.export(Net(), (torch.randn(3, 4),), dynamic_shapes=({0: torch.export.Dim("n")},))
    dec = torch.export.export(Net(), (torch.randn(3, 4),)).run_decompositions()
    return {"training": ep, "decomposed": dec}


@pytest.fixture(scope="module", params=["training", "decomposed"])
def ep(request):
    ep = _programs()[request.param]
    ep.graph_module.meta["custom"] = {"owner": "tests", "n": 2, "flags": [True, None]}
    return ep


def _meta(ep):
    return {n.name: {k: n.meta[k] for k in KEYS if k in n.meta} for n in ep.graph.nodes}


def _show(meta):
    return {name: {k: repr(v) for k, v in d.items()} for name, d in meta.items()}


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
def test_node_metadata_matches_torch(ep, tmp_path, encoding):
    p = tmp_path / "m.pt2f"
    pt2format.save(ep, p, encoding=encoding, progress=False, fsync=False)
    loaded = pt2format.load(p)
    want, got = _meta(ep), _meta(loaded)
    assert any(want.values())  # torch does carry some of them here
    assert _show(got) == _show(want)
    for name, d in want.items():
        for k, v in d.items():
            assert type(got[name][k]) is type(v), (name, k)
            if k in ("desc", "seq_nr"):
                assert got[name][k] == v, (name, k)
            elif k == "original_aten":  # torch's decomposition keeps its own OpOverload object: same operator
                assert got[name][k] is getattr(getattr(torch.ops.aten, v._opname), v._overloadname), (name, k)
                assert got[name][k].name() == v.name(), (name, k)
    assert loaded.graph_module.meta.get("custom") == ep.graph_module.meta["custom"]


def test_decomposed_program_has_the_keys():
    """A guard on the test itself: torch 2.13 sets every key on a decomposed program."""
    seen = {k for d in _meta(_programs()["decomposed"]).values() for k in d}
    assert seen == set(KEYS)


class NoArgs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("t", torch.ones(2))

    def forward(self):
        return self.t * 2


def test_forward_arg_names_empty_list_is_kept(tmp_path):
    ep = torch.export.export(NoArgs(), ())
    pt2format.save(ep, tmp_path / "m.pt2f", progress=False, fsync=False)
    loaded = pt2format.load(tmp_path / "m.pt2f")
    assert [e.signature.forward_arg_names if e.signature else None for e in loaded.module_call_graph] == \
        [e.signature.forward_arg_names if e.signature else None for e in ep.module_call_graph]


@pytest.mark.parametrize("bad", [
    {"type": "os"}, {"type": "AOTInput"}, {"type": "__class__"}, {"type": "ParamAOTInput", "other": 1},
    {"type": "ParamAOTInput", "target": {"type": "Nope"}}, {"target": "x"},
])
def test_desc_outside_torchs_descriptor_table_rejected(bad):
    with pytest.raises(LoadError):
        build_desc(bad, "desc")


class TopK(torch.nn.Module):
    def forward(self, x):
        values, indices = torch.topk(x, 2)
        return values * 2, indices + 1


@pytest.mark.parametrize("own", [0, 1])
def test_getitem_whose_sibling_has_its_own_metadata_keeps_the_producers(tmp_path, own):
    """One getitem of a multi-output node carries metadata of its own (stored beside the
    producer's), the other shares the producer's: each comes back as torch had it."""
    ep = torch.export.export(TopK(), (torch.randn(3, 5),))
    getitems = [n for n in ep.graph.nodes if n.target is __import__("operator").getitem]
    assert len(getitems) == 2
    getitems[own].meta["stack_trace"] = "File \"elsewhere.py\", line 1, in forward"
    keys = ("nn_module_stack", "stack_trace", "torch_fn", "source_fn_stack")
    p = tmp_path / "t.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)
    loaded = pt2format.load(p)
    want = {n.name: {k: repr(n.meta.get(k)) for k in keys} for n in ep.graph.nodes}
    got = {n.name: {k: repr(n.meta.get(k)) for k in keys} for n in loaded.graph.nodes}
    assert got == want
