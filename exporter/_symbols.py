"""Symbolic shapes -> Program.symbols and the Program.sym_exprs pool, by walking sympy objects.

Expressions are never printed and re-parsed: each sympy node becomes one
`SymExpr` whose operands come earlier in the pool, so readers in any language
evaluate the pool in one forward pass. Identical sub-expressions are stored
once (sympy objects are hashed structurally), and numbering follows first use,
so the same program always gives the same pool.
"""

from __future__ import annotations

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import SymT, symbol_is_type
from torch.utils._sympy import functions as F
from torch.utils._sympy.numbers import IntInfinity, NegativeIntInfinity

from pt2format._generated.model import (
    SymBool,
    SymExpr,
    SymExprKind,
    SymFloat,
    SymInt,
    Symbol,
    SymbolKind,
    SymOp,
    ValueRange,
)
from pt2format.errors import ExportError

from pt2format.vocab.enums import ints as _ints
from pt2format.vocab.symbols import OPAQUE_UNARY

SymExprKind = _ints(SymExprKind)
SymbolKind = _ints(SymbolKind)
SymOp = _ints(SymOp)

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# Exact classes only: CleanDiv subclasses FloorDiv, and each must keep its own op.
_APPLY_OPS: dict[type, int] = {
    sympy.Add: SymOp.ADD,
    sympy.Mul: SymOp.MUL,
    sympy.Pow: SymOp.POW,
    F.FloorDiv: SymOp.FLOOR_DIV,
    F.PythonMod: SymOp.PYTHON_MOD,
    F.Mod: SymOp.MOD,
    F.CleanDiv: SymOp.CLEAN_DIV,
    F.Min: SymOp.MIN,
    F.Max: SymOp.MAX,
    sympy.Min: SymOp.MIN,
    sympy.Max: SymOp.MAX,
    sympy.Eq: SymOp.EQ,
    sympy.Ne: SymOp.NE,
    sympy.StrictLessThan: SymOp.LT,
    sympy.LessThan: SymOp.LE,
    sympy.StrictGreaterThan: SymOp.GT,
    sympy.GreaterThan: SymOp.GE,
    sympy.And: SymOp.AND,
    sympy.Or: SymOp.OR,
    sympy.Not: SymOp.NOT,
    F.PowByNatural: SymOp.POW_BY_NATURAL,
    F.FloatPow: SymOp.FLOAT_POW,
    F.IntTrueDiv: SymOp.INT_TRUE_DIV,
    F.FloatTrueDiv: SymOp.FLOAT_TRUE_DIV,
    F.TruncToInt: SymOp.TRUNC_TO_INT,
    F.TruncToFloat: SymOp.TRUNC_TO_FLOAT,
    F.FloorToInt: SymOp.FLOOR_TO_INT,
    F.CeilToInt: SymOp.CEIL_TO_INT,
    F.RoundToInt: SymOp.ROUND_TO_INT,
    F.RoundDecimal: SymOp.ROUND_DECIMAL,
    F.ToFloat: SymOp.TO_FLOAT,
    F.Identity: SymOp.IDENTITY,
    sympy.Abs: SymOp.ABS,
    sympy.ceiling: SymOp.CEILING,
    sympy.floor: SymOp.FLOOR,
    F.BitwiseFn_bitwise_and: SymOp.BITWISE_AND,
    F.BitwiseFn_bitwise_or: SymOp.BITWISE_OR,
    F.BitwiseFn_bitwise_xor: SymOp.BITWISE_XOR,
    F.Where: SymOp.WHERE,
    F.ModularIndexing: SymOp.MODULAR_INDEXING,
    F.IsNonOverlappingAndDenseIndicator: SymOp.IS_NON_OVERLAPPING_AND_DENSE,
}
# torch's OpaqueUnaryFn_<name> classes (float math on one operand), by handler name.
for _name, _op in OPAQUE_UNARY.items():
    _APPLY_OPS[getattr(F, "OpaqueUnaryFn_" + _name)] = _op


def _apply_op(e) -> int | None:
    op = _APPLY_OPS.get(type(e))
    if op is None and getattr(type(e), "_torch_unpickler", None) is F.make_opaque_unary_fn:
        op = OPAQUE_UNARY.get(getattr(type(e), "_torch_handler_name", None))
    return op


