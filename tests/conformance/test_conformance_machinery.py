"""The runner's own machinery: exact value transfer, and checks that do fail on a wrong program.

Most run without pt2format's exporter or loader: the "loaded" program is
one torch exported itself, sometimes deliberately different, so a check that
cannot fail would show up here. There is at least one negative control per
report column (export, save, validate, dump, dedup, load, graph, meta,
signature, ranges, mcg, state, ex.in, resave, out, extra, invalid, decomp,
unflat, reexp), plus the strict comparisons behind them (types, output
containers) and the round-trip tests' `outputs_equal`. The second audit's six
defects (buffers after a call, output strides and storage offsets, detached
outputs, the decomposed program's state, name-less containers turned into
dicts, a writer that leaves no file) are kept as wrong loaders and a wrong
writer in tests/support/conformance_fakes.py, each caught here.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.utils._pytree as _pytree

from conformance import _behave as behave
from conformance import _child
from conformance._describe import describe_program, describe_state, first_difference, positional_names
from conformance._tensorio import TreeWriter, decode, tensor_bytes
from conformance.corpus._case import Program
from conformance.runner import _export_verdict, _file_checks, _record_program, not_exportable


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


def test_restore_undoes_what_a_grad_mode_run_does_to_a_buffer():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))
            self.register_buffer("cache", torch.zeros(2))

        def forward(self, x):
            self.cache.copy_(x * self.w)  # the buffer joins the autograd graph
            return self.cache + 1

    ep = torch.export.export(M(), (torch.ones(2),))
    snap = behave.snapshot(ep)
    first = behave.call(ep.module(), (torch.ones(2),), {})
    assert first["buffers_after"]["cache"]["requires_grad"]  # torch's behaviour in grad mode
    behave.restore(ep, snap)
    cache = ep.state_dict["cache"]
    assert not cache.requires_grad and cache.grad_fn is None and not cache.any()
    again = behave.call(ep.module(), (torch.ones(2),), {})
    assert first["buffers_after"] == again["buffers_after"]


# --------------------------------------------------------------------------- comparisons are strict about types

def test_bool_and_int_are_different_values():
    assert first_difference(True, 1) is not None
    assert first_difference([0, False], [0, 0]) is not None
    assert first_difference(1, 1.0) is not None
    assert first_difference({"k": True}, {"k": True}) is None


def test_tuples_and_lists_are_told_apart_in_arguments():
    from conformance._describe import arg_repr

    assert first_difference(arg_repr((1, 2)), arg_repr([1, 2])) is not None
    assert first_difference(arg_repr(((1,), [2])), arg_repr(((1,), [2]))) is None


def test_non_tensor_output_true_is_not_one(tmp_path):
    res = {"outputs": (torch.ones(1), True), "inputs_after": [[], {}]}
    rec = behave.record(res, TreeWriter(str(tmp_path), "o"))
    assert behave.compare_result(rec, res, str(tmp_path)) is None
    assert behave.compare_result(rec, {"outputs": (torch.ones(1), 1), "inputs_after": [[], {}]}, str(tmp_path))


# --------------------------------------------------------------------------- output containers

def _spec(tree):
    import torch.utils._pytree as pytree

    from conformance._describe import describe_treespec

    return describe_treespec(pytree.tree_flatten(tree)[1])


_UNKNOWN_DATACLASS = {"type": "module_not_imported_here.Result", "context": [["total", "point"], []],
                      "children": [None, None]}


def test_fallback_for_an_unimportable_class_must_keep_its_names_in_order():
    good = _spec({"total": torch.ones(1), "point": torch.ones(1)})
    swapped = _spec({"point": torch.ones(1), "total": torch.ones(1)})
    plain_tuple = _spec((torch.ones(1), torch.ones(1)))
    renamed = _spec({"total": torch.ones(1), "pt": torch.ones(1)})
    assert behave.compare_spec(_UNKNOWN_DATACLASS, good) is None
    assert "in order" in behave.compare_spec(_UNKNOWN_DATACLASS, swapped)
    assert "fall back to a dict" in behave.compare_spec(_UNKNOWN_DATACLASS, plain_tuple)
    assert behave.compare_spec(_UNKNOWN_DATACLASS, renamed)


def test_importable_container_must_be_itself_with_same_keys():
    want = _spec({"a": torch.ones(1), "b": torch.ones(1)})
    assert behave.compare_spec(want, _spec({"b": torch.ones(1), "a": torch.ones(1)}))
    assert behave.compare_spec(want, _spec((torch.ones(1), torch.ones(1))))
    assert behave.compare_spec(_spec((torch.ones(1),)), _spec([torch.ones(1)]))


# --------------------------------------------------------------------------- export: the pinned list

class _FakeCase:
    def __init__(self, name):
        self.name = name


def test_pinned_list_names_real_cases_with_reasons():
    from conformance import corpus

    pinned = not_exportable()
    assert pinned, "the list exists and is read"
    for name, entry in pinned.items():
        assert name in corpus.all_cases(), name
        assert entry["reason"].strip() and entry["error"].strip(), name


def test_export_failure_of_an_unpinned_case_is_an_error():
    status, reason = _export_verdict(_FakeCase("mlp"), "UserError: something torch changed")
    assert status == "error" and "not pinned" in reason


def test_pinned_case_that_exports_fails_and_other_error_is_an_error():
    name = next(iter(not_exportable()))
    assert _export_verdict(_FakeCase(name), None)[0] == "fail"
    assert _export_verdict(_FakeCase(name), "TypeError: a different failure")[0] == "error"
    assert _export_verdict(_FakeCase(name), not_exportable()[name]["error"] + " more")[0] == "torch"


# --------------------------------------------------------------------------- file checks (validate, dump, dedup)

def _saved(tmp_path, module, args):
    import pt2format

    ep = torch.export.export(module, args)
    path = str(tmp_path / "p.pt2f")
    pt2format.save(ep, path, fsync=False, progress=False)
    return ep, path


def test_validate_fails_on_a_damaged_file(tmp_path):
    _, path = _saved(tmp_path, _Net(), (torch.randn(2, 4),))
    row = {}
    _file_checks(row, path, (3, 3), 120)
    assert row["validate"][0] == "pass" and row["dump"][0] == "pass"
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0xFF  # a flipped bit in the last storage: its checksum no longer matches
    open(path, "wb").write(bytes(data))
    row = {}
    _file_checks(row, path, (3, 3), 120)
    assert row["validate"][0] == "fail", row


def test_dump_reader_printing_other_bytes_fails(tmp_path):
    import sys

    _, path = _saved(tmp_path, _Net(), (torch.randn(2, 4),))
    row = {}
    _file_checks(row, path, (3, 3), 120, "{python} -m pt2format dump {path}")
    assert row["dump"] == ["pass", ""]
    liar = tmp_path / "liar.py"
    liar.write_text("import subprocess, sys\n"
                    "out = subprocess.run([sys.executable, '-m', 'pt2format', 'dump', sys.argv[1]],"
                    " capture_output=True, check=True).stdout\n"
                    "sys.stdout.buffer.write(out.replace(b'relu', b'gelu'))\n")
    row = {}
    _file_checks(row, path, (3, 3), 120, f"{sys.executable} {liar} {{path}}")
    assert row["dump"][0] == "fail" and "differs" in row["dump"][1]


def test_dedup_fails_when_the_file_holds_a_storage_twice(tmp_path):
    ep, path = _saved(tmp_path, _Tied(), (torch.randn(1, 3),))
    from conformance._describe import storage_keys

    full, empty = storage_keys(ep)
    want = (len(full), len(full) + len(empty))
    row = {}
    _file_checks(row, path, want, 120)
    assert row["dedup"][0] == "pass", row
    untied = _Tied()
    untied.b.weight = torch.nn.Parameter(untied.a.weight.detach().clone())  # same values, two storages
    _, path2 = _saved(tmp_path / "..", untied, (torch.randn(1, 3),))
    row = {}
    _file_checks(row, path2, want, 120)
    assert row["dedup"][0] == "fail", row


# --------------------------------------------------------------------------- the loader-side checks can fail

class _Net(torch.nn.Module):
    def __init__(self, extra_op: bool = False, add_instead: bool = False):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.extra_op = extra_op
        self.add_instead = add_instead

    def forward(self, x):
        y = self.lin(x).relu()
        if self.add_instead:
            return y + y
        return y * 2 if self.extra_op else y


class _Doubler(torch.nn.Module):
    def forward(self, x):
        return x * 2


class _Renamed(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.other = net.lin

    def forward(self, x):
        return self.other(x).relu()


def _verdicts(monkeypatch, tmp_path, original, loaded, *, args=None, dynamic_shapes=None, loaded_shapes=None,
              extra=(), invalid=(), explained=(), resave_bytes=b"file", loader=None):
    """Record torch's view of `original`, then run the loader-side checks on `loaded`
    (a module exported the same way, or a function of a fresh export of `original`).
    `loader` names a loader (module:attribute, e.g. a wrong one of conformance_fakes)
    to run instead of pt2format's; it gets `loaded` from pt2format.load."""
    import pt2format

    torch.manual_seed(0)
    args = args if args is not None else (torch.randn(2, 4),)
    spec = Program(original, args, dynamic_shapes=dynamic_shapes, extra_inputs=list(extra),
                   invalid_inputs=list(invalid))
    ep = spec.export()
    jobdir = str(tmp_path)
    ref = {"static": describe_program(ep)}
    ref.update(_record_program(spec, ep, "forward", jobdir, True))
    job = {"case": "t", "multi": False, "programs": ["forward"], "child_imports": [],
           "num_threads": torch.get_num_threads(), "refs": {"forward": ref}, "explained": list(explained)}
    if callable(loaded) and not isinstance(loaded, torch.nn.Module):
        got = loaded(torch.export.export(original, args, dynamic_shapes=dynamic_shapes))
    else:
        got = torch.export.export(loaded, args, dynamic_shapes=loaded_shapes or dynamic_shapes)
    path = tmp_path / "program.flatbuffers.pt2f"
    path.write_bytes(b"file")
    monkeypatch.setattr(pt2format, "load", lambda path, **kw: got)
    monkeypatch.setattr(pt2format, "save", lambda obj, out, **kw: open(out, "wb").write(resave_bytes))
    if loader is None:
        rows, _ = _child.run_encoding(job, "flatbuffers", jobdir)
    else:
        rows, _ = _child.run_target(job, {"label": "flatbuffers", "path": "program.flatbuffers.pt2f",
                                          "loader": loader, "writer": "conformance.adapters:flatbuffers_writer"},
                                    jobdir)
    return {k: v[0] for k, v in rows.items()}, rows


