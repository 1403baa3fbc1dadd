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
        O.POW_BY_NATURAL: lambda: a[0] ** a[1], O.IS_MULTIPLE: lambda: (a[0] == 0) if a[1] == 0 else a[0] % a[1] == 0,
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
    int_ops = [O.ADD, O.MUL, O.FLOOR_DIV, O.PYTHON_MOD, O.MIN, O.MAX, O.ABS, O.POW_BY_NATURAL, O.IS_MULTIPLE,
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
            kind = {O.EQ: "bool", O.LT: "bool", O.GE: "bool", O.NE: "bool", O.IS_MULTIPLE: "bool",
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
