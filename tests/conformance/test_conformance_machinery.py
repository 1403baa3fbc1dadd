"""The runner's own machinery: exact value transfer, and checks that do fail on a wrong program.

These run without pt2format's exporter or loader: the "loaded" program is
one torch exported itself, sometimes deliberately different, so a check that
cannot fail would show up here.
"""

from __future__ import annotations

import os

import pytest
import torch

from conformance import _behave as behave
from conformance import _child
from conformance._describe import describe_program, describe_state, first_difference, positional_names
from conformance._tensorio import TreeWriter, decode, tensor_bytes, write_json
from conformance.corpus._case import Program
from conformance.runner import _record_program


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                                   torch.uint16, torch.uint64, torch.bool, torch.complex64, torch.complex32,
                                   torch.float8_e4m3fn, torch.float8_e5m2fnuz, torch.bits16])
def test_tree_roundtrip_keeps_bits(tmp_path, dtype):
    raw = (torch.arange(24 * dtype.itemsize) * 53 % 256).to(torch.uint8)
    t = raw.view(torch.bool) if dtype == torch.bool else raw.view(dtype)
    if dtype == torch.bool:
        t = raw % 2 == 1
    t = t.reshape(4, -1)
    tree = ((t, t.t(), t[:, 1:], t[:0], t[0, 0]), {"k": [1, 2.5, -0.0, float("nan"), None, True, "s"]})
    w = TreeWriter(str(tmp_path), "x")
    back = decode(w.encode(tree), str(tmp_path))
    for a, b in zip(tree[0], back[0]):
        assert a.dtype == b.dtype and a.shape == b.shape and tensor_bytes(a) == tensor_bytes(b)
    assert list(back[0][1].stride()) == list(t.t().stride())
    k = back[1]["k"]
    assert k[:3] == [1, 2.5, -0.0] and str(k[2]) == "-0.0" and k[3] != k[3] and k[4:] == [None, True, "s"]


def test_first_difference_reports_path():
    assert first_difference({"a": [1, 2]}, {"a": [1, 2]}) is None
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}) == ".a[1]: expected 2, got 3"
    assert "missing" in first_difference({"a": 1, "b": 2}, {"a": 1})
    assert "3 items" in first_difference([1, 2, 3], [1, 2])


def test_positional_names_ignore_intermediate_names_only():
    a = {"nodes": [["x", "placeholder", "x", [], {}], ["mul_5", "call_function", "aten.mul.Tensor", ["%x", 2], {}],
                   ["output", "output", "output", [["%mul_5"]], {}]], "subgraphs": {}}
    b = {"nodes": [["x", "placeholder", "x", [], {}], ["mul_4", "call_function", "aten.mul.Tensor", ["%x", 2], {}],
                   ["output", "output", "output", [["%mul_4"]], {}]], "subgraphs": {}}
    c = {"nodes": [["y", "placeholder", "y", [], {}], ["mul_4", "call_function", "aten.mul.Tensor", ["%y", 2], {}],
                   ["output", "output", "output", [["%mul_4"]], {}]], "subgraphs": {}}
    assert first_difference(positional_names(a), positional_names(b)) is None
    assert first_difference(positional_names(a), positional_names(c)) is not None


class _Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 3)
        self.b = torch.nn.Linear(3, 3)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def test_alias_groups_follow_storage_sharing():
    ep = torch.export.export(_Tied(), (torch.randn(1, 3),))
    assert describe_state(ep)["alias_groups"] == [["state_dict:a.weight", "state_dict:b.weight"]]
    untied = _Tied()
    untied.b.weight = torch.nn.Parameter(untied.a.weight.detach().clone())
    ep2 = torch.export.export(untied, (torch.randn(1, 3),))
    d = first_difference(describe_state(ep)["alias_groups"], describe_state(ep2)["alias_groups"])
    assert d is not None  # same values, no sharing: detected