def test_checks_pass_for_the_same_program(monkeypatch, tmp_path):
    torch.manual_seed(1)
    m = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, m, m)
    # (`programs` is N/A for one program; `options` is checked with the real loader, test_conformance_fakes.py:
    # pt2format.load is replaced here by a function that returns the program whatever the options.)
    for check in _child.CHILD_CHECKS:
        if check in ("programs", "options"):
            continue
        assert v[check] == "pass", (check, rows[check])
    assert v["programs"] == "na"


def test_checks_fail_for_other_weights(monkeypatch, tmp_path):
    torch.manual_seed(1)
    a = _Net()
    b = _Net()  # same graph, other random weights
    v, _ = _verdicts(monkeypatch, tmp_path, a, b)
    assert v["graph"] == "pass"
    for check in ("state", "outputs", "extra_inputs", "decomp", "unflatten", "reexport"):
        assert v[check] == "fail", check


def test_checks_fail_for_another_graph(monkeypatch, tmp_path):
    torch.manual_seed(1)
    a = _Net()
    b = _Net(extra_op=True)
    b.load_state_dict(a.state_dict())
    v, _ = _verdicts(monkeypatch, tmp_path, a, b)
    assert v["graph"] == "fail" and v["outputs"] == "fail" and v["state"] == "pass"


