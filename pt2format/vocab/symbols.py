"""Symbolic-shape operators whose sympy class torch generates by name (`OpaqueUnaryFn_<name>`), and their `SymOp`."""

from __future__ import annotations

from pt2format._generated.model import SymOp as _SymOp

from .enums import ints as _ints

SymOp = _ints(_SymOp)

# LShift, RShift and CeilDiv never survive construction (they become Mul/FloorDiv/
# CleanDiv with PowByNatural), so they need no op of their own.
OPAQUE_UNARY = {
    "log2": SymOp.LOG2, "sqrt": SymOp.SQRT, "exp": SymOp.EXP, "log": SymOp.LOG, "sin": SymOp.SIN,
    "cos": SymOp.COS, "tan": SymOp.TAN, "asin": SymOp.ASIN, "acos": SymOp.ACOS, "atan": SymOp.ATAN,
    "sinh": SymOp.SINH, "cosh": SymOp.COSH, "tanh": SymOp.TANH, "asinh": SymOp.ASINH,
}
