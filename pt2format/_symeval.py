"""Bounded numeric evaluation of a program's sym_exprs pool: the normative semantics of SPEC.md, in Python.

This is the reference the C++ evaluator (`loaders/cpp/src/sym_*.cc`) follows
op for op, and the guard the Python loader runs before it hands anything to
sympy: sympy evaluates constant sub-expressions eagerly and with unbounded
integers, so a file holding `2 ** (1 << 60)` or a chain of squarings would
hang it. Here every integer (constants, hints, partial and final results,
numerators and denominators) must fit in 64 bits, the structural degree of
an expression is capped, and the whole pass has a step budget; breaking any
of them is a `LimitError` naming the expression. Needs no torch.

Values are Python `bool`, `int`, `fractions.Fraction` (exact rationals, as
sympy keeps them) and `float` (IEEE-754 doubles, Python `math` semantics).
A node whose value depends on a symbol without a value is UNKNOWN; a node
whose evaluation fails for a domain reason (division by zero, math domain
error, ...) holds an `EvalFailure`, which propagates to its users.
"""

from __future__ import annotations

import math
from fractions import Fraction

from pt2format._generated import limits as _limits
from pt2format._generated.model import SymExprKind as K
from pt2format._generated.model import SymOp as O
from pt2format.errors import LimitError

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Largest structural degree of an expression (SPEC.md, "Bounds"): any
#: polynomial of higher degree overflows 64 bits for every symbol value >= 2.
MAX_SYM_DEGREE = _limits.MAX_SYM_DEGREE
#: Evaluation budget of one pool: the sum over nodes of 1 + operand count.
MAX_SYM_EVAL_STEPS = _limits.MAX_SYM_EVAL_STEPS
#: Largest expanded size of an expression (SPEC.md, "Bounds"): its node count
#: as a tree, every shared operand counted each time it is used.
MAX_SYM_EXPANDED_SIZE = _limits.MAX_SYM_EXPANDED_SIZE
#: The file's budget on expanded size (SPEC.md §11.6, "Expanded size of a file"): every pool node and
#: every use of one may be SYM_FREE_SIZE large for free (the largest expression of any real program
#: measured is 25, `python -m tests.security.sym_census`: a real program spends nothing, however large);
#: the excess, summed over every node and use of a file, is at most MAX_SYM_FILE_EXCESS.
SYM_FREE_SIZE = _limits.SYM_FREE_SIZE
MAX_SYM_FILE_EXCESS = _limits.MAX_SYM_FILE_EXCESS


_N = None  # no upper bound
#: Operand count of each op: (least, most or None, must be even). Ops not
#: listed take one or more operands.
OP_ARITY: dict[int, tuple] = {
    **{op: (2, 2, False) for op in (O.POW, O.FLOOR_DIV, O.PYTHON_MOD, O.MOD, O.CLEAN_DIV, O.EQ, O.NE, O.LT, O.LE,
                                    O.GT, O.GE, O.POW_BY_NATURAL, O.FLOAT_POW, O.INT_TRUE_DIV, O.FLOAT_TRUE_DIV,
                                    O.ROUND_DECIMAL, O.BITWISE_AND, O.BITWISE_OR, O.BITWISE_XOR, O.IS_MULTIPLE)},
    **{op: (1, 1, False) for op in (O.NOT, O.TRUNC_TO_INT, O.TRUNC_TO_FLOAT, O.FLOOR_TO_INT, O.CEIL_TO_INT,
                                    O.ROUND_TO_INT, O.TO_FLOAT, O.IDENTITY, O.ABS, O.CEILING, O.FLOOR, O.LOG2,
                                    O.SQRT, O.EXP, O.LOG, O.SIN, O.COS, O.TAN, O.ASIN, O.ACOS, O.ATAN, O.SINH,
                                    O.COSH, O.TANH, O.ASINH)},
    O.WHERE: (3, 3, False), O.MODULAR_INDEXING: (3, 3, False),
    O.PIECEWISE: (2, _N, True), O.IS_NON_OVERLAPPING_AND_DENSE: (2, _N, True),
}


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class EvalFailure:
    """A domain error of one node ("FLOOR_DIV: division by zero"), carried to its users."""

    __slots__ = ("index", "reason")

    def __init__(self, index: int, reason: str):
        self.index, self.reason = index, reason

    def __repr__(self) -> str:
        return f"sym_exprs[{self.index}]: {self.reason}"


class _Fail(Exception):
    pass


class _Overflow(Exception):
    pass