def test_load_fails_when_the_loader_raises_or_returns_something_else(monkeypatch, tmp_path):
    import pt2format

    def boom(path, **kw):
        raise pt2format.LoadError("nope")

    v, _ = _verdicts(monkeypatch, tmp_path, _Net(), _Net())
    assert v["load"] == "pass"
    for fake in (boom, lambda path, **kw: torch.nn.Linear(1, 1)):
        monkeypatch.setattr(pt2format, "load", fake)
        rows, _ = _child.run_encoding(_last_job(tmp_path), "flatbuffers", str(tmp_path))
        assert rows["load"][0] == "error" and "graph" not in rows


def _last_job(tmp_path):
    """A job for the plain _Net program, as _verdicts records it."""
    torch.manual_seed(0)
    spec = Program(_Net(), (torch.randn(2, 4),))
    ep = spec.export()
    ref = {"static": describe_program(ep)}
    ref.update(_record_program(spec, ep, "forward", str(tmp_path), True))
    return {"case": "t", "multi": False, "programs": ["forward"], "child_imports": [],
            "num_threads": torch.get_num_threads(), "refs": {"forward": ref}, "explained": []}


class _SumKeep(torch.nn.Module):
    def forward(self, x):
        return x.view(8).sum(0, keepdim=True)


def test_graph_fails_for_a_list_turned_tuple_and_a_bool_turned_int(monkeypatch, tmp_path):
    def retype(change):
        def make(ep):
            for n in ep.graph.nodes:
                if n.op == "call_function" and "view" in str(n.target):
                    n.args = change(n.args)
            return ep
        return make

    v, rows = _verdicts(monkeypatch, tmp_path, _SumKeep(), retype(lambda a: a))
    assert v["graph"] == "pass", rows["graph"]
    v, rows = _verdicts(monkeypatch, tmp_path / "t", _SumKeep(), retype(lambda a: (a[0], tuple(a[1]))))
    assert v["graph"] == "fail" and "()" in rows["graph"][1]

    def keepdim_as_int(ep):
        for n in ep.graph.nodes:
            if n.op == "call_function" and "sum" in str(n.target):
                n.args = (n.args[0], n.args[1], 1)
        return ep

    v, rows = _verdicts(monkeypatch, tmp_path / "b", _SumKeep(), keepdim_as_int)
    assert v["graph"] == "fail" and "bool" in rows["graph"][1], rows["graph"]


