"""Python's own arithmetic as the reference for the C++ symbolic evaluator (tests/native/test_cpp_reader.py).

Random, type-correct `SymExpr` pools and their values computed with Python
ints, Fractions and floats; 64-bit overflow is an expected error, as the C++
reader evaluates integers in 64 bits.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from pt2format._generated import model as m

INT64 = (-(1 << 63), (1 << 63) - 1)


class Err(Exception):
    """An expected evaluation error; its text must appear in the C++ reader's message."""


def fits(v):
    if isinstance(v, bool) or isinstance(v, float):
        return v
    if isinstance(v, Fraction):
        if not (INT64[0] <= v.numerator <= INT64[1] and v.denominator <= INT64[1]):
            raise Err("overflow")
        return v.numerator if v.denominator == 1 else v
    if not INT64[0] <= v <= INT64[1]:
        raise Err("overflow")
    return v


def py_apply(op, a):
    O = m.SymOp
    if op in (O.ADD, O.MUL):
        acc = a[0]
        for x in a[1:]:
            acc = fits(acc + x if op == O.ADD else acc * x)
        return acc
    if op in (O.FLOOR_DIV, O.PYTHON_MOD) and a[1] == 0:
        raise Err("division by zero")
    table = {
        O.FLOOR_DIV: lambda: a[0] // a[1], O.PYTHON_MOD: lambda: a[0] % a[1], O.MIN: lambda: min(a),
        O.MAX: lambda: max(a), O.EQ: lambda: a[0] == a[1], O.NE: lambda: a[0] != a[1], O.LT: lambda: a[0] < a[1],
        O.LE: lambda: a[0] <= a[1], O.GT: lambda: a[0] > a[1], O.GE: lambda: a[0] >= a[1], O.ABS: lambda: abs(a[0]),
        O.POW_BY_NATURAL: lambda: a[0] ** a[1],
        O.BITWISE_AND: lambda: a[0] & a[1], O.BITWISE_OR: lambda: a[0] | a[1], O.BITWISE_XOR: lambda: a[0] ^ a[1],
        O.AND: lambda: all(a), O.OR: lambda: any(a), O.NOT: lambda: not a[0], O.TO_FLOAT: lambda: float(a[0]),
        O.INT_TRUE_DIV: lambda: a[0] / a[1], O.FLOOR_TO_INT: lambda: math.floor(a[0]),
        O.CEIL_TO_INT: lambda: math.ceil(a[0]), O.ROUND_TO_INT: lambda: round(a[0]), O.TRUNC_TO_INT: lambda: int(a[0]),
        O.POW: lambda: Fraction(a[0]) ** a[1],
    }
    try:
        return fits(table[op]())
    except ZeroDivisionError:
        raise Err("division by zero") from None


def random_pool(rng):
    """A type-correct random expression pool over symbols s0, s1, s2, with its Python values."""
    O = m.SymOp
    exprs, kinds = [], []  # kinds: "int", "bool", "float"
    for s in range(3):
        exprs.append(m.SymExpr(kind=int(m.SymExprKind.SYMBOL), symbol=s))
        kinds.append("int")
    for v in (0, 1, -3, 7, 1 << 40, -(1 << 62)):
        exprs.append(m.SymExpr(kind=int(m.SymExprKind.INTEGER), int_value=v))
        kinds.append("int")
    int_ops = [O.ADD, O.MUL, O.FLOOR_DIV, O.PYTHON_MOD, O.MIN, O.MAX, O.ABS, O.POW_BY_NATURAL,
               O.BITWISE_AND, O.BITWISE_OR, O.BITWISE_XOR, O.EQ, O.LT, O.GE, O.NE, O.TO_FLOAT, O.INT_TRUE_DIV, O.POW]
    for _ in range(60):
        ints = [i for i, k in enumerate(kinds) if k == "int"]
        bools = [i for i, k in enumerate(kinds) if k == "bool"]
        floats = [i for i, k in enumerate(kinds) if k == "float"]
        r = rng.random()
        if r < 0.12 and bools:
            op = rng.choice([O.AND, O.OR, O.NOT, O.PIECEWISE])
            if op == O.NOT:
                args, kind = [rng.choice(bools)], "bool"
            elif op == O.PIECEWISE:
                args, kind = [rng.choice(ints), rng.choice(bools), rng.choice(ints), rng.choice(bools)], "int"
            else:
                args, kind = rng.sample(bools, min(2, len(bools))), "bool"
        elif r < 0.2 and floats:
            op = rng.choice([O.FLOOR_TO_INT, O.CEIL_TO_INT, O.ROUND_TO_INT, O.TRUNC_TO_INT])
            args, kind = [rng.choice(floats)], "int"
        else:
            op = rng.choice(int_ops)
            n = {O.ABS: 1, O.TO_FLOAT: 1, O.ADD: rng.randint(2, 3), O.MUL: 2, O.MIN: 3, O.MAX: 2}.get(op, 2)
            args = [rng.choice(ints) for _ in range(n)]
            if op in (O.POW_BY_NATURAL, O.POW):
                exps = [i for i in ints if exprs[i].kind == m.SymExprKind.INTEGER and abs(exprs[i].int_value) < 8]
                args[1] = rng.choice(exps)
                if op == O.POW_BY_NATURAL and exprs[args[1]].int_value < 0:
                    args[1] = 4  # the constant 1
            kind = {O.EQ: "bool", O.LT: "bool", O.GE: "bool", O.NE: "bool",
                    O.TO_FLOAT: "float", O.INT_TRUE_DIV: "float", O.POW: "rational"}.get(op, "int")
        exprs.append(m.SymExpr(kind=int(m.SymExprKind.APPLY), op=int(op), args=args))
        kinds.append(kind)
    return exprs