def _fit(v):
    if isinstance(v, Fraction):
        if not (INT64_MIN <= v.numerator <= INT64_MAX and v.denominator <= INT64_MAX):
            raise _Overflow
        return v.numerator if v.denominator == 1 else v
    if not INT64_MIN <= v <= INT64_MAX:
        raise _Overflow
    return v


def _num(v, w):
    if isinstance(v, bool):
        raise _Fail(f"{w}: boolean operand where a number is needed")
    return v


def _int(v, w):
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Fail(f"{w}: integer operand expected")
    return v


def _bool(v, w):
    if not isinstance(v, bool):
        raise _Fail(f"{w}: boolean operand expected")
    return v


def _arity(a, lo, hi, w):
    if not lo <= len(a) <= hi:
        raise _Fail(f"{w}: wrong number of arguments ({len(a)})")


def _exact(v) -> bool:
    return isinstance(v, (int, Fraction)) and not isinstance(v, bool)


def _power_exact(base: Fraction, e: int, w):
    if e < 0 and base == 0:
        raise _Fail(f"{w}: zero to a negative power")
    if abs(e) > 64 and not (base.denominator == 1 and abs(base.numerator) <= 1):
        raise _Overflow  # |base| != 0, 1 and |e| > 64: cannot fit, do not compute
    return _fit(Fraction(base) ** e)


def _exact_root(v: int, q: int) -> int:
    if v < 0 or q <= 0:
        return -1
    if v < 2 or q == 1:
        return v
    if q > 63:
        return -1  # c ** q >= 2 ** 64 > v for every c >= 2; never compute it
    r = round(v ** (1.0 / q))
    for c in range(max(0, r - 1), r + 2):
        if c ** q == v:
            return c
    return -1


def _to_float(v) -> float:
    return float(int(v)) if isinstance(v, bool) else float(v)


def _cmp_key(v):
    return int(v) if isinstance(v, bool) else v


_UNARY_MATH = {O.SQRT: math.sqrt, O.EXP: math.exp, O.LOG: math.log, O.LOG2: math.log2, O.SIN: math.sin,
               O.COS: math.cos, O.TAN: math.tan, O.ASIN: math.asin, O.ACOS: math.acos, O.ATAN: math.atan,
               O.SINH: math.sinh, O.COSH: math.cosh, O.TANH: math.tanh, O.ASINH: math.asinh}


def _non_overlapping_and_dense(sizes, strides) -> int:
    """torch's eval_is_non_overlapping_and_dense on concrete sizes and strides."""
    dim = len(sizes)
    if dim == 1:
        return int(strides[0] == 1 or sizes[0] < 2)
    order = sorted(range(dim), key=lambda d: (strides[d], d))
    expected = 1
    for d in order:
        if sizes[d] == 1:
            continue
        if strides[d] != expected:
            return 0
        expected = _fit(expected * sizes[d])
    return 1


