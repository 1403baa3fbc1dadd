"""Broken or foreign programs: every failure is a typed LoadError naming where it happened."""

from __future__ import annotations

import copy
import functools
import warnings

import pytest
import torch

import pt2format
from pt2format._generated import model as m
from pt2format.exporter import export_package
from pt2format.loaders import build_program
from pt2format.loaders._treespec import FallbackWarning


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return {"out": torch.relu(self.lin(x)) * x.shape[0]}


@functools.lru_cache(maxsize=None)
def base():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(Small(), (torch.randn(4, 3),),
                                 dynamic_shapes={"x": {0: torch.export.Dim("b", min=2, max=8)}})
    pkg, payloads = export_package(ep)
    return ep, pkg, [bytes(p) for p in payloads]


def load(mutate, **kw):
    ep, pkg0, data = base()
    pkg = copy.deepcopy(pkg0)
    mutate(pkg)
    views = [memoryview(bytearray(b)) for b in data]
    return build_program(pkg, kw.pop("name", None), lambda i: views[i], **kw)


def prog(pkg):
    return pkg.programs[0]


def node(pkg, part):
    return next(n for n in prog(pkg).graph.nodes if part in n.target)


def test_baseline_loads():
    ep = load(lambda p: None)
    assert [n.name for n in ep.graph.nodes] == [n.name for n in base()[0].graph.nodes]


def test_unregistered_custom_operator_names_it():
    with pytest.raises(pt2format.LoadError, match="pt2f_not_loaded::fancy_relu") as e:
        load(lambda p: setattr(node(p, "relu"), "target", "torch.ops.pt2f_not_loaded.fancy_relu.default"))
    assert "nodes[" in e.value.path


def test_unknown_overload_is_refused():
    with pytest.raises(pt2format.LoadError, match="no overload"):
        load(lambda p: setattr(node(p, "relu"), "target", "torch.ops.aten.relu.NoSuchOverload"))


def test_missing_program_lists_the_names():
    with pytest.raises(pt2format.LoadError, match="forward") as e:
        load(lambda p: None, name="decode")
    assert e.value.expected == ["forward"]


def test_expression_index_out_of_range():
    def bad(p):
        ti = prog(p).graph.tensor_values[0].meta  # noqa: F841 - keep a handle for readability
        prog(p).range_constraints[0].expr = 999
    with pytest.raises(pt2format.LoadError, match="out of range") as e:
        load(bad)
    assert "range_constraints[0]" in e.value.path


def test_expression_operand_must_come_first():
    def bad(p):
        exprs = prog(p).sym_exprs
        exprs.append(m.SymExpr(kind=m.SymExprKind.APPLY, op=m.SymOp.ADD, args=[len(exprs), 0]))
        prog(p).range_constraints[0].expr = len(exprs) - 1
    with pytest.raises(pt2format.LoadError, match="earlier"):
        load(bad)


def test_tensor_outside_its_storage():
    def bad(p):
        p.tensors[0].sizes = [1000, 1000]
    with pytest.raises(pt2format.LoadError, match="storage") as e:
        load(bad)
    assert "tensors[0]" in e.value.path


def test_undefined_value_reference():
    def bad(p):
        node(p, "relu").inputs[0].value = m.TensorArgument(name="nowhere")
    with pytest.raises(pt2format.LoadError, match="nowhere"):
        load(bad)


def test_unknown_verifier():
    with pytest.raises(pt2format.LoadError, match="verifier"):
        load(lambda p: setattr(prog(p), "verifiers", ["NO_SUCH_DIALECT"]))


def test_unknown_dtype():
    with pytest.raises(pt2format.LoadError, match="dtype"):
        load(lambda p: setattr(p.tensors[0], "dtype", 200))


def test_duplicate_node_name():
    def bad(p):
        node(p, "relu").name = node(p, "linear").name
    with pytest.raises(pt2format.LoadError):
        load(bad)


def test_unknown_pytree_class_gets_a_standin_with_a_warning():
    def foreign(p):
        spec = prog(p).module_call_graph[0].signature.out_spec
        spec.kind, spec.type_name = m.TreeSpecKind.CUSTOM, "somewhere.not_imported.Output"
        spec.field_names = ["out"]
        spec.keys = []
    with pytest.warns(FallbackWarning, match="somewhere.not_imported.Output"):
        ep = load(foreign)
    out = ep.module()(torch.randn(3, 3))
    assert type(out).__name__ == "Output" and type(out).__module__ == "somewhere.not_imported"
    assert isinstance(out.out, torch.Tensor) and out[0] is out.out