def test_meta_fails_when_a_stack_trace_is_lost(monkeypatch, tmp_path):
    def drop(ep):
        for n in ep.graph.nodes:
            n.meta.pop("stack_trace", None)
        return ep

    v, _ = _verdicts(monkeypatch, tmp_path, _Net(), drop)
    assert v["meta"] == "fail" and v["graph"] == "pass"


def test_signature_fails_when_a_target_is_renamed(monkeypatch, tmp_path):
    def rename(ep):
        spec = ep.graph_signature.input_specs[0]
        spec.target = "lin.renamed"
        return ep

    v, _ = _verdicts(monkeypatch, tmp_path, _Net(), rename)
    assert v["signature"] == "fail"


def test_ranges_extra_and_invalid_fail_for_another_range(monkeypatch, tmp_path):
    from torch.export import Dim

    torch.manual_seed(1)
    m = _Net()
    args = (torch.randn(4, 4),)
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, args=args, dynamic_shapes=({0: Dim("b", min=2, max=16)},))
    assert v["range_constraints"] == v["extra_inputs"] == v["invalid_inputs"] == "pass", rows
    # Narrower range: the derived larger batch is refused.
    v, rows = _verdicts(monkeypatch, tmp_path / "n", m, m, args=args, dynamic_shapes=({0: Dim("b", min=2, max=16)},),
                        loaded_shapes=({0: Dim("b", min=2, max=6)},))
    assert v["range_constraints"] == "fail" and v["extra_inputs"] in ("fail", "error"), rows
    assert "Guard failed" in rows["extra_inputs"][1]
    # Wider range: the invalid batch of 17 is accepted.
    v, rows = _verdicts(monkeypatch, tmp_path / "w", m, m, args=args, dynamic_shapes=({0: Dim("b", min=2, max=16)},),
                        loaded_shapes=({0: Dim("b", min=2, max=40)},))
    assert v["invalid_inputs"] == "fail" and "accepted" in rows["invalid_inputs"][1], rows


def test_invalid_fails_for_the_same_exception_type_with_another_message(monkeypatch, tmp_path):
    from torch.export import Dim

    torch.manual_seed(1)
    m = _Net()
    too_big = [((torch.randn(41, 4),), {})]  # rejected by both, by different guards (<= 16 vs <= 40)
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, args=(torch.randn(4, 4),),
                        dynamic_shapes=({0: Dim("b", min=2, max=16)},), loaded_shapes=({0: Dim("b", min=2, max=40)},),
                        invalid=too_big)
    assert v["invalid_inputs"] == "fail" and "rejected with" in rows["invalid_inputs"][1], rows


def test_invalid_input_not_rejected_by_a_guard_is_a_case_error(monkeypatch, tmp_path):
    m = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, invalid=[((torch.randn(2, 4, 1),), {})])  # fails in the matmul
    assert v["invalid_inputs"] == "error" and "not rejected by a guard" in rows["invalid_inputs"][1]