def _checked_int(v, what: str) -> int:
    v = int(v)
    if not INT64_MIN <= v <= INT64_MAX:
        raise ExportError(f"{what} {v} does not fit in 64 bits", expected="a 64-bit integer", got=v)
    return v


def _infinite(v) -> bool:
    return v is None or v in (sympy.oo, -sympy.oo) or isinstance(v, (IntInfinity, NegativeIntInfinity))


def value_range(vr, *, is_float: bool | None = None) -> ValueRange:
    """torch ValueRanges -> ValueRange; a bounded side sets `has_*` (integer bounds rounded inward, as torch does).

    Float ranges keep their bounds as doubles; integer and boolean ones as
    64-bit integers. An infinite side (`oo`, `int_oo`) is simply not present:
    which infinity it was follows from the value's kind (SPEC.md).
    """
    out = ValueRange()
    if is_float is None:
        is_float = bool(getattr(vr, "is_float", False))
    lo, hi = vr.lower, vr.upper
    if not _infinite(lo):
        out.has_lower = True
        if is_float:
            out.float_lower = _checked_float(lo, "range lower bound")
        else:
            out.lower = int(bool(lo)) if lo in (sympy.true, sympy.false) else \
                _checked_int(sympy.ceiling(lo), "range lower bound")
    if not _infinite(hi):
        out.has_upper = True
        if is_float:
            out.float_upper = _checked_float(hi, "range upper bound")
        else:
            out.upper = int(bool(hi)) if hi in (sympy.true, sympy.false) else \
                _checked_int(sympy.floor(hi), "range upper bound")
    return out


def _checked_float(v, what: str) -> float:
    f = float(v)
    if f != f or f in (float("inf"), float("-inf")):
        raise ExportError(f"{what} {v} is not a finite float", expected="a finite float", got=str(v))
    return f


