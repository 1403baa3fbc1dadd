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


def test_extreme_operands_finish_with_torchs_value():
    """Operands whose naive evaluation would never finish (2 ** 10**18 tried as a root, 10 ** 10**18)."""
    import sympy
    from torch.utils._sympy import functions as F

    cases = [F.PowByNatural(sympy.Integer(-1), sympy.Integer((1 << 62) + 1)),
             sympy.Pow(sympy.Integer(2), sympy.Rational(1, 10 ** 18), evaluate=False),
             F.PowByNatural(sympy.Integer(1), sympy.Integer(1 << 62))]
    for e in cases:
        want = R.torch_value(e.doit() if isinstance(e, sympy.Pow) else e, {}, {})
        assert R.same(R.python_value(e, {}), want), e
    pool = _pool(dict(kind=m.SymExprKind.INTEGER, int_value=123), dict(kind=m.SymExprKind.INTEGER, int_value=-10 ** 18),
                 dict(kind=m.SymExprKind.APPLY, op=m.SymOp.ROUND_DECIMAL, args=[0, 1]))
    assert R.same(evaluate_pool(pool, [])[2], R.torch_value(F.RoundDecimal(sympy.Integer(123), sympy.Integer(-10 ** 18)),
                                                             {}, {}))
