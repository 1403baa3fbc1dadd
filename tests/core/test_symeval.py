"""pt2format._symeval against torch's own values: the same corpus the C++ evaluator is held to (tests/native/test_cpp_symeval.py)."""

from __future__ import annotations

import math

import pytest
import symexpr_reference_cpp as R

from pt2format._generated import model as m
from pt2format._symeval import EvalFailure, evaluate_pool
from pt2format.errors import LimitError

EXPRS, SYMBOLS, ASSIGNMENTS = R.torch_corpus()


@pytest.mark.parametrize("values", ASSIGNMENTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()))
def test_python_evaluator_matches_torch(values):
    bad = []
    numbers = 0
    for e in EXPRS:
        want, got = R.torch_value(e, SYMBOLS, values), R.python_value(e, values)
        numbers += not isinstance(want, R.Err)
        if not R.same(got, want):
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