def test_module_call_graph_fails_for_a_renamed_entry(monkeypatch, tmp_path):
    def rename(ep):
        ep.module_call_graph[-1].fqn = "elsewhere"
        return ep

    v, _ = _verdicts(monkeypatch, tmp_path, _Net(), rename)
    assert v["module_call_graph"] == "fail"


def test_example_inputs_fail_for_other_values(monkeypatch, tmp_path):
    def other(ep):
        (a,), kw = ep.example_inputs
        ep.example_inputs = ((a + 1,), kw)
        return ep

    v, _ = _verdicts(monkeypatch, tmp_path, _Net(), other)
    assert v["example_inputs"] == "fail"


def test_resave_fails_for_other_bytes(monkeypatch, tmp_path):
    m = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, resave_bytes=b"filf")
    assert v["resave"] == "fail" and "offset 3" in rows["resave"][1]


def test_decomp_graph_difference_fails_unless_explained(monkeypatch, tmp_path):
    torch.manual_seed(1)
    a = _Net(extra_op=True)
    b = _Net(add_instead=True)  # y * 2 vs y + y: same results, another graph
    b.load_state_dict(a.state_dict())
    v, rows = _verdicts(monkeypatch, tmp_path, a, b)
    assert v["outputs"] == "pass" and v["decomp"] == "fail" and "not listed" in rows["decomp"][1]
    difference = rows["decomp"][1].split("] ", 1)[1].replace(" (not listed in conformance/explained.toml)", "")
    explained = [{"case": "t", "program": "forward", "check": "decomp", "difference": difference, "why": "a test"}]
    v, rows = _verdicts(monkeypatch, tmp_path / "e", a, b, explained=explained)
    assert v["decomp"] == "pass" and "explained" in rows["decomp"][1]


def test_decomp_results_are_compared_on_extra_inputs(monkeypatch, tmp_path):
    from torch.export import Dim

    torch.manual_seed(1)
    m = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, args=(torch.randn(4, 4),),
                        dynamic_shapes=({0: Dim("b", min=2, max=16)},), loaded_shapes=({0: Dim("b", min=2, max=6)},))
    assert v["decomp"] == "fail" and "derived_1" in rows["decomp"][1], rows["decomp"]


def test_unflatten_fails_for_other_submodules(monkeypatch, tmp_path):
    torch.manual_seed(1)
    a = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, a, _Renamed(a))
    assert v["unflatten"] == "fail" and "submodules" in rows["unflatten"][1]


def test_reexport_fails_when_results_differ(monkeypatch, tmp_path):
    torch.manual_seed(1)
    v, rows = _verdicts(monkeypatch, tmp_path, _Doubler(), _Net())
    assert v["reexport"] == "fail"


def test_random_outputs_of_a_case_declared_deterministic_are_an_error(monkeypatch, tmp_path):
    class Noisy(torch.nn.Module):
        def forward(self, x):
            return x + torch.rand(x.shape)

    v, rows = _verdicts(monkeypatch, tmp_path, Noisy(), Noisy())
    assert v["outputs"] == "error" and "deterministic" in rows["outputs"][1]


def test_every_program_gets_derived_extra_and_invalid_inputs(tmp_path):
    from torch.export import Dim

    torch.manual_seed(0)
    spec = Program(_Net(), (torch.randn(4, 4),), dynamic_shapes=({0: Dim("b", min=2, max=16)},))
    ref = _record_program(spec, spec.export(), "forward", str(tmp_path), True)
    assert len(ref["sets"]) - 1 >= 2 and len(ref["invalid"]) >= 1
    assert all(e["kind"] for e in ref["invalid"])
    static = Program(_Net(), (torch.randn(2, 4),))
    ref = _record_program(static, static.export(), "forward", str(tmp_path / "s"), True)
    assert len(ref["sets"]) - 1 >= 1 and len(ref["invalid"]) >= 1


# --------------------------------------------------------------------------- the round-trip tests' helper

def test_roundtrip_helper_outputs_equal_is_strict():
    import pt2f_rt_helpers as H

    t = torch.arange(4.0)
    assert H.outputs_equal({"a": t, "b": (t, 1)}, {"a": t.clone(), "b": (t.clone(), 1)})
    assert not H.outputs_equal({"a": t, "b": t}, [t, t])  # dict vs list
    assert not H.outputs_equal({"a": t, "b": t}, {"a": t, "c": t})  # renamed key
    assert not H.outputs_equal((t,), (t.view(torch.int32),))  # float32 vs int32, same bits
    assert not H.outputs_equal((t, True), (t, 1))  # bool vs int
    assert not H.outputs_equal((t,), [t])  # tuple vs list


