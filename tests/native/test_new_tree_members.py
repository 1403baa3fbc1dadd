"""1.1 tree-spec members of issue 20 (MODULE nodes, TreeSpecArgument, CONSTANT_FUNCTION): the three readers
dump them alike and refuse a malformed one alike."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch

import native_util_cpp as C
import native_util_ts as T
import pt2format
from pt2format._generated import model as m
from pt2format.errors import ValidationError

import crafting


class _Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class _TakesModule(torch.nn.Module):
    def forward(self, x, mod):
        return mod(x) + 1


class _Documents(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("doc", torch.arange(128) // 32)

    def forward(self, q, k, v):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        doc = self.doc
        mask = create_block_mask(lambda b, h, qi, ki: doc[qi] == doc[ki], None, None, 128, 128, device="cpu")
        return flex_attention(q, k, v, block_mask=mask)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("members")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*example inputs of program.*")
        pt2format.save(torch.export.export(_TakesModule(), (torch.randn(2, 4), _Inner())), d / "module.pt2f",
                       progress=False)
    qkv = tuple(torch.randn(1, 2, 128, 16) for _ in range(3))
    pt2format.save(torch.export.export(_Documents(), qkv), d / "flex.pt2f", progress=False)
    return {"module": d / "module.pt2f", "flex": d / "flex.pt2f"}


def _python_dump(path) -> bytes:
    return subprocess.run([sys.executable, "-m", "pt2format", "dump", str(path)], capture_output=True, check=True).stdout


@pytest.mark.parametrize("name,marker", [("module", b'"MODULE"'), ("flex", b'"TreeSpecArgument"')])
def test_three_readers_dump_alike(files, cpp_release, ts_reader, name, marker):
    want = _python_dump(files[name])
    assert marker in want
    r = C.run(cpp_release / "pt2f-dump", files[name])
    assert r.returncode == 0, r.stderr
    assert r.stdout == want
    t = T.ts_dump(files[name])
    assert t.returncode == 0, t.stderr
    assert t.stdout == want


def _module_key_not_a_path(p):
    spec = p.programs[0].module_call_graph[0].signature.in_spec
    node = spec.children[0].children[1]
    assert node.kind == m.TreeSpecKind.MODULE
    node.keys[0] = m.Value(m.StringValue("lin..weight"))


def _treespec_without_spec(p):
    for n in crafting.nodes(p):
        for a in n.inputs:
            if type(a.value) is m.TreeSpecArgument:
                a.value.spec = None
                return
    raise AssertionError("no TreeSpecArgument")


@pytest.mark.parametrize("name,mutate,error", [("module", _module_key_not_a_path, "StringClassError"),
                                               ("flex", _treespec_without_spec, "ValidationError")])
def test_malformed_members_are_refused_by_all(files, cpp_release, ts_reader, tmp_path, name, mutate, error):
    bad = crafting.craft(files[name], tmp_path / "bad.pt2f", mutate)
    with pytest.raises(ValidationError) as e:
        pt2format.validate(bad)
    assert type(e.value).__name__ == error
    r = C.run(cpp_release / "pt2f-dump", "--error-class", bad)
    assert r.stdout.decode().strip() == error, r.stderr
    [rec] = T.dump_batch([bad])
    assert rec["error"] == error, rec
