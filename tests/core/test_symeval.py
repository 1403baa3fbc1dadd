"""pt2format._symeval against torch's own values: the same corpus the C++ evaluator is held to (tests/native/test_cpp_symeval.py)."""

from __future__ import annotations

import math

import pytest
import symexpr_reference_cpp as R

from pt2format._generated import model as m
from pt2format._symeval import UNKNOWN, EvalFailure, evaluate_pool
from pt2format.errors import LimitError
from pt2format.exporter._symbols import SymbolTable

EXPRS, SYMBOLS, ASSIGNMENTS = R.torch_corpus()


def python_value(expr, values):
    """The Python evaluator's value of `expr` (its own pool), or R.Err."""
    table = SymbolTable(None)
    root = table.expr(expr)
    hints = [values[s.name] for s in table.symbols]
    try:
        vals = evaluate_pool(table.exprs, hints)
    except LimitError as e:
        return R.Err("overflow" if "overflow" in str(e) else str(e))
    v = vals[root]
    assert v is not UNKNOWN
    return R.Err(v.reason) if isinstance(v, EvalFailure) else v


def same(got, want) -> bool:
    if isinstance(want, R.Err):
        return isinstance(got, R.Err) and str(want) in str(got)
    if isinstance(got, R.Err) or isinstance(got, bool) != isinstance(want, bool):
        return False
    if isinstance(want, float):
        return isinstance(got, float) and (got == want or (math.isnan(got) and math.isnan(want))) \
            and math.copysign(1, got) == math.copysign(1, want)
    return type(got) is type(want) and got == want


@pytest.mark.parametrize("values", ASSIGNMENTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()))
def test_python_evaluator_matches_torch(values):
    bad = []
    numbers = 0
    for e in EXPRS:
        want, got = R.torch_value(e, SYMBOLS, values), python_value(e, values)
        numbers += not isinstance(want, R.Err)
        if not same(got, want):
            bad.append(f"{e}: torch {want!r}, python {got!r}")
    assert not bad, "\n".join(bad)
    assert numbers > len(EXPRS) // 2  # the corpus mostly evaluates, not mostly fails


def _pool(*nodes):
    return [m.SymExpr(**n) for n in nodes]


def test_integer_overflow_is_a_limit_error_naming_the_node():
    pool = _pool(dict(kind=m.SymExprKind.INTEGER, int_value=(1 << 62)),
                 dict(kind=m.SymExprKind.APPLY, op=m.SymOp.ADD, args=[0, 0]))
    with pytest.raises(LimitError, match=r"sym_exprs\[1\].*overflow"):
        evaluate_pool(pool, [])


def test_int_oo_is_a_bound_not_a_number():
    pool = _pool(dict(kind=m.SymExprKind.INT_POSITIVE_INFINITY), dict(kind=m.SymExprKind.POSITIVE_INFINITY))
    a, b = evaluate_pool(pool, [])
    assert isinstance(a, EvalFailure) and b == math.inf