# --------------------------------------------------------------------------- whole runs with other targets

def test_save_fails_for_a_writer_that_changes_the_program_and_torch_row_says_why(monkeypatch, tmp_path):
    """One end-to-end run with two third-party targets: a writer that changes the program
    while saving (the `save` column must fail) and torch's own serializer (N/A with reasons)."""
    from pathlib import Path

    from conformance.corpus._case import Case
    from conformance.runner import Target, run_case

    support = str(Path(__file__).resolve().parents[1] / "support")
    monkeypatch.setenv("PYTHONPATH", support + os.pathsep + os.environ.get("PYTHONPATH", ""))
    case = Case("machinery_net", lambda: Program(_Net(), (torch.randn(2, 4),)), frozenset({"full"}))
    targets = (Target("mutating", "conformance_fakes:mutating_writer"),
               Target("torch", "conformance.adapters:torch_writer", "conformance.adapters:torch_loader"))
    res = run_case(case, targets=targets, workdir=str(tmp_path), timeout=900)
    bad, theirs = res.rows["mutating"], res.rows["torch"]
    assert bad["save"][0] == "fail" and "save changed the program" in bad["save"][1], bad["save"]
    for c in ("validate", "dump", "dedup", "resave"):
        assert theirs[c][0] == "na" and theirs[c][1], (c, theirs[c])
    assert theirs["load"][0] == "pass" and theirs["graph"][0] == "pass", theirs
    # (torch's row saw the program after the bad writer changed it: its state check fails, rightly.)
    assert theirs["state"][0] == "fail"


# --------------------------------------------------------------------------- the report

def test_report_gives_a_reason_for_every_na_cell_and_no_machine_path():
    from conformance._report import render_report
    from conformance.runner import CHECKS, CaseResult

    rows = {c: ["pass", ""] for c in CHECKS}
    rows["extra_inputs"] = ["na", "[forward] no other valid input: because"]
    rows["dump"] = ["na", ""]
    rows["outputs"] = ["fail", "file kept in /tmp/xyz/program.pt2f and " + "/" + "work/a/b"]
    text = render_report([CaseResult("c", rows={"flatbuffers": rows})])
    assert "/tmp/" not in text and "/work/" not in text
    assert "–[N1]" in text and "–[N2]" in text and "N2. no other valid input: because" in text
    assert "N1. no reason given" in text  # an N/A without a reason is visible, not silent


def test_committed_report_has_no_machine_paths():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "conformance" / "REPORT.md").read_text(encoding="utf-8")
    for prefix in ("/work/", "/root/", "/tmp/", "/home/"):
        assert prefix not in text, prefix


# --------------------------------------------------------------------------- the second audit's defects (issue 27)
#
# Each wrong loader or writer (tests/support/conformance_fakes.py, also usable as
# `python -m conformance.runner --loader conformance_fakes:NAME`) passed every check
# before; each must now be caught, and the same program with pt2format's own loader
# must pass (so the check is not one that fails everything).