def py_eval(exprs, symbols):
    vals = []
    for e in exprs:
        try:
            if e.kind == m.SymExprKind.SYMBOL:
                vals.append(symbols[e.symbol])
            elif e.kind == m.SymExprKind.INTEGER:
                vals.append(e.int_value)
            elif e.op == m.SymOp.PIECEWISE:
                for value, cond in zip(e.args[::2], e.args[1::2]):
                    if isinstance(vals[cond], Err):
                        raise vals[cond]
                    if vals[cond]:
                        if isinstance(vals[value], Err):
                            raise vals[value]
                        vals.append(vals[value])
                        break
                else:
                    raise Err("no condition holds")
            else:
                args = [vals[i] for i in e.args]
                for x in args:
                    if isinstance(x, Err):
                        raise x
                if e.op == m.SymOp.INT_TRUE_DIV and args[1] == 0:
                    raise Err("division by zero")
                if e.op == m.SymOp.POW and args[0] == 0 and args[1] < 0:
                    raise Err("zero to a negative power")
                vals.append(py_apply(e.op, args))
        except Err as err:
            vals.append(err)
    return vals


def parse_cpp_value(text):
    if text in ("True", "False"):
        return text == "True"
    if "/" in text:
        return Fraction(text)
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text)


# ---------------------------------------------------------------------------
# A corpus of expressions built with torch's own sympy functions, and torch's
# own values for them (sympy substitution evaluates torch's functions).

def torch_corpus():
    """(expressions, symbols by name, assignments): what both evaluators are held to."""
    import sympy
    from torch.utils._sympy import functions as F

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    s1 = sympy.Symbol("s1", integer=True, positive=True)
    u0 = sympy.Symbol("u0", integer=True)
    f0 = sympy.Symbol("zf0", real=True)
    x, y = F.ToFloat(s0), F.ToFloat(u0)
    exprs = [
        2 * s0 + 1, s0 * s1 - 3, s0 - 5 * u0, F.FloorDiv(u0, 4), F.FloorDiv(u0 - 7, s1), F.PythonMod(u0, 3),
        F.PythonMod(u0, -s1), F.Mod(s0, 8), F.CleanDiv(4 * s0, 4), F.Min(s0, s1, u0), F.Max(s0, 2 * s1, 7),
        sympy.Eq(s0, 2 * s1), sympy.Ne(s0, 3), sympy.Lt(u0, s1), sympy.Le(u0, 16), sympy.Gt(u0, 2), sympy.Ge(s0, 2),
        sympy.And(sympy.Ge(u0, 2), sympy.Le(u0, 16)), sympy.Or(sympy.Eq(s0, 1), sympy.Eq(s1, 1)),
        sympy.Not(sympy.Eq(s0, s1)), F.PowByNatural(s0, 3), F.PowByNatural(u0, s1), F.PowByNatural(2, s1),
        F.FloatPow(x, sympy.Float(0.5)), F.FloatPow(y, sympy.Float(2.0)), F.IntTrueDiv(s0, s1),
        F.IntTrueDiv(u0, s1), F.FloatTrueDiv(x, sympy.Float(3.0)), F.TruncToInt(F.IntTrueDiv(u0, s1)),
        F.FloorToInt(F.IntTrueDiv(u0, s1)), F.CeilToInt(F.IntTrueDiv(u0, s1)), F.RoundToInt(F.IntTrueDiv(u0, 4)),
        F.RoundDecimal(F.IntTrueDiv(u0, 7), 2), F.TruncToFloat(F.IntTrueDiv(u0, s1)), F.Identity(s0 + u0),
        sympy.Abs(u0), sympy.floor(sympy.Rational(1, 3) * u0), sympy.ceiling(sympy.Rational(1, 3) * u0),
        F.BitwiseFn_bitwise_and(s0, s1), F.BitwiseFn_bitwise_or(u0, s1), F.BitwiseFn_bitwise_xor(u0, s0),
        sympy.Rational(3, 7) * s0, s0 ** -1, sympy.Pow(s0, sympy.Rational(1, 2)), s0 ** 2 * s1 ** 3,
        sympy.Piecewise((s0, sympy.Gt(u0, 4)), (s1, True)), F.Where(sympy.Gt(u0, 0), s0, s1),
        F.ModularIndexing(u0, 3, 5), F.ModularIndexing(s0 * s1, s1, 4), F.LShift(u0, s1), F.RShift(u0, 2),
        F.CeilDiv(u0, 4), F.IsNonOverlappingAndDenseIndicator(s0, s1, s1, 1),
        F.IsNonOverlappingAndDenseIndicator(s0, s1, 1, s0), F.OpaqueUnaryFn_log2(x), F.OpaqueUnaryFn_log2(y),
        F.OpaqueUnaryFn_sqrt(y), F.OpaqueUnaryFn_exp(x), F.OpaqueUnaryFn_log(y), F.OpaqueUnaryFn_sin(y),
        F.OpaqueUnaryFn_cos(y), F.OpaqueUnaryFn_tan(y), F.OpaqueUnaryFn_asin(F.FloatTrueDiv(y, sympy.Float(10.0))),
        F.OpaqueUnaryFn_acos(F.FloatTrueDiv(y, sympy.Float(10.0))), F.OpaqueUnaryFn_atan(y),
        F.OpaqueUnaryFn_sinh(y), F.OpaqueUnaryFn_cosh(y), F.OpaqueUnaryFn_tanh(y), F.OpaqueUnaryFn_asinh(y),
        2 * f0 + 1, F.FloorToInt(f0 * 3), F.FloatPow(f0, sympy.Float(2.0)), sympy.Gt(f0, 0),
        F.PowByNatural(u0, 40), 3 * u0 ** 5 * s1 ** 4, sympy.Pow(s0, sympy.Rational(1, 10 ** 18)),
        F.RoundDecimal(u0, -(10 ** 18)), F.RoundDecimal(u0, -1), F.RoundDecimal(u0, 2),
    ]
    assignments = [
        {"s0": 5, "s1": 3, "u0": -7, "zf0": 2.5}, {"s0": 1, "s1": 7, "u0": 0, "zf0": -0.75},
        {"s0": 12, "s1": 12, "u0": 9, "zf0": 1e10}, {"s0": 3, "s1": 1, "u0": 40, "zf0": 0.1},
        {"s0": 1 << 20, "s1": 2, "u0": -(1 << 30), "zf0": -3.0},
    ]
    return exprs, {str(s): s for s in (s0, s1, u0, f0)}, assignments