class SymbolTable:
    """Collects the symbols and expression pool of one program."""

    def __init__(self, shape_env=None, guard_only=None):
        self.shape_env = shape_env
        # symbol -> (range, hint) of symbols only input guards read, kept out of a loaded program's
        # ShapeEnv by pt2format's loader (loaders/_guards.py) and written back from here
        self.guard_only = guard_only or {}
        self.symbols: list[Symbol] = []
        self.exprs: list[SymExpr] = []
        self._symbol_index: dict[sympy.Symbol, int] = {}
        self._expr_index: dict[tuple, int] = {}

    # -- symbols -----------------------------------------------------------
    def symbol(self, s: sympy.Symbol) -> int:
        idx = self._symbol_index.get(s)
        if idx is not None:
            return idx
        if s.is_integer:
            kind = SymbolKind.INT
        elif s.is_Boolean:
            kind = SymbolKind.BOOL
        else:
            kind = SymbolKind.FLOAT
        row = Symbol(name=s.name, kind=kind, positive=bool(s.is_positive))
        is_float = kind == SymbolKind.FLOAT
        env = self.shape_env
        if env is not None or s in self.guard_only:
            vr, hint = self.guard_only.get(s, (None, None))
            vr = env.var_to_range.get(s, vr) if env is not None else vr
            if vr is not None:
                row.range = value_range(vr, is_float=is_float)
            hint = env.backed_var_to_val.get(s, hint) if env is not None else hint
            if hint is not None and not symbol_is_type(s, (SymT.UNBACKED_INT, SymT.UNBACKED_FLOAT)):
                if is_float:
                    if not isinstance(hint, (sympy.Float, sympy.Rational)):
                        raise ExportError(f"symbol {s.name} has a non-numeric hint", expected="a float",
                                          got=str(hint))
                    row.float_hint = float(hint)
                else:
                    if not isinstance(hint, sympy.Integer):
                        raise ExportError(f"symbol {s.name} has a non-integer hint", expected="an integer",
                                          got=str(hint))
                    row.hint = _checked_int(hint, f"hint of symbol {s.name}")
                row.has_hint = True
        if row.range is None:
            row.range = ValueRange()  # unbounded
        idx = len(self.symbols)
        self.symbols.append(row)
        self._symbol_index[s] = idx
        return idx

    # -- expressions -------------------------------------------------------
    def expr(self, e) -> int:
        """Index of `e` in the pool, adding it (operands first) when new."""
        if isinstance(e, bool):
            e = sympy.true if e else sympy.false
        elif isinstance(e, int):
            e = sympy.Integer(e)
        key = (type(e), e)
        idx = self._expr_index.get(key)
        if idx is not None:
            return idx
        node = self._node(e)
        idx = len(self.exprs)
        self.exprs.append(node)
        self._expr_index[key] = idx
        return idx

    def _node(self, e) -> SymExpr:
        if isinstance(e, sympy.Symbol):
            return SymExpr(kind=SymExprKind.SYMBOL, symbol=self.symbol(e))
        if e is sympy.true or e is sympy.false:
            return SymExpr(kind=SymExprKind.BOOLEAN, bool_value=bool(e))
        if isinstance(e, IntInfinity):
            return SymExpr(kind=SymExprKind.INT_POSITIVE_INFINITY)
        if isinstance(e, NegativeIntInfinity):
            return SymExpr(kind=SymExprKind.INT_NEGATIVE_INFINITY)
        if e is sympy.oo:
            return SymExpr(kind=SymExprKind.POSITIVE_INFINITY)
        if e is -sympy.oo:
            return SymExpr(kind=SymExprKind.NEGATIVE_INFINITY)
        if isinstance(e, sympy.Integer):
            return SymExpr(kind=SymExprKind.INTEGER, int_value=_checked_int(e, "integer constant"))
        if isinstance(e, sympy.Rational):
            return SymExpr(kind=SymExprKind.RATIONAL, int_value=_checked_int(e.p, "numerator"),
                           denominator=_checked_int(e.q, "denominator"))
        if isinstance(e, sympy.Float):
            return SymExpr(kind=SymExprKind.FLOAT, float_value=float(e))
        if isinstance(e, sympy.Piecewise):
            args = []
            for pair in e.args:  # ExprCondPair(expr, cond)
                args.append(self.expr(pair.args[0]))
                args.append(self.expr(pair.args[1]))
            return SymExpr(kind=SymExprKind.APPLY, op=SymOp.PIECEWISE, args=args)
        op = _apply_op(e)
        if op is None:
            raise ExportError(f"symbolic expression {type(e).__name__} has no structured form",
                              expected="an operation listed in SymOp", got=type(e).__name__)
        return SymExpr(kind=SymExprKind.APPLY, op=op, args=[self.expr(a) for a in e.args])

    # -- values ------------------------------------------------------------
    def sym_int(self, v) -> SymInt:
        if type(v) is int and INT64_MIN <= v <= INT64_MAX:  # most sizes and strides: one test, no sympy
            return SymInt(expr=-1, value=v)
        if isinstance(v, torch.SymInt):
            e = v.node.expr
            if isinstance(e, sympy.Integer):
                return SymInt(expr=-1, value=_checked_int(e, "integer"))
            return SymInt(expr=self.expr(e), value=0)
        if isinstance(v, int) and not isinstance(v, bool):
            return SymInt(expr=-1, value=_checked_int(v, "integer"))
        raise ExportError("expected an int or SymInt", expected="int", got=type(v).__name__)

    def sym_float(self, v) -> SymFloat:
        if isinstance(v, torch.SymFloat):
            e = v.node.expr
            if isinstance(e, sympy.Float):
                return SymFloat(expr=-1, value=float(e))
            return SymFloat(expr=self.expr(e), value=0.0)
        if isinstance(v, float):
            return SymFloat(expr=-1, value=v)
        raise ExportError("expected a float or SymFloat", expected="float", got=type(v).__name__)

    def sym_bool(self, v) -> SymBool:
        if isinstance(v, torch.SymBool):
            e = v.node.expr
            if e is sympy.true or e is sympy.false:
                return SymBool(expr=-1, value=bool(e))
            return SymBool(expr=self.expr(e), value=False)
        if isinstance(v, bool):
            return SymBool(expr=-1, value=v)
        raise ExportError("expected a bool or SymBool", expected="bool", got=type(v).__name__)