def apply_op(op: int, a: list, w: str):
    """One operation on evaluated operands (no UNKNOWN, no failure); raises _Fail or _Overflow."""
    if op in (O.ADD, O.MUL):
        _arity(a, 1, 1 << 62, w)
        for v in a:
            _num(v, w)
        if any(isinstance(v, float) for v in a):
            r = _to_float(a[0])
            for v in a[1:]:
                r = r + _to_float(v) if op == O.ADD else r * _to_float(v)
            return r
        r = Fraction(a[0])
        for v in a[1:]:
            r = _fit(r + v if op == O.ADD else r * v)
            r = Fraction(r)
        return _fit(r)
    if op == O.POW:
        _arity(a, 2, 2, w)
        b, e = _num(a[0], w), _num(a[1], w)
        if _exact(b) and isinstance(e, int):
            return _power_exact(Fraction(b), e, w)
        if isinstance(b, int) and isinstance(e, Fraction):
            root = _exact_root(b, e.denominator)
            if root >= 0:
                return _power_exact(Fraction(root), e.numerator, w)
        fb, fe = _to_float(b), _to_float(e)
        if fb == 0.0 and fe < 0:
            raise _Fail(f"{w}: zero to a negative power")
        try:
            r = math.pow(fb, fe)
        except OverflowError:
            r = math.inf
        except ValueError:
            raise _Fail(f"{w}: math domain error") from None
        return r
    if op in (O.FLOOR_DIV, O.CLEAN_DIV, O.PYTHON_MOD, O.MOD):
        _arity(a, 2, 2, w)
        x, y = _num(a[0], w), _num(a[1], w)
        div = op in (O.FLOOR_DIV, O.CLEAN_DIV)
        if _exact(x) and _exact(y):
            if y == 0:
                raise _Fail(f"{w}: division by zero")
            q = Fraction(x) // Fraction(y)
            return _fit(q) if div else _fit(Fraction(x) - q * Fraction(y))
        if _to_float(y) == 0.0:
            raise _Fail("float division by zero")
        return divmod(_to_float(x), _to_float(y))[0 if div else 1]
    if op in (O.MIN, O.MAX):
        _arity(a, 1, 1 << 62, w)
        best = a[0]
        for v in a[1:]:
            if (_cmp_key(v) < _cmp_key(best)) if op == O.MIN else (_cmp_key(v) > _cmp_key(best)):
                best = v
        return best
    if op in (O.EQ, O.NE, O.LT, O.LE, O.GT, O.GE):
        _arity(a, 2, 2, w)
        x, y = _cmp_key(a[0]), _cmp_key(a[1])
        return {O.EQ: x == y, O.NE: x != y, O.LT: x < y, O.LE: x <= y, O.GT: x > y, O.GE: x >= y}[op]
    if op in (O.AND, O.OR):
        _arity(a, 1, 1 << 62, w)
        vals = [_bool(v, w) for v in a]
        return all(vals) if op == O.AND else any(vals)
    if op == O.NOT:
        _arity(a, 1, 1, w)
        return not _bool(a[0], w)
    if op == O.POW_BY_NATURAL:
        _arity(a, 2, 2, w)
        b, e = _int(a[0], w), _int(a[1], w)
        if e < 0:
            raise _Fail(f"{w}: negative exponent")
        return _power_exact(Fraction(b), e, w)
    if op == O.FLOAT_POW:
        _arity(a, 2, 2, w)
        fb, fe = _to_float(_num(a[0], w)), _to_float(_num(a[1], w))
        if fb == 0.0 and fe < 0:
            raise _Fail(f"{w}: zero to a negative power")
        if fb < 0 and math.isfinite(fe) and fe != math.floor(fe):
            raise _Fail(f"{w}: negative number to a fractional power")
        try:
            return math.pow(fb, fe)
        except OverflowError:
            return math.copysign(math.inf, fb) if fe % 2 == 1 else math.inf
    if op == O.INT_TRUE_DIV:
        _arity(a, 2, 2, w)
        x, y = _int(a[0], w), _int(a[1], w)
        if y == 0:
            raise _Fail(f"{w}: division by zero")
        return x / y
    if op == O.FLOAT_TRUE_DIV:
        _arity(a, 2, 2, w)
        x, y = _to_float(_num(a[0], w)), _to_float(_num(a[1], w))
        if y == 0.0:
            raise _Fail(f"{w}: float division by zero")
        return x / y
    if op in (O.TRUNC_TO_INT, O.FLOOR_TO_INT, O.CEIL_TO_INT, O.ROUND_TO_INT, O.FLOOR, O.CEILING):
        _arity(a, 1, 1, w)
        x = _num(a[0], w)
        if isinstance(x, int):
            return x
        fn = {O.TRUNC_TO_INT: math.trunc, O.ROUND_TO_INT: round, O.CEIL_TO_INT: math.ceil,
              O.CEILING: math.ceil}.get(op, math.floor)
        if isinstance(x, float) and not math.isfinite(x):
            raise _Fail(f"{w}: cannot convert infinity or NaN to an integer")
        return _fit(fn(x))
    if op == O.TRUNC_TO_FLOAT:
        _arity(a, 1, 1, w)
        x = _to_float(_num(a[0], w))
        return float(math.trunc(x)) if math.isfinite(x) else x
    if op == O.ROUND_DECIMAL:
        _arity(a, 2, 2, w)
        x, n = _num(a[0], w), _int(a[1], w)
        return round(_to_float(x), n)  # a float even for an integer operand, as torch's RoundDecimal
    if op == O.TO_FLOAT:
        _arity(a, 1, 1, w)
        return _to_float(_num(a[0], w))
    if op == O.IDENTITY:
        _arity(a, 1, 1, w)
        return a[0]
    if op == O.ABS:
        _arity(a, 1, 1, w)
        x = _num(a[0], w)  # a boolean is not a number (§11.1): ABS(True) fails, as every reader's
        return _fit(abs(x)) if _exact(x) else abs(x)
    if op in (O.BITWISE_AND, O.BITWISE_OR, O.BITWISE_XOR):
        _arity(a, 2, 2, w)
        if isinstance(a[0], bool) and isinstance(a[1], bool):
            x, y = a
        else:
            x, y = (int(v) if isinstance(v, bool) else _int(v, w) for v in a)
        r = x & y if op == O.BITWISE_AND else x | y if op == O.BITWISE_OR else x ^ y
        return r
    if op in _UNARY_MATH:
        _arity(a, 1, 1, w)
        try:
            return _UNARY_MATH[op](_to_float(_num(a[0], w)))
        except ValueError:
            raise _Fail(f"{w}: math domain error") from None
        except OverflowError:
            # torch falls back to sympy, whose exp/sinh/cosh overflow to infinity
            x = _to_float(a[0])
            return -math.inf if op == O.SINH and x < 0 else math.inf
    if op == O.WHERE:
        _arity(a, 3, 3, w)
        return a[1] if _bool(a[0], w) else a[2]
    if op == O.MODULAR_INDEXING:
        _arity(a, 3, 3, w)
        x, d, mod = (_int(v, w) for v in a)
        if d == 0 or mod == 0:
            raise _Fail(f"{w}: division by zero")
        return _fit((x // d) % mod)
    if op == O.IS_NON_OVERLAPPING_AND_DENSE:
        if not a or len(a) % 2:
            raise _Fail(f"{w}: needs sizes and strides of equal length")
        n = len(a) // 2
        vals = [_int(v, w) for v in a]
        return _non_overlapping_and_dense(vals[:n], vals[n:])
    raise _Fail(f"operation {int(op)} is unspecified or unknown to this reader")


_OP_NAMES = {int(o): o.name for o in O}
_SYMBOL, _INTEGER, _RATIONAL, _FLOAT, _BOOLEAN, _APPLY = (int(k) for k in (K.SYMBOL, K.INTEGER, K.RATIONAL, K.FLOAT,
                                                                          K.BOOLEAN, K.APPLY))
_LAZY = frozenset((int(O.PIECEWISE), int(O.WHERE)))
_POWS = frozenset((int(O.POW), int(O.POW_BY_NATURAL)))
_MUL = int(O.MUL)


def _op_name(op: int) -> str:
    return _OP_NAMES.get(op) or f"op {int(op)}"


def expanded_sizes(exprs, *, cap: int = MAX_SYM_EXPANDED_SIZE + 1) -> list:
    """Expanded size of every node (SPEC.md §11.6), saturated at `cap`, in one forward pass.

    A leaf counts 1 and an APPLY 1 plus its operands' sizes, so a shared
    operand counts once per use: the size of the tree a naive walk visits,
    which can be 2^n for a pool of n nodes. Saturating keeps every number
    small. Operands that do not come earlier count 1 (validation refuses them).
    """
    size = [1] * len(exprs)
    for i, e in enumerate(exprs):
        if e.kind == _APPLY and e.args:
            t = 1
            for a in e.args:
                t += size[a] if 0 <= a < i else 1
            size[i] = t if t < cap else cap
    return size


class SymBudget:
    """The expanded size one file spends beyond SYM_FREE_SIZE per pool node and per use (SPEC.md §11.6).

    Code outside the readers (sympy's constructors and printer, torch's
    fake-tensor sizes and guard code) builds each pool node it reaches and
    walks every use as a tree; the per-expression bound caps one walk, not
    their sum. Charging every node (building one copies its operands, so a
    linear chain costs the sum of its prefixes) and every use of a node keeps
    their total work at most SYM_FREE_SIZE per node and use of the file plus
    MAX_SYM_FILE_EXCESS: linear in the file.
    """

    __slots__ = ("spent", "limit")

    def __init__(self, limit: int | None = None):
        self.spent = 0
        self.limit = MAX_SYM_FILE_EXCESS if limit is None else limit

    def charge(self, size: int, path: str) -> None:
        """Counts one node or use of expanded size `size`; LimitError naming `path` when the file's budget is spent."""
        if size > SYM_FREE_SIZE:
            self.spent += size - SYM_FREE_SIZE
            if self.spent > self.limit:
                raise LimitError("symbolic expressions of the file are too large in total", path=path,
                                 expected=f"<= {self.limit} of expanded size beyond {SYM_FREE_SIZE} per pool node "
                                          f"and use", got=f"> {self.limit}")


def evaluate_pool(exprs, symbol_values, *, path: str = "sym_exprs", max_degree: int = MAX_SYM_DEGREE,
                  max_steps: int = MAX_SYM_EVAL_STEPS, max_size: int = MAX_SYM_EXPANDED_SIZE) -> list:
    """Values of every node of `exprs`, in one forward pass.

    `symbol_values[i]` is the value of `Program.symbols[i]`, or UNKNOWN. A
    result entry is a value, UNKNOWN or an EvalFailure. Raises LimitError
    (naming `path[i]`) when a 64-bit, degree, expanded-size or budget limit
    is broken. The
    pool is assumed validated: kinds known, operands earlier.
    """
    n = len(exprs)
    vals: list = [None] * n
    degree = [0] * n
    size = [1] * n
    steps = 0
    for i, e in enumerate(exprs):
        kind = e.kind
        args = e.args or ()
        steps += 1 + len(args)
        if steps > max_steps:
            raise LimitError("symbolic evaluation budget exhausted", path=f"{path}[{i}]",
                             expected=f"<= {max_steps} steps", got=steps)
        if kind == _SYMBOL:
            degree[i] = 1
            vals[i] = symbol_values[e.symbol] if e.symbol < len(symbol_values) else UNKNOWN
            continue
        if kind == _INTEGER:
            vals[i] = e.int_value
            continue
        if kind == _RATIONAL:
            vals[i] = Fraction(e.int_value, e.denominator) if e.denominator > 1 else \
                EvalFailure(i, "RATIONAL denominator must be greater than 1")
            continue
        if kind == _FLOAT:
            vals[i] = float(e.float_value)
            continue
        if kind == _BOOLEAN:
            vals[i] = bool(e.bool_value)
            continue
        if kind == K.POSITIVE_INFINITY:
            vals[i] = math.inf
            continue
        if kind == K.NEGATIVE_INFINITY:
            vals[i] = -math.inf
            continue
        if kind in (K.INT_POSITIVE_INFINITY, K.INT_NEGATIVE_INFINITY):
            vals[i] = EvalFailure(i, "integer infinity is a bound, not a number")
            continue
        if kind != _APPLY:
            vals[i] = EvalFailure(i, f"expression kind {int(kind)} is unspecified or unknown to this reader")
            continue
        if max(args, default=0) >= i and args:
            vals[i] = EvalFailure(i, "operand must come earlier in the pool")
            continue
        op = e.op
        t = 1 + sum(map(size.__getitem__, args))
        if t > max_size:
            raise LimitError("symbolic expression expanded size is too large", path=f"{path}[{i}]",
                             expected=f"<= {max_size}", got=f"> {max_size}")
        size[i] = t
        degree[i] = _degree(op, args, exprs, degree)
        if degree[i] > max_degree:
            raise LimitError("symbolic expression degree is too high", path=f"{path}[{i}]",
                             expected=f"<= {max_degree}", got=degree[i])
        vals[i] = _apply_node(i, op, args, vals, path)
    return vals


def _degree(op, args, exprs, degree) -> int:
    if op == _MUL:
        return sum(map(degree.__getitem__, args))
    if op in _POWS and len(args) == 2:
        base, ex = degree[args[0]], exprs[args[1]]
        if ex.kind == K.INTEGER:
            return base * abs(ex.int_value) if base else 0
        if ex.kind == K.RATIONAL and ex.denominator > 0:
            return base * -(-abs(ex.int_value) // ex.denominator) if base else 0
        return base + degree[args[1]]
    return max(map(degree.__getitem__, args), default=0)


def _apply_node(i, op, args, vals, path):
    w = _op_name(op)
    try:
        if op in _LAZY:
            # Lazy, as sympy is: only the conditions up to the first true one and its value matter.
            pairs = [(args[k], args[k + 1]) for k in range(0, len(args) - 1, 2)] if op == O.PIECEWISE else \
                ([(args[1], args[0]), (args[2], None)] if len(args) == 3 else None)
            if not pairs or (op == O.PIECEWISE and len(args) % 2):
                raise _Fail(f"{w}: wrong number of arguments ({len(args)})")
            for value, cond in pairs:
                c = True if cond is None else vals[cond]
                if c is UNKNOWN or isinstance(c, EvalFailure):
                    return c
                if not isinstance(c, bool):
                    raise _Fail(f"{w}: boolean operand expected")
                if c:
                    return vals[value]
            raise _Fail(f"{w}: no condition holds")
        a = [vals[k] for k in args]
        for v in a:
            if v is UNKNOWN or type(v) is EvalFailure:
                # A failure wins over an unknown operand: it will fail whatever the symbol's value.
                fail = next((x for x in a if type(x) is EvalFailure), None)
                return fail if fail is not None else UNKNOWN
        return apply_op(op, a, w)
    except _Fail as f:
        return EvalFailure(i, str(f))
    except _Overflow:
        raise LimitError(f"{w}: integer overflow (integers are 64-bit)", path=f"{path}[{i}]",
                         expected=f"a value in [{INT64_MIN}, {INT64_MAX}]") from None
    except (ZeroDivisionError, OverflowError, ValueError) as err:
        return EvalFailure(i, f"{w}: {err}")
