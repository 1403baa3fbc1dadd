"""sympy expressions built with torch's own functions survive SymbolTable -> pool -> ShapeBuilder unchanged."""

from __future__ import annotations

import pytest
import sympy
import torch
from torch.utils._sympy import functions as F
from torch.utils._sympy.numbers import int_oo
from torch.utils._sympy.value_ranges import ValueRanges

import pt2format
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
    int_oo, -int_oo, sympy.oo, -sympy.oo, sympy.true,
    F.Where(sympy.Gt(s0, 4), s0, s1), F.ModularIndexing(u0, 3, 5), F.IsNonOverlappingAndDenseIndicator(s0, s1, s1, 1),
    F.OpaqueUnaryFn_log2(F.ToFloat(s0)), F.OpaqueUnaryFn_sin(F.ToFloat(s0)), F.OpaqueUnaryFn_cos(F.ToFloat(s0)),
    F.OpaqueUnaryFn_tan(F.ToFloat(s0)), F.OpaqueUnaryFn_asin(F.ToFloat(s0)), F.OpaqueUnaryFn_acos(F.ToFloat(s0)),
    F.OpaqueUnaryFn_atan(F.ToFloat(s0)), F.OpaqueUnaryFn_sinh(F.ToFloat(s0)), F.OpaqueUnaryFn_cosh(F.ToFloat(s0)),
    F.OpaqueUnaryFn_tanh(F.ToFloat(s0)), F.OpaqueUnaryFn_asinh(F.ToFloat(s0)), F.OpaqueUnaryFn_exp(F.ToFloat(s0)),
    F.OpaqueUnaryFn_log(F.ToFloat(s0)),
    # No class of their own survives construction: they become the ops above.
    F.LShift(s0, s1), F.RShift(s0, 2), F.CeilDiv(s0, 4), F.CeilDiv(4 * s0, 4),
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


def _torch_sympy_functions():
    """Every sympy function class torch defines in torch.utils._sympy.functions (what its serializer handles)."""
    out = []
    for name in dir(F):
        obj = getattr(F, name)
        if isinstance(obj, type) and issubclass(obj, sympy.Basic) and obj.__module__ == F.__name__ \
                and hasattr(obj, "eval") and name not in ("MinMaxBase",):
            out.append(obj)
    return out


def _instance(fn):
    """fn applied to symbolic arguments of the right count and kind (None when it cannot be)."""
    a, b, c = F.ToFloat(s0), F.ToFloat(s1), s1 + 2
    if getattr(fn, "_torch_unpickler", None) is F.make_opaque_unary_fn:
        return fn(a)
    found = []
    for args in ((s0,), (a,), (s0, c), (u0, s0, c), (a, b), (sympy.Gt(s0, 3), s0, s1), (a, sympy.Integer(2)),
                 (s0, s1, s1, 1)):
        try:
            e = fn(*args)
        except (TypeError, ValueError, AttributeError, AssertionError):
            continue
        if e.free_symbols:
            found.append(e)
    # Prefer an instance of the class itself; CeilDiv, LShift, RShift never are one.
    return next((e for e in found if type(e) is fn), found[0] if found else None)


@pytest.mark.parametrize("fn", _torch_sympy_functions(), ids=lambda f: f.__name__)
def test_every_torch_sympy_function_has_a_home(fn):
    """Whatever torch's sympy functions build is exported and rebuilt, equal and of the same class."""
    e = _instance(fn)
    assert e is not None, f"no symbolic instance of {fn.__name__}"
    _, _, (back,) = _roundtrip([e])
    assert back == e and type(back) is type(e)


def test_unsupported_function_is_an_export_error():
    with pytest.raises(ExportError, match="not_torch"):
        SymbolTable(None).expr(sympy.Function("not_torch")(s0))


def test_int_oo_and_oo_stay_apart():
    prog, _, back = _roundtrip([int_oo, sympy.oo, -int_oo, -sympy.oo])
    assert [type(b) for b in back] == [type(int_oo), type(sympy.oo), type(-int_oo), type(-sympy.oo)]
    assert [e.kind for e in prog.sym_exprs] == [m.SymExprKind.INT_POSITIVE_INFINITY, m.SymExprKind.POSITIVE_INFINITY,
                                                 m.SymExprKind.INT_NEGATIVE_INFINITY, m.SymExprKind.NEGATIVE_INFINITY]


