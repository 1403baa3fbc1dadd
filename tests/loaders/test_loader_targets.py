"""loaders/_targets.py: target names -> torch callables by registry lookup, and call bindings as torch's dispatcher."""

from __future__ import annotations

import operator

import pytest
import torch

from pt2format.errors import LoadError, StringClassError
from pt2format.loaders._targets import check_call_binding, resolve_target


@pytest.mark.parametrize("target", [torch.ops.aten.add.Tensor, torch.ops.aten.convolution.default,
                                    torch.ops.aten.sum.dim_IntList, torch.ops.higher_order.cond,
                                    torch.ops.higher_order.map_impl, operator.getitem, torch.sym_float])
def test_names_resolve_to_torchs_objects(target):
    from pt2format.vocab.operators import callable_name

    assert resolve_target(callable_name(target)) is target


@pytest.mark.parametrize("name", [
    "torch.ops.aten.no_such_op.default", "torch.ops.aten.add.NoSuchOverload", "torch.ops.nowhere.f.default",
    "os.system", "torch.ops.higher_order.no_such_hop", "torch.ops.aten.__class__.default",
])
def test_anything_else_is_a_load_error_naming_it(name):
    with pytest.raises((LoadError, StringClassError)) as e:
        resolve_target(name, "graph.nodes[0].target")
    assert "graph.nodes[0].target" in str(e.value)


def test_bindings_refused_where_torchs_dispatcher_refuses_them():
    op = torch.ops.aten.add.Tensor
    x = torch.ones(2)
    check_call_binding(op, 2, ["alpha"], "n")  # what torch accepts
    op(x, x, alpha=2)
    for n_args, kwargs in [(4, []), (2, ["code"]), (2, ["other"])]:
        with pytest.raises(Exception):  # torch's own refusal of the same call
            op(*([x] * n_args), **{k: x for k in kwargs})
        with pytest.raises(LoadError):
            check_call_binding(op, n_args, kwargs, "n")
