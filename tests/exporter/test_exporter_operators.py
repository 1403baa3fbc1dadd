"""exporter/_operators.py: target names and `OperatorSchema` rows, against torch's own operator schemas."""

from __future__ import annotations

import operator

import pytest
import torch
from torch._export.serde.serialize import GraphModuleSerializer

from pt2format._generated.model import OperatorKind
from pt2format.errors import ExportError
from pt2format.exporter._operators import is_core, operator_schema, target_name

_SER = GraphModuleSerializer.__new__(GraphModuleSerializer)


@pytest.mark.parametrize("target, kind", [
    (torch.ops.aten.add.Tensor, OperatorKind.OP_OVERLOAD),
    (torch.ops.aten.index_put_.default, OperatorKind.OP_OVERLOAD),
    (torch.ops.higher_order.cond, OperatorKind.HIGHER_ORDER),
    (operator.getitem, OperatorKind.BUILTIN),
    (torch.sym_max, OperatorKind.BUILTIN),
])
def test_target_name_and_kind(target, kind):
    assert target_name(target) == (_SER.serialize_operator(target), kind)


def test_other_callables_are_refused_by_path():
    with pytest.raises(ExportError, match="allow-listed") as e:
        target_name(lambda x: x, "graph.nodes[3].target")
    assert "graph.nodes[3].target" in str(e.value)


@pytest.mark.parametrize("op", [torch.ops.aten.add.Tensor, torch.ops.aten.add_.Tensor, torch.ops.aten.sum.dim_IntList,
                                torch.ops.aten.split.Tensor])
def test_schema_rows_are_torchs_function_schema(op):
    s = op._schema
    row = operator_schema(op, "torch.ops." + str(op), OperatorKind.OP_OVERLOAD)
    assert row.schema == str(s)
    assert row.is_mutable == s.is_mutable
    assert [(p.name, p.type, p.kwarg_only) for p in row.parameters] == \
           [(a.name, str(a.real_type), a.kwarg_only) for a in s.arguments]
    assert [p.type for p in row.returns] == [str(r.real_type) for r in s.returns]
    for p, a in zip(row.parameters, s.arguments):
        assert p.is_write == bool(a.alias_info is not None and a.alias_info.is_write)
        if a.has_default_value() and p.default_value is not None and isinstance(a.default_value, (int, float, bool)):
            assert p.default_value.value.value == a.default_value


def test_core_means_the_aten_namespace():
    assert is_core(torch.ops.aten.add.Tensor)
    assert not is_core(torch.ops.higher_order.cond)
    assert not is_core(torch.ops.prims.convert_element_type.default)
    assert not is_core(operator.add)