def test_compare_result_detects_one_flipped_bit(tmp_path):
    out = torch.randn(5)
    res = {"outputs": (out, {"k": 3}), "inputs_after": [[], {}]}
    rec = behave.record(res, TreeWriter(str(tmp_path), "o"))
    assert behave.compare_result(rec, res, str(tmp_path)) is None
    bad = out.clone()
    bad.view(torch.int32)[2] ^= 1
    problem = behave.compare_result(rec, {"outputs": (bad, {"k": 3}), "inputs_after": [[], {}]}, str(tmp_path))
    assert problem and "1 of 5 elements differ" in problem
    assert behave.compare_result(rec, {"outputs": (out, {"k": 4}), "inputs_after": [[], {}]}, str(tmp_path))
    assert behave.compare_result(rec, {"outputs": [out, {"k": 3}], "inputs_after": [[], {}]}, str(tmp_path))


def test_restore_undoes_buffer_mutation():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(2))

        def forward(self, x):
            self.n.add_(1)
            return x + self.n

    ep = torch.export.export(M(), (torch.zeros(2),))
    snap = behave.snapshot(ep)
    first = behave.call(ep.module(), (torch.zeros(2),), {})
    behave.restore(ep, snap)
    again = behave.call(ep.module(), (torch.zeros(2),), {})
    assert behave.same_results(first, again)
    assert not behave.same_results(first, behave.call(ep.module(), (torch.zeros(2),), {}))


# --------------------------------------------------------------------------- the loader-side checks can fail

class _Net(torch.nn.Module):
    def __init__(self, extra_op: bool = False):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.extra_op = extra_op

    def forward(self, x):
        y = self.lin(x).relu()
        return y * 2 if self.extra_op else y


def _job(tmp_path, spec, ep):
    jobdir = str(tmp_path)
    ref = {"static": describe_program(ep)}
    ref.update(_record_program(spec, ep, "forward", jobdir, True))
    job = {"case": "t", "multi": False, "programs": ["forward"], "encodings": ["flatbuffers"],
           "followup_encoding": "flatbuffers", "child_imports": [], "num_threads": torch.get_num_threads(),
           "refs": {"forward": ref}}
    write_json(os.path.join(jobdir, "job.json"), job)
    return job


def _verdicts(monkeypatch, tmp_path, original: torch.nn.Module, loaded_module: torch.nn.Module):
    import pt2format

    torch.manual_seed(0)
    spec = Program(original, (torch.randn(2, 4),))
    ep = spec.export()
    job = _job(tmp_path, spec, ep)
    loaded = torch.export.export(loaded_module, (torch.randn(2, 4),))
    monkeypatch.setattr(pt2format, "load", lambda path, **kw: loaded)
    monkeypatch.setattr(pt2format, "save", lambda *a, **kw: None)
    rows, _ = _child.run_encoding(job, "flatbuffers", str(tmp_path))
    return {k: v[0] for k, v in rows.items()}


def test_checks_pass_for_the_same_program(monkeypatch, tmp_path):
    torch.manual_seed(1)
    m = _Net()
    v = _verdicts(monkeypatch, tmp_path, m, m)
    for check in ("load", "graph", "meta", "signature", "state", "outputs", "decomp", "unflatten", "reexport"):
        assert v[check] == "pass", (check, v)


def test_checks_fail_for_other_weights(monkeypatch, tmp_path):
    torch.manual_seed(1)
    a = _Net()
    b = _Net()  # same graph, other random weights
    v = _verdicts(monkeypatch, tmp_path, a, b)
    assert v["graph"] == "pass"
    assert v["state"] == "fail" and v["outputs"] == "fail" and v["decomp"] == "fail"


def test_checks_fail_for_another_graph(monkeypatch, tmp_path):
    torch.manual_seed(1)
    a = _Net()
    b = _Net(extra_op=True)
    b.load_state_dict(a.state_dict())
    v = _verdicts(monkeypatch, tmp_path, a, b)
    assert v["graph"] == "fail" and v["outputs"] == "fail" and v["state"] == "pass"