class _BatchNormTrain(torch.nn.Module):
    """Train-mode BatchNorm: running statistics are updated in place and not returned."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bn = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x)).relu()


def test_dropped_buffer_updates_are_caught(monkeypatch, tmp_path):
    torch.manual_seed(1)
    m = _BatchNormTrain().train()
    args = (torch.randn(4, 4),)
    v, rows = _verdicts(monkeypatch, tmp_path / "ok", m, m, args=args)
    for check in ("outputs", "extra_inputs", "decomp", "unflatten", "reexport"):
        assert v[check] == "pass", (check, rows[check])
    v, rows = _verdicts(monkeypatch, tmp_path / "bad", m, m, args=args,
                        loader="conformance_fakes:frozen_buffers_loader")
    for check in ("outputs", "extra_inputs"):
        assert v[check] == "fail" and "after the call differs from the original's" in rows[check][1], \
            (check, rows[check])
    assert v["graph"] == v["state"] == "pass"  # nothing else shows it


def test_column_major_outputs_are_caught(monkeypatch, tmp_path):
    torch.manual_seed(1)
    m = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, loader="conformance_fakes:column_major_loader")
    assert v["outputs"] == "fail" and "another layout" in rows["outputs"][1] and "stride" in rows["outputs"][1], rows
    assert "not listed in conformance/explained.toml" in rows["outputs"][1]
    assert v["extra_inputs"] == "fail"


class _SliceOut(torch.nn.Module):
    def forward(self, x):
        return x[1:] * 1, x.split(2)[1]


def test_storage_offset_of_an_output_is_compared(monkeypatch, tmp_path):
    def fresh_copies(ep):  # same values, each output in a storage of its own
        def install(m):
            m.register_forward_hook(lambda mod, a, out: tuple(t.clone() for t in out))
        from conformance_fakes import _on_module
        return _on_module(ep, install)

    v, rows = _verdicts(monkeypatch, tmp_path / "ok", _SliceOut(), _SliceOut(), args=(torch.randn(4, 3),))
    assert v["outputs"] == "pass", rows["outputs"]
    v, rows = _verdicts(monkeypatch, tmp_path / "bad", _SliceOut(), fresh_copies, args=(torch.randn(4, 3),))
    # caught by the aliasing check (the slice shares the input's storage in torch's run) before the offset's
    assert v["outputs"] == "fail" and ("storage_offset" in rows["outputs"][1]
                                       or "shares storage with ['input[0]']" in rows["outputs"][1]), rows["outputs"]


def test_detached_outputs_are_caught(monkeypatch, tmp_path):
    torch.manual_seed(1)
    m = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, loader="conformance_fakes:detached_loader")
    # The example set runs one backward: no gradient reaches the parameters; the other sets show the flag.
    assert v["outputs"] == "fail" and "gradients" in rows["outputs"][1], rows["outputs"]
    assert v["extra_inputs"] == "fail" and "requires_grad" in rows["extra_inputs"][1], rows["extra_inputs"]


def test_layout_difference_passes_only_when_explained(monkeypatch, tmp_path):
    torch.manual_seed(1)
    m = _Net()
    v, rows = _verdicts(monkeypatch, tmp_path, m, m, loader="conformance_fakes:column_major_loader")
    difference = rows["outputs"][1].split("] ", 1)[1].replace(" (not listed in conformance/explained.toml)", "")
    explained = [{"case": "t", "program": "forward", "check": "outputs", "difference": difference, "why": "a test"}]
    v, rows = _verdicts(monkeypatch, tmp_path / "e", m, m, loader="conformance_fakes:column_major_loader",
                        explained=explained)
    assert v["outputs"] == "pass" and "explained" in rows["outputs"][1], rows["outputs"]


def test_a_values_difference_is_never_explained_as_a_layout_one(tmp_path):
    out = torch.randn(2, 3)
    res = {"outputs": (out,), "inputs_after": [[], {}], "buffers_after": {}}
    rec = behave.record(res, TreeWriter(str(tmp_path), "o"))
    other = out.clone()
    other.view(torch.int32)[0, 0] ^= 1
    problem = behave.compare_result(rec, {"outputs": (other.t().contiguous().t(),), "inputs_after": [[], {}],
                                          "buffers_after": {}}, str(tmp_path))
    assert problem and not isinstance(problem, behave.LayoutDifference) and "values differ" in problem


class _SignGate(torch.nn.Module):
    """Outputs depend on the sign of a weight only: one ulp more changes no result."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(4) + 0.5)

    def forward(self, x):
        return x * (self.w > 0)


def test_decomposed_state_one_ulp_off_is_caught(monkeypatch, tmp_path):
    m = _SignGate()
    v, rows = _verdicts(monkeypatch, tmp_path / "ok", m, m)
    assert v["decomp"] == "pass", rows["decomp"]
    v, rows = _verdicts(monkeypatch, tmp_path / "bad", m, m, loader="conformance_fakes:decomp_ulp_loader")
    assert v["decomp"] == "fail" and "decomposed program's state" in rows["decomp"][1], rows["decomp"]
    assert v["outputs"] == v["state"] == "pass"  # the loaded program itself is right


class _Pair:
    """A container registered with register_pytree_node whose context has no field names,
    in a module the checking process cannot import."""

    def __init__(self, a, b):
        self.a, self.b = a, b


_Pair.__module__ = "module_not_imported_here"
_pytree.register_pytree_node(_Pair, lambda p: ([p.a, p.b], None), lambda v, ctx: _Pair(*v),
                             serialized_type_name="module_not_imported_here._Pair")