def test_unknown_pytree_class_without_a_fitting_standin_falls_back_to_a_dict():
    """Field names that do not name the children (2 names, 1 child): no stand-in fits, the dict fallback."""
    def foreign(p):
        spec = prog(p).module_call_graph[0].signature.out_spec
        spec.kind, spec.type_name = m.TreeSpecKind.CUSTOM, "somewhere.not_imported.Output"
        spec.field_names = ["out", "other"]
        spec.keys = [m.Value(m.StringValue("out"))]
    with pytest.warns(FallbackWarning, match="somewhere.not_imported.Output"):
        ep = load(foreign)
    out = ep.module()(torch.randn(3, 3))
    assert isinstance(out, dict) and list(out) == ["out"]


def test_empty_range_is_refused():
    def bad(p):
        r = prog(p).symbols[0].range
        r.lower, r.upper, r.has_lower, r.has_upper = 9, 2, True, True
    with pytest.raises(pt2format.LoadError, match="empty"):
        load(bad)


@pytest.mark.parametrize("type_name", ["builtins.tuple", "collections.OrderedDict", "torch.nn.Linear"])
def test_custom_node_naming_a_real_class_gets_no_standin(type_name):
    """A file cannot make a stand-in that reads like a real class, nor redirect torch's pytree registry."""
    import torch.utils._pytree as pytree
    before = dict(pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE)

    def foreign(p):
        spec = prog(p).module_call_graph[0].signature.out_spec
        spec.kind, spec.type_name = m.TreeSpecKind.CUSTOM, type_name
        spec.field_names, spec.keys = ["out"], []
    with pytest.warns(FallbackWarning, match=type_name):
        ep = load(foreign)
    out = ep.module()(torch.randn(3, 3))
    assert isinstance(out, dict) and list(out) == ["out"]
    assert pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE == before


def test_standin_count_is_bounded(monkeypatch):
    """Past MAX_STANDINS classes per process, unknown classes load as plain containers."""
    from pt2format.loaders import _standins
    monkeypatch.setattr(_standins, "MAX_STANDINS", len(_standins._CACHE))

    def foreign(p):
        spec = prog(p).module_call_graph[0].signature.out_spec
        spec.kind, spec.type_name = m.TreeSpecKind.CUSTOM, "somewhere.never_seen_before.Output"
        spec.field_names, spec.keys = ["out"], []
    with pytest.warns(FallbackWarning, match="never_seen_before"):
        ep = load(foreign)
    out = ep.module()(torch.randn(3, 3))
    assert isinstance(out, dict) and list(out) == ["out"]


def test_real_class_registered_after_a_standin_wins(monkeypatch):
    """A stand-in made before the real class was imported does not hide it from later loads."""
    import sys
    import types

    import torch.utils._pytree as pytree

    def foreign(p):
        spec = prog(p).module_call_graph[0].signature.out_spec
        spec.kind, spec.type_name = m.TreeSpecKind.CUSTOM, "pt2f_late_module.Out"
        spec.field_names, spec.keys = ["out"], []
    with pytest.warns(FallbackWarning, match="pt2f_late_module.Out"):
        first = load(foreign).module()(torch.randn(3, 3))
    assert type(first).__name__ == "Out" and isinstance(first.out, torch.Tensor)

    class Out:
        def __init__(self, out):
            self.out = out

    Out.__module__, Out.__qualname__ = "pt2f_late_module", "Out"
    mod = types.ModuleType("pt2f_late_module")
    mod.Out = Out
    monkeypatch.setitem(sys.modules, "pt2f_late_module", mod)
    pytree.register_pytree_node(Out, lambda o: ([o.out], None), lambda v, c: Out(v[0]),
                                serialized_type_name="pt2f_late_module.Out")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FallbackWarning)
            second = load(foreign).module()(torch.randn(3, 3))
        assert type(second) is Out
    finally:
        pytree._deregister_pytree_node(Out)
