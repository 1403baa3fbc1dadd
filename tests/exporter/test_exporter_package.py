"""The schema trees the exporter builds, checked against torch's own objects."""

from __future__ import annotations

import functools
import math
import sys
import warnings
from pathlib import Path

import pytest
import sympy
import torch

import pt2f_rt_models as M  # noqa: E402

from pt2format import ExportError  # noqa: E402
from pt2format._codecs import encode  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format.exporter import export_package  # noqa: E402


@functools.lru_cache(maxsize=None)
def case(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return M.ALL[name]()


def evaluate(prog, idx, env):
    """An independent evaluator of the structured pool (integer ops only) for checking against sympy."""
    e = prog.sym_exprs[idx]
    K, O = m.SymExprKind, m.SymOp
    if e.kind == K.INTEGER:
        return e.int_value
    if e.kind == K.SYMBOL:
        return env[prog.symbols[e.symbol].name]
    args = [evaluate(prog, a, env) for a in e.args]
    if e.op == O.ADD:
        return sum(args)
    if e.op == O.MUL:
        return math.prod(args)
    if e.op == O.FLOOR_DIV:
        return args[0] // args[1]
    if e.op in (O.PYTHON_MOD, O.MOD):
        return args[0] % args[1]
    if e.op == O.MAX:
        return max(args)
    if e.op == O.MIN:
        return min(args)
    raise AssertionError(f"op {e.op} not covered by the test evaluator")


def test_symbols_and_expressions_are_structured_and_match_torch():
    ep = case("dynamic_derived").ep
    pkg, _ = export_package(ep)
    prog = pkg.programs[0]
    from torch._guards import detect_fake_mode
    env_torch = detect_fake_mode([n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"]).shape_env
    # Every symbol: name, range and hint exactly as torch's shape environment has them.
    assert prog.symbols
    for s in prog.symbols:
        sym = next(k for k in env_torch.var_to_range if k.name == s.name)
        vr = env_torch.var_to_range[sym]
        assert (s.range.lower, s.range.upper) == (int(vr.lower), int(vr.upper))
        assert s.has_hint and s.hint == int(env_torch.backed_var_to_val[sym])
        assert s.kind == m.SymbolKind.INT and s.positive == bool(sym.is_positive)
    # Operands always precede their users.
    for i, e in enumerate(prog.sym_exprs):
        assert all(a < i for a in e.args)
    # Each range constraint's expression evaluates like torch's sympy expression at other sizes too.
    assert len(prog.range_constraints) == len(ep.range_constraints)
    for rc, (expr, vr) in zip(prog.range_constraints, ep.range_constraints.items()):
        assert (rc.range.lower, rc.range.upper) == (int(vr.lower), int(vr.upper))
        for v in (2, 7, 32):
            env = {s.name: v for s in prog.symbols}
            want = expr.xreplace({sympy.Symbol(k, integer=True, positive=True): v for k in env})
            assert evaluate(prog, rc.expr, env) == int(want)
    # Tensor sizes refer to the pool: y's first size is 2*d, z's is d+1.
    tv = {t.name: t.meta for g in [prog.graph] for t in g.tensor_values}
    for name, f in (("y", lambda d: 2 * d), ("z", lambda d: d + 1), ("x", lambda d: d)):
        s0 = tv[name].sizes[0]
        assert s0.expr >= 0
        assert evaluate(prog, s0.expr, {prog.symbols[0].name: 5}) == f(5)


def test_tied_weights_and_views_are_stored_once_with_their_layout():
    ep = case("views").ep
    pkg, payloads = export_package(ep)
    prog = pkg.programs[0]
    rows = {e.name: pkg.tensors[e.tensor] for e in prog.state}
    assert len({r.storage for r in rows.values()}) == 1  # p (transposed), off (offset view), row: one storage
    for name, r in rows.items():
        t = ep.state_dict.get(name, ep.constants.get(name))
        assert r.sizes == list(t.shape) and r.strides == list(t.stride()) and r.storage_offset == t.storage_offset()
    assert payloads[0].nbytes == 24 * 4
    tied = export_package(case("tied").ep)[0]
    st = {e.name: tied.tensors[e.tensor] for e in tied.programs[0].state}
    assert st["emb.weight"].storage == st["head.weight"].storage


def test_same_program_gives_same_tree_and_bytes():
    ep = case("nested_cond").ep
    a, _ = export_package(ep)
    b, _ = export_package(ep)
    assert a == b
    assert encode(a, "flatbuffers") == encode(b, "flatbuffers")


def test_node_metadata_is_structured():
    ep = case("nested_modules").ep
    pkg, _ = export_package(ep)
    nodes = {n.name: n for n in pkg.programs[0].graph.nodes}
    for fx_node in ep.graph.nodes:
        if fx_node.op != "call_function" or fx_node.name not in nodes:
            continue
        md = nodes[fx_node.name].metadata
        stack = fx_node.meta.get("nn_module_stack", {})
        assert [(e.key, e.path, e.type_name) for e in md.nn_module_stack] == [(k, v[0], v[1]) for k, v in stack.items()]
        assert md.stack_trace == fx_node.meta.get("stack_trace")
        if "torch_fn" in fx_node.meta:
            assert (md.torch_fn.name, md.torch_fn.target) == tuple(fx_node.meta["torch_fn"])


def test_custom_operator_schemas_are_recorded():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dec = case("custom_ops").ep.run_decompositions()
    pkg, _ = export_package(dec)
    ops = {o.target: o for o in pkg.operators}
    assert "torch.ops.higher_order.auto_functionalized_v2" in ops
    acc = ops["torch.ops.pt2f_rt.accumulate.default"]
    schema = torch.ops.pt2f_rt.accumulate.default._schema
    assert acc.kind == m.OperatorKind.OP_OVERLOAD and acc.is_mutable and acc.schema == str(schema)
    assert [(p.name, p.type, p.alias_set, p.is_write) for p in acc.parameters] == [
        (a.name, str(a.real_type), ("|".join(sorted(a.alias_info.before_set)) if a.alias_info else None),
         bool(a.alias_info and a.alias_info.is_write)) for a in schema.arguments]
    scale = ops["torch.ops.pt2f_rt.scale.default"]
    assert [p.kwarg_only for p in scale.parameters] == [False, False, True]
    assert scale.parameters[1].default_value.value.value == 2.0
    assert not any(t.startswith("torch.ops.aten.") for t in ops)  # core operators need no schema
    opsets = {o.namespace: o.version for o in pkg.programs[0].opsets}
    assert opsets["aten"] == torch._C._get_max_operator_version() and "pt2f_rt" in opsets


def test_unbacked_bindings_are_structured():
    ep = case("unbacked").ep
    pkg, _ = export_package(ep)
    prog = pkg.programs[0]
    by_name = {n.name: n for n in prog.graph.nodes}
    seen = 0
    for n in ep.graph.nodes:
        ub = n.meta.get("unbacked_bindings")
        if not ub:
            continue
        ours = by_name[n.name].metadata.unbacked_bindings
        assert [prog.symbols[b.symbol].name for b in ours] == [s.name for s in ub]
        for b, path in zip(ours, ub.values()):
            assert len(b.path) == len(path)
        seen += 1
    assert seen >= 2  # .item() and nonzero()


def test_meta_device_weights_are_saved_without_data():
    """Meta-device state: one storage per meta storage, its size in meta_nbytes, no payload bytes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            mod = M.MLP()
        ep = torch.export.export(mod, (torch.randn(2, 4, device="meta"),))
    pkg, payloads = export_package(ep)
    want = sorted(t.untyped_storage().nbytes() for t in ep.state_dict.values())
    want += [ep.example_inputs[0][0].untyped_storage().nbytes()]
    assert sorted(s.meta_nbytes for s in pkg.storages) == sorted(want)
    assert all(s.size == 0 for s in pkg.storages) and all(memoryview(p).nbytes == 0 for p in payloads)
    assert {t.device.type for t in pkg.tensors} == {"meta"}


def test_unknown_node_target_is_an_export_error():
    ep = case("mlp").ep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = ep.run_decompositions()
    node = next(n for n in ep.graph.nodes if n.op == "call_function")
    node.target = lambda *a: a  # a Python callable has no name a loader could resolve safely
    with pytest.raises(ExportError, match="allow-listed"):
        export_package(ep)


def test_progress_bar_appears_only_for_slow_saves(tmp_path, monkeypatch, capsys):
    import time

    import pt2format
    import pt2format._api as api
    ep = case("mlp").ep
    pt2format.save(ep, tmp_path / "fast.pt2f", progress=True)
    assert "pt2format save" not in capsys.readouterr().err
    real = api.write_package

    def slow(*a, **k):
        time.sleep(1.3)
        return real(*a, **k)
    monkeypatch.setattr(api, "write_package", slow)
    pt2format.save(ep, tmp_path / "slow.pt2f", progress=True)
    assert "pt2format save" in capsys.readouterr().err
    pt2format.save(ep, tmp_path / "quiet.pt2f", progress=False)
    assert "pt2format save" not in capsys.readouterr().err