class _PairOut(torch.nn.Module):
    def forward(self, x):
        return _Pair(x + 1, x * 2)


def test_nameless_container_falls_back_to_a_tuple_only(monkeypatch, tmp_path):
    v, rows = _verdicts(monkeypatch, tmp_path / "ok", _PairOut(), _PairOut())
    assert v["outputs"] == "pass", rows["outputs"]
    v, rows = _verdicts(monkeypatch, tmp_path / "bad", _PairOut(), _PairOut(),
                        loader="conformance_fakes:nameless_as_dict_loader")
    assert v["outputs"] == "fail" and "fall back to a tuple" in rows["outputs"][1], rows["outputs"]
    assert "'k0'" in rows["outputs"][1]
    want = {"type": "module_not_imported_here._Pair", "context": None, "children": [None, None]}
    assert behave.compare_spec(want, _spec((torch.ones(1), torch.ones(1)))) is None  # the documented fallback
    assert behave.compare_spec(want, _spec({"a": torch.ones(1), "b": torch.ones(1)}))  # any keys: not allowed
    assert behave.compare_spec(want, _spec([torch.ones(1), torch.ones(1)]))  # a list is not a tuple


def test_writer_leaving_no_file_fails_save_and_blocks_the_rest_with_a_reason(monkeypatch, tmp_path):
    from pathlib import Path

    from conformance._report import render_report
    from conformance.corpus._case import Case
    from conformance.runner import BLOCKED, CHECKS, Target, run_case

    support = str(Path(__file__).resolve().parents[1] / "support")
    monkeypatch.setenv("PYTHONPATH", support + os.pathsep + os.environ.get("PYTHONPATH", ""))
    case = Case("machinery_nofile", lambda: Program(_Net(), (torch.randn(2, 4),)), frozenset({"full"}))
    res = run_case(case, targets=(Target("nofile", "conformance_fakes:no_file_writer"),), workdir=str(tmp_path),
                   timeout=600)
    row = res.rows["nofile"]
    assert row["export"][0] == "pass"
    assert row["save"][0] == "fail" and "left no file" in row["save"][1], row["save"]
    for c in CHECKS[CHECKS.index("save") + 1:]:
        assert row[c][0] == BLOCKED and "save left no file" in row[c][1], (c, row[c])
    text = render_report([res])
    assert "save left no file (see the save cell)" in text and "no reason given" not in text


class _StatefulPairNet(torch.nn.Module):
    """Every defect at once: buffers updated in place, 2-D outputs that require grad, a name-less container."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bn = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        h = self.bn(self.lin(x))
        return _Pair(h.relu(), h * 2)


def test_wrong_loaders_are_caught_end_to_end_as_third_party_targets(monkeypatch, tmp_path):
    """The way a third party runs them (`--loader conformance_fakes:NAME`): a fresh loading process that cannot
    import the container class, one row per wrong loader, beside pt2format's own row, which passes."""
    from pathlib import Path

    from conformance.corpus._case import Case
    from conformance.runner import Target, run_case

    support = str(Path(__file__).resolve().parents[1] / "support")
    monkeypatch.setenv("PYTHONPATH", support + os.pathsep + os.environ.get("PYTHONPATH", ""))
    torch.manual_seed(0)
    case = Case("machinery_defects", lambda: Program(_StatefulPairNet().train(), (torch.randn(4, 4),)),
                frozenset({"full"}))
    writer = "conformance.adapters:flatbuffers_writer"
    wrong = {"frozen": ("frozen_buffers_loader", "outputs", "after the call differs from the original's"),
             "colmajor": ("column_major_loader", "outputs", "another layout"),
             "detached": ("detached_loader", "outputs", "gradients"),
             "ulp": ("decomp_ulp_loader", "decomp", "decomposed program's state"),
             "asdict": ("nameless_as_dict_loader", "outputs", "fall back to a tuple")}
    targets = (Target("flatbuffers", writer),) + tuple(
        Target(label, writer, f"conformance_fakes:{name}") for label, (name, _, _) in wrong.items())
    res = run_case(case, targets=targets, workdir=str(tmp_path), timeout=900)
    good = res.rows["flatbuffers"]
    assert all(status in ("pass", "na") for status, _ in good.values()), good
    for label, (_, check, text) in wrong.items():
        status, reason = res.rows[label][check]
        assert status == "fail" and text in reason, (label, check, res.rows[label][check])