def torch_value(expr, symbols, values):
    """torch's own value of `expr` at `values` (sympy substitution), as int, Fraction, float or bool.

    Err("overflow") when an integer leaves 64 bits; Err("") when torch itself
    fails or gives no number.
    """
    import sympy

    try:
        v = expr.xreplace({symbols[k]: (sympy.Float(x) if isinstance(x, float) else sympy.Integer(x))
                           for k, x in values.items() if k in symbols})
    except (ValueError, ZeroDivisionError, TypeError, OverflowError) as e:
        return Err("")
    from torch.utils._sympy.functions import Identity

    while isinstance(v, Identity):
        v = v.args[0]
    if v is sympy.true or v is sympy.false:
        return bool(v)
    if v.is_number and v.is_real and not isinstance(v, (sympy.Rational, sympy.Float)):
        return float(v)  # an exact irrational such as sqrt(5): its double, which float evaluation gives
    if isinstance(v, sympy.Integer):
        return int(v) if INT64[0] <= int(v) <= INT64[1] else Err("overflow")
    if isinstance(v, sympy.Rational):
        f = Fraction(int(v.p), int(v.q))
        return f if INT64[0] <= f.numerator <= INT64[1] and f.denominator <= INT64[1] else Err("overflow")
    if isinstance(v, sympy.Float):
        return float(v)
    return Err("")


def python_value(expr, values):
    """The Python evaluator's value of `expr` (its own pool), or Err."""
    from pt2format._symeval import UNKNOWN, EvalFailure, evaluate_pool
    from pt2format.errors import LimitError
    from pt2format.exporter._symbols import SymbolTable

    table = SymbolTable(None)
    root = table.expr(expr)
    hints = [values[s.name] for s in table.symbols]
    try:
        vals = evaluate_pool(table.exprs, hints)
    except LimitError as e:
        return Err("overflow" if "overflow" in str(e) else str(e))
    v = vals[root]
    assert v is not UNKNOWN
    return Err(v.reason) if isinstance(v, EvalFailure) else v


def same(got, want) -> bool:
    if isinstance(want, Err):
        return isinstance(got, Err) and str(want) in str(got)
    if isinstance(got, Err) or isinstance(got, bool) != isinstance(want, bool):
        return False
    if isinstance(want, float):
        # The sign of a zero is not compared: sympy's Float has no negative zero,
        # so torch's own value of round(-7.0, -20) is 0.0 where Python's is -0.0.
        return isinstance(got, float) and (got == want or (math.isnan(got) and math.isnan(want)))
    return type(got) is type(want) and got == want
