"""Operator targets: their qualified names, the builtin allow-list, and `OperatorSchema` rows.

The allow-list is the only way a non-operator callable gets into (or out of)
a file: the exporter refuses other Python callables, and the loader resolves
these names by looking them up in this table, never by importing.
"""

from __future__ import annotations

import torch

from pt2format._generated.model import OperatorKind, OperatorParameter, OperatorSchema
from pt2format.errors import ExportError

from pt2format.vocab.enums import ints as _ints
from pt2format.vocab.operators import BUILTINS, callable_name
from ._values import to_value

OperatorKind = _ints(OperatorKind)


_BUILTIN_IDS = {id(f): name for name, f in BUILTINS.items()}


def target_name(target, path: str = "target") -> tuple[str, int]:
    """(qualified name, OperatorKind) of a node target; ExportError for anything off the allow-list."""
    if isinstance(target, torch._ops.OpOverload):
        return callable_name(target), OperatorKind.OP_OVERLOAD
    if isinstance(target, torch._ops.HigherOrderOperator):
        return callable_name(target), OperatorKind.HIGHER_ORDER
    name = _BUILTIN_IDS.get(id(target))
    if name is not None:
        return name, OperatorKind.BUILTIN
    raise ExportError("node target is neither an operator nor an allow-listed builtin", path=path,
                      expected="torch.ops.* or one of pt2format's builtins", got=callable_name(target))


def _parameter(arg, path: str) -> OperatorParameter:
    p = OperatorParameter(name=arg.name, type=str(arg.real_type), kwarg_only=bool(arg.kwarg_only))
    if arg.has_default_value():
        try:
            p.default_value = to_value(arg.default_value, path=path)
        except (ExportError, KeyError):
            p.default_value = None  # e.g. a layout default: the printed schema still shows it
    info = arg.alias_info
    if info is not None:
        sets = sorted(info.before_set)
        p.alias_set = "|".join(sets) if sets else None
        p.is_write = bool(info.is_write)
    return p


def operator_schema(target, name: str, kind: int) -> OperatorSchema:
    """OperatorSchema for a non-aten target (operators carry their torch FunctionSchema)."""
    out = OperatorSchema(target=name, kind=kind)
    if isinstance(target, torch._ops.OpOverload):
        s = target._schema
        out.schema = str(s)
        out.parameters = [_parameter(a, f"{name}.parameters[{i}]") for i, a in enumerate(s.arguments)]
        out.returns = [_parameter(a, f"{name}.returns[{i}]") for i, a in enumerate(s.returns)]
        out.is_mutable = bool(s.is_mutable)
    return out


def is_core(target) -> bool:
    """aten operators need no schema in the file: every torch has them."""
    return isinstance(target, torch._ops.OpOverload) and target.namespace == "aten"