def test_empty_value_range_is_unbounded():
    from pt2format.loaders._symbols import value_ranges
    assert value_ranges(m.ValueRange()) == ValueRanges(-int_oo, int_oo)
    assert value_ranges(m.ValueRange(), integer=False) == ValueRanges(-sympy.oo, sympy.oo)
    assert value_ranges(m.ValueRange(has_lower=True)) == ValueRanges(0, int_oo)


@pytest.mark.parametrize("vr", [ValueRanges(2, 16), ValueRanges(0, int_oo), ValueRanges(-int_oo, 5),
                                ValueRanges(-sympy.oo, sympy.oo), ValueRanges(sympy.Float(-1.5), sympy.Float(2.25)),
                                ValueRanges(sympy.Float(0.5), sympy.oo), ValueRanges(sympy.false, sympy.true)],
                         ids=str)
def test_value_ranges_survive(vr):
    from pt2format.exporter._symbols import value_range
    from pt2format.loaders._symbols import value_ranges
    back = value_ranges(value_range(vr), integer=not vr.is_float)
    if vr.is_bool:
        assert (back.lower, back.upper) == (0, 1)
    else:
        assert back == vr and type(back.lower) is type(vr.lower) and type(back.upper) is type(vr.upper)


def test_float_symbol_hint_and_range_survive():
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    env = ShapeEnv()
    f0 = sympy.Symbol("zf0", real=True)
    env.var_to_range[f0] = ValueRanges(sympy.Float(-2.0), sympy.Float(8.5))
    env.backed_var_to_val[f0] = sympy.Float(2.5)
    table = SymbolTable(env)
    e = F.FloorToInt(2 * f0)
    idx = table.expr(e)
    prog = m.Program(symbols=table.symbols, sym_exprs=table.exprs)
    (row,) = prog.symbols
    assert (row.kind, row.has_hint, row.float_hint) == (m.SymbolKind.FLOAT, True, 2.5)
    shape = ShapeBuilder(prog)
    (sym,) = shape.symbols
    assert shape.shape_env.var_to_range[sym] == env.var_to_range[f0]
    assert shape.shape_env.backed_var_to_val[sym] == env.backed_var_to_val[f0]
    assert shape.expr(idx) == e.xreplace({f0: sym})
    assert shape.hint(idx) == int(e.xreplace({f0: sympy.Float(2.5)}))  # torch's own value


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


class _FloatFromData(torch.nn.Module):
    """A program whose float is dynamic: `.item()` of a float tensor is an unbacked float symbol."""

    def forward(self, x):
        v = x.sum().item()
        return x * v + v


def test_dynamic_float_program_round_trips(tmp_path):
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        ep = torch.export.export(_FloatFromData(), (torch.randn(3),))
    path = tmp_path / "float.pt2f"
    pt2format.save(ep, path)
    back = pt2format.load(path)
    # Same ranges as torch's own, float infinities included (torch's own serializer turns them into int_oo).
    assert {str(k): v for k, v in back.range_constraints.items()} == \
        {str(k): v for k, v in ep.range_constraints.items()}
    for k, v in back.range_constraints.items():
        want = next(w for s, w in ep.range_constraints.items() if str(s) == str(k))
        assert type(v.lower) is type(want.lower) and type(v.upper) is type(want.upper)
        assert v.is_float == want.is_float
    (sym,) = [s for s in back.range_constraints]
    (orig,) = [s for s in ep.range_constraints]
    assert sym.assumptions0 == orig.assumptions0
    for x in (torch.randn(3), torch.tensor([1.5, -2.0, 1e3])):  # other values of the float, same shape
        torch.testing.assert_close(back.module()(x), ep.module()(x))
    pt2format.save(back, tmp_path / "again.pt2f")
    assert (tmp_path / "again.pt2f").read_bytes() == path.read_bytes()
