"""Issue 42's defects, each a deliberately wrong loader or writer (tests/support/conformance_fakes.py), each
caught by the check that names it, while pt2format's own row of the same run passes.

One runner pass over one program holds every single-program defect as a third-party row (one loading
process for all of them); the defects across programs run the `programs` check on torch's own programs
(pt2format's loader loads each program of a file apart, a known failure pinned in the corpus); the byte
helpers are checked on their own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from conformance import _behave as behave
from conformance import _child
from conformance._describe import cross_program_aliases, describe_graph, first_difference
from conformance._record import _record_sequence
from conformance._tensorio import TreeWriter, decode, tensor_bytes
from conformance_fakes import _on_module
from conformance.corpus._case import Case, Program


class _Everything(torch.nn.Module):
    """Nested modules (a module stack of two), static shapes (guards), outputs that alias an input, a
    buffer and another output, parameters that get gradients, outputs with the conjugate and negative bits."""

    def __init__(self):
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        self.register_buffer("table", torch.randn(4))

    def forward(self, x, z):
        h = self.block(x)
        return h, x[1:], self.table, h.t(), (z * 1).conj(), (z * 2).conj().imag  # the last two alias nothing


def _everything():
    g = torch.Generator().manual_seed(4)
    return Program(_Everything(), (torch.randn(3, 4, generator=g), torch.randn(2, dtype=torch.complex64, generator=g)))


#: label -> (writer, loader, the check that must fail, a text its reason must hold)
_FB, _LOAD = "conformance.adapters:flatbuffers_writer", "conformance.adapters:pt2format_loader"
_WRONG = {
    "aliascopy": (_FB, "conformance_fakes:alias_copy_loader", "outputs", "shares storage with"),
    "noguards": (_FB, "conformance_fakes:decomp_no_guards_loader", "decomp", "returned a result; torch raised"),
    "nometa": (_FB, "conformance_fakes:decomp_no_meta_loader", "decomp", "node metadata"),
    "regrad": (_FB, "conformance_fakes:regrad_loader", "outputs", "gradients"),
    "resolved": (_FB, "conformance_fakes:resolved_bits_loader", "outputs", "is_"),
    "reversed": (_FB, "conformance_fakes:reversed_module_stack_loader", "meta", "nn_module_stack"),
    "nomaploc": (_FB, "conformance_fakes:ignore_map_location_loader", "options", "map_location"),
    "noweights": (_FB, "conformance_fakes:ignore_weights_loader", "options", "weights"),
    "label10": ("conformance_fakes:label10_writer", _LOAD, "dump", "pt2format's own file"),
    "noextra": ("conformance_fakes:drop_extra_files_writer", _LOAD, "options", "extra_files"),
    "nometadata": ("conformance_fakes:drop_metadata_writer", _LOAD, "options", "metadata"),
}


@pytest.fixture(scope="module")
def everything_run(tmp_path_factory):
    from conformance.runner import Target, run_case

    support = str(Path(__file__).resolve().parents[1] / "support")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = support + (os.pathsep + old if old else "")
    try:
        right = (Target("flatbuffers", _FB), Target("thirdok", "conformance_fakes:third_party_writer"))
        targets = right + tuple(Target(label, w, ld) for label, (w, ld, _, _) in _WRONG.items())
        res = run_case(Case("fakes_everything", _everything, frozenset({"full"})), targets=targets,
                       workdir=str(tmp_path_factory.mktemp("fakes")), timeout=1200)
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old
    return res


@pytest.mark.parametrize("label", ["flatbuffers", "thirdok"])
def test_right_rows_pass_every_check(everything_run, label):
    """pt2format's own row, and a correct third-party writer's (its dump equals pt2format's own file's)."""
    good = everything_run.rows[label]
    assert all(status in ("pass", "na") for status, _ in good.values()), good
    assert good["options"][0] == good["invalid_inputs"][0] == good["dump"][0] == "pass", good


@pytest.mark.parametrize("label", list(_WRONG))
def test_wrong_row_is_caught_by_its_check(everything_run, label):
    _, _, check, text = _WRONG[label]
    status, reason = everything_run.rows[label][check]
    if label == "label10" and status == "error":  # a reader that refuses the label (SPEC §8.1) catches it first
        assert everything_run.rows[label]["validate"][0] == "fail", everything_run.rows[label]
        return
    assert status == "fail" and text in reason, (label, check, status, reason)


# --------------------------------------------------------------------------- across programs

class _Cached(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 3)
        self.register_buffer("cache", torch.zeros(1, 6, 3))

    def forward(self, x, pos):
        self.cache.index_copy_(1, pos, self.proj(x))
        return self.cache.sum(1) * 1


def _programs(module):
    g = torch.Generator().manual_seed(2)
    specs = {"prefill": Program(module, (torch.randn(1, 2, 3, generator=g), torch.arange(2))),
             "decode": Program(module, (torch.randn(1, 1, 3, generator=g), torch.tensor([2])))}
    return specs, {n: s.export() for n, s in specs.items()}


def _programs_verdict(tmp_path, change=None):
    torch.manual_seed(0)
    specs, eps = _programs(_Cached())
    job = {"multi": True, "sequence": _record_sequence(specs, eps, str(tmp_path), True),
           "cross_aliases": cross_program_aliases(eps)}
    for ep in eps.values():  # objects of its own per program, on the same storages, as a loader gives
        for k, t in list(ep.state_dict.items()):
            ep.state_dict[k] = torch.nn.Parameter(t.detach(), t.requires_grad) \
                if isinstance(t, torch.nn.Parameter) else t.detach()
        if change is not None:
            change(ep)
    row = _child.Row()
    _child._check_programs(row, job, eps, str(tmp_path))
    return row.checks["programs"]


def test_programs_sharing_their_state_pass(tmp_path):
    status, reason = _programs_verdict(tmp_path)
    assert status == "pass", reason


def test_programs_with_their_own_copies_of_shared_state_are_caught(tmp_path, monkeypatch):
    import conformance_fakes

    def own_copy(ep):  # the fake's change, applied to torch's program
        monkeypatch.setattr(conformance_fakes, "_loaded", lambda path, program: ep)
        conformance_fakes.copied_state_loader.load("unused")

    status, reason = _programs_verdict(tmp_path, own_copy)
    assert status == "fail" and "state shared between programs" in reason, reason


def test_a_cache_written_by_one_program_must_reach_the_next(tmp_path):
    def fresh_cache(ep):  # sharing kept on paper (the alias groups), the decode reads a cache of zeros
        if "index_copy" in str(ep.graph) and ep.example_inputs[0][1].numel() == 1:
            _on_module(ep, _zero_cache)

    def _zero_cache(m):
        def hook(mod, args):
            with torch.no_grad():
                mod.cache.zero_()

        m.register_forward_pre_hook(hook)
        return m

    status, reason = _programs_verdict(tmp_path, fresh_cache)
    assert status == "fail" and "one after another" in reason, reason


# --------------------------------------------------------------------------- the byte helpers

def test_conj_and_neg_tensors_are_read_by_value_and_their_bits_compared(tmp_path):
    z = torch.tensor([1 + 2j, -3 - 0.5j], dtype=torch.complex64)
    for lazy, plain in ((z.conj(), z.conj().resolve_conj()), (z.conj().imag, z.conj().imag.resolve_neg())):
        assert tensor_bytes(lazy) == tensor_bytes(plain)
        back = decode(TreeWriter(str(tmp_path), "c").encode(lazy), str(tmp_path))
        assert torch.equal(back, plain)
        assert behave.layout(lazy) != behave.layout(plain)  # the bit is compared, apart from the values


def test_module_stack_order_is_compared():
    ep = torch.export.export(_Everything(), (torch.randn(3, 4), torch.randn(2, dtype=torch.complex64)))
    before = describe_graph(ep.graph_module, meta=True)
    for n in ep.graph.nodes:
        if len(n.meta.get("nn_module_stack", {})) > 1:
            n.meta["nn_module_stack"] = dict(reversed(list(n.meta["nn_module_stack"].items())))
    assert first_difference(before, describe_graph(ep.graph_module, meta=True)) is not None
