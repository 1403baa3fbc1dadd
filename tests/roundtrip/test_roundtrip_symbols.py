"""sympy expressions built with torch's own functions survive SymbolTable -> pool -> ShapeBuilder unchanged."""

from __future__ import annotations

import pytest
import sympy
from torch.utils._sympy import functions as F
from torch.utils._sympy.numbers import int_oo

from pt2format._generated import model as m
from pt2format.errors import ExportError, LoadError
from pt2format.exporter._symbols import SymbolTable
from pt2format.loaders._symbols import ShapeBuilder

s0 = sympy.Symbol("s0", integer=True, positive=True)
s1 = sympy.Symbol("s1", integer=True, positive=True)
u0 = sympy.Symbol("u0", integer=True)

EXPRESSIONS = [
    s0, 2 * s0 + 1, s0 * s1 - 3, F.FloorDiv(s0, 4), F.PythonMod(s0 + 1, 3), F.Mod(s0, 8), F.CleanDiv(4 * s0, 4),
    F.Min(s0, s1), F.Max(s0, 2 * s1, 7), sympy.Eq(s0, 2 * s1), sympy.Ne(s0, 3), sympy.Lt(s0, s1), sympy.Le(u0, 16),
    sympy.Gt(u0, 2), sympy.Ge(s0, 2), sympy.And(sympy.Ge(u0, 2), sympy.Le(u0, 16)),
    sympy.Or(sympy.Eq(s0, 1), sympy.Eq(s1, 1)), sympy.Not(sympy.Eq(s0, s1)), F.PowByNatural(s0, 2),
    F.FloatPow(F.ToFloat(s0), sympy.Float(0.5)), F.IntTrueDiv(s0, s1), F.FloatTrueDiv(F.ToFloat(s0), sympy.Float(2.0)),
    F.TruncToInt(F.ToFloat(s0)), F.FloorToInt(F.ToFloat(s0)), F.CeilToInt(F.ToFloat(s0)),
    F.RoundToInt(F.ToFloat(s0)), F.Identity(s0), sympy.Abs(u0), F.OpaqueUnaryFn_sqrt(F.ToFloat(s0)),
    F.BitwiseFn_bitwise_and(s0, s1), sympy.Rational(3, 7) * s0, s0 ** -1, sympy.Pow(s0, sympy.Rational(1, 2)),
    sympy.Piecewise((s0, sympy.Gt(s0, 4)), (s1, True)), sympy.Integer(-(1 << 62)), sympy.Float(-0.0),
    int_oo, -int_oo, sympy.true,
]


def _roundtrip(exprs, hints=None):
    table = SymbolTable(None)
    idx = [table.expr(e) for e in exprs]
    for s in table.symbols:
        if hints and s.name in hints:
            s.hint, s.has_hint = hints[s.name], True
        s.positive = s.name.startswith("s")
    prog = m.Program(symbols=table.symbols, sym_exprs=table.exprs)
    shape = ShapeBuilder(prog)
    return prog, shape, [shape.expr(i) for i in idx]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=[str(e) for e in EXPRESSIONS])
def test_expression_survives(expr):
    _, _, (back,) = _roundtrip([expr])
    assert back == expr and type(back) is type(expr)
    assert back.free_symbols == expr.free_symbols  # same names and the same assumptions


def test_pool_is_shared_and_topological():
    prog, _, back = _roundtrip(EXPRESSIONS)
    assert back == EXPRESSIONS
    for i, e in enumerate(prog.sym_exprs):
        assert all(a < i for a in e.args)
    keys = [(e.kind, e.op, tuple(e.args), e.symbol, e.int_value, e.denominator, e.bool_value) for e in prog.sym_exprs
            if e.kind != m.SymExprKind.FLOAT]
    assert len(keys) == len(set(keys))  # identical sub-expressions are stored once


def test_hints_of_compound_expressions():
    _, shape, _ = _roundtrip([2 * s0 + s1, F.FloorDiv(s0, 2), s0 + u0], hints={"s0": 5, "s1": 3})
    assert [shape.hint(i) for i in range(len(shape.pool))
            if shape.pool[i].kind == m.SymExprKind.APPLY][:2] == [10, 13]
    last = len(shape.pool) - 1
    assert shape.hint(last) is None  # involves an unbacked symbol


def test_unsupported_function_is_an_export_error():
    with pytest.raises(ExportError, match="ModularIndexing"):
        SymbolTable(None).expr(F.ModularIndexing(s0, 2, 4))


def test_operand_after_its_user_is_refused():
    prog = m.Program(symbols=[m.Symbol(name="s0", kind=m.SymbolKind.INT)],
                     sym_exprs=[m.SymExpr(kind=m.SymExprKind.APPLY, op=m.SymOp.ADD, args=[1, 1]),
                                m.SymExpr(kind=m.SymExprKind.SYMBOL, symbol=0)])
    with pytest.raises(LoadError, match="earlier"):
        ShapeBuilder(prog).expr(0)


def test_wrong_arity_is_refused():
    prog = m.Program(symbols=[m.Symbol(name="s0", kind=m.SymbolKind.INT)],
                     sym_exprs=[m.SymExpr(kind=m.SymExprKind.SYMBOL, symbol=0),
                                m.SymExpr(kind=m.SymExprKind.APPLY, op=m.SymOp.FLOOR_DIV, args=[0])])
    with pytest.raises(LoadError, match="operands"):
        ShapeBuilder(prog).expr(1)
