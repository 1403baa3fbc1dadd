"""Program.symbols and the sym_exprs pool -> a ShapeEnv, sympy expressions and SymInt/SymFloat/SymBool values.

Expressions are built from the structured pool with sympy and
torch.utils._sympy.functions constructors; no string is ever parsed. Each
symbol is created once, with its range and hint, and each pool entry is built
at most once (on first use). Hints of compound expressions come from the
bounded evaluator (`pt2format._symeval`), which runs over the whole pool
first so that no file can make sympy compute without bound.
"""

from __future__ import annotations

import threading
from fractions import Fraction

import torch

from pt2format._generated.model import SymExprKind, SymbolKind, SymOp
from pt2format._symeval import UNKNOWN, EvalFailure, evaluate_pool
from pt2format.errors import LoadError
from pt2format.vocab.symbols import OPAQUE_UNARY

from ._names import check_identifier

_NARY = _FIXED = None
_symbolic_lock = threading.Lock()


def _symbolic() -> None:
    """Import sympy and torch's symbolic-shape machinery (a second or more, cold) when a program needs them.

    A static program has no symbol, range or symbolic value: loading one imports none of this.
    """
    global sympy, ShapeEnv, SymNode, SymT, ValueRangesSLoc, symbol_is_type, F, CapturedTraceback, int_oo
    global ValueRanges, _NARY, _FIXED
    if _FIXED is not None:
        return
    with _symbolic_lock:
        if _FIXED is None:
            _NARY, _FIXED = _tables()


def _tables():
    global sympy, ShapeEnv, SymNode, SymT, ValueRangesSLoc, symbol_is_type, F, CapturedTraceback, int_oo
    global ValueRanges
    import sympy
    from torch.fx.experimental.symbolic_shapes import ShapeEnv, SymNode, SymT, ValueRangesSLoc, symbol_is_type
    from torch.utils._sympy import functions as F
    from torch.utils._traceback import CapturedTraceback
    from torch.utils._sympy.numbers import int_oo
    from torch.utils._sympy.value_ranges import ValueRanges

    nary = {
        SymOp.ADD: sympy.Add, SymOp.MUL: sympy.Mul, SymOp.MIN: F.Min, SymOp.MAX: F.Max,
        SymOp.AND: sympy.And, SymOp.OR: sympy.Or,
    }
    fixed = {  # op -> (constructor, number of operands)
        SymOp.POW: (sympy.Pow, 2), SymOp.FLOOR_DIV: (F.FloorDiv, 2), SymOp.PYTHON_MOD: (F.PythonMod, 2),
        SymOp.MOD: (F.Mod, 2), SymOp.CLEAN_DIV: (F.CleanDiv, 2), SymOp.EQ: (sympy.Eq, 2), SymOp.NE: (sympy.Ne, 2),
        SymOp.LT: (sympy.Lt, 2), SymOp.LE: (sympy.Le, 2), SymOp.GT: (sympy.Gt, 2), SymOp.GE: (sympy.Ge, 2),
        SymOp.NOT: (sympy.Not, 1), SymOp.POW_BY_NATURAL: (F.PowByNatural, 2), SymOp.FLOAT_POW: (F.FloatPow, 2),
        SymOp.INT_TRUE_DIV: (F.IntTrueDiv, 2), SymOp.FLOAT_TRUE_DIV: (F.FloatTrueDiv, 2),
        SymOp.TRUNC_TO_INT: (F.TruncToInt, 1), SymOp.TRUNC_TO_FLOAT: (F.TruncToFloat, 1),
        SymOp.FLOOR_TO_INT: (F.FloorToInt, 1), SymOp.CEIL_TO_INT: (F.CeilToInt, 1),
        SymOp.ROUND_TO_INT: (F.RoundToInt, 1), SymOp.ROUND_DECIMAL: (F.RoundDecimal, 2),
        SymOp.TO_FLOAT: (F.ToFloat, 1), SymOp.IDENTITY: (F.Identity, 1), SymOp.ABS: (sympy.Abs, 1),
        SymOp.CEILING: (sympy.ceiling, 1), SymOp.FLOOR: (sympy.floor, 1),
        SymOp.BITWISE_AND: (F.BitwiseFn_bitwise_and, 2), SymOp.BITWISE_OR: (F.BitwiseFn_bitwise_or, 2),
        SymOp.BITWISE_XOR: (F.BitwiseFn_bitwise_xor, 2),
        SymOp.WHERE: (F.Where, 3), SymOp.MODULAR_INDEXING: (F.ModularIndexing, 3),
    }
    for name, op in OPAQUE_UNARY.items():
        fixed[op] = (getattr(F, "OpaqueUnaryFn_" + name), 1)
    return nary, fixed


def value_ranges(vr, *, integer: bool = True) -> ValueRanges:
    """ValueRange -> torch ValueRanges: an absent side is int_oo for integers and oo for floats."""
    _symbolic()
    inf = int_oo if integer else sympy.oo
    if vr is None:
        return ValueRanges(-inf, inf)
    if integer:
        lo = sympy.Integer(vr.lower) if vr.has_lower else -inf
        hi = sympy.Integer(vr.upper) if vr.has_upper else inf
        shown = f"[{vr.lower}, {vr.upper}]"
    else:
        lo = sympy.Float(vr.float_lower) if vr.has_lower else -inf
        hi = sympy.Float(vr.float_upper) if vr.has_upper else inf
        shown = f"[{vr.float_lower}, {vr.float_upper}]"
    if vr.has_lower and vr.has_upper and lo > hi:
        raise LoadError("range is empty", expected="lower <= upper", got=shown)
    return ValueRanges(lo, hi)


class ShapeBuilder:
    """Creates the ShapeEnv of one program and turns pool indices into sympy and Sym* values."""

    @property
    def shape_env(self):
        """The program's ShapeEnv, created on first use."""
        if self._shape_env is None:
            _symbolic()
            self._shape_env = ShapeEnv(assume_static_by_default=True)
        return self._shape_env

    def __init__(self, program, path: str = "program"):
        self.path = path
        self.pool = program.sym_exprs
        self._program_symbols = program.symbols
        # torch's ShapeEnv constructor imports torch._dynamo (about a second cold): a static
        # program gets one only if something asks for it (see the shape_env property).
        self._shape_env = None
        self.static = not program.symbols
        if not self.static:
            _symbolic()
        env = None if self.static else self.shape_env
        self.symbols: list[sympy.Symbol] = []
        self._exprs: list = [None] * len(self.pool)
        sloc = stack = None
        max_unbacked_int = max_unbacked_float = -1
        seen = set()
        for i, s in enumerate(program.symbols):
            p = f"{path}.symbols[{i}]"
            name = check_identifier(s.name, p + ".name")
            if name in seen:
                raise LoadError(f"symbol {name!r} is defined twice", path=p)
            seen.add(name)
            if s.kind == SymbolKind.INT:
                sym = sympy.Symbol(name, integer=True, positive=True) if s.positive else \
                    sympy.Symbol(name, integer=True)
            elif s.kind == SymbolKind.FLOAT:
                kw = {"real": True} if s.has_hint else {}  # torch's unbacked floats carry no assumption
                if s.positive:
                    kw["positive"] = True
                sym = sympy.Symbol(name, **kw)
            else:
                raise LoadError("symbol kind is not supported", path=p, expected="INT or FLOAT", got=s.kind)
            self.symbols.append(sym)
            vr = value_ranges(s.range, integer=s.kind == SymbolKind.INT)
            env.var_to_range[sym] = vr
            if sloc is None:
                sloc = env._get_sloc()
            env.var_to_range_sloc[sym] = ValueRangesSLoc(sloc, sloc)
            if s.has_hint:
                env.backed_var_to_val[sym] = sympy.Float(s.float_hint) if s.kind == SymbolKind.FLOAT else \
                    sympy.Integer(s.hint)
            if symbol_is_type(sym, SymT.UNBACKED_INT):
                max_unbacked_int = max(max_unbacked_int, _suffix(name))
            elif symbol_is_type(sym, SymT.UNBACKED_FLOAT):
                max_unbacked_float = max(max_unbacked_float, _suffix(name))
            if not s.has_hint:
                # torch records where each unbacked symbol was made and reads it back when a guard
                # on the symbol cannot be decided: without it that error would be a KeyError.
                if stack is None:
                    stack = CapturedTraceback.extract(skip=1)
                env.var_to_stack[sym] = stack
        # New unbacked symbols (e.g. when re-tracing) must not reuse saved names.
        if env is not None:
            env.unbacked_symint_counter = max(env.unbacked_symint_counter, max_unbacked_int + 1)
            env.unbacked_symfloat_counter = max(env.unbacked_symfloat_counter, max_unbacked_float + 1)
        # Bounded numeric pass over the whole pool before sympy sees any of it:
        # 64-bit, degree and budget limits raise LimitError here (sympy would
        # evaluate `2 ** (1 << 60)` eagerly and hang), and hints come from it.
        hints = [(s.float_hint if s.kind == SymbolKind.FLOAT else s.hint) if s.has_hint else UNKNOWN
                 for s in program.symbols]
        self._values = evaluate_pool(self.pool, hints, path=f"{path}.sym_exprs")

    # -- expressions -----------------------------------------------------------
    def expr(self, i: int, path: str = "sym_exprs"):
        _symbolic()
        if not 0 <= i < len(self.pool):
            raise LoadError("expression index out of range", path=path, expected=f"< {len(self.pool)}", got=i)
        e = self._exprs[i]
        if e is None:
            e = self._build(i)
        return e

    def _build(self, i: int):
        # Operands always come earlier in the pool, so a forward pass over the
        # missing prefix builds everything without recursion.
        todo = [i]
        while todo:
            j = todo[-1]
            node = self.pool[j]
            missing = [a for a in node.args if a < j and self._exprs[a] is None] if node.args else []
            if missing:
                todo.extend(missing)
                continue
            todo.pop()
            if self._exprs[j] is None:
                self._exprs[j] = self._make(j, node)
        return self._exprs[i]

    def _make(self, j, node):
        p = f"{self.path}.sym_exprs[{j}]"
        k = node.kind
        if k == SymExprKind.SYMBOL:
            if node.symbol >= len(self.symbols):
                raise LoadError("symbol index out of range", path=p, expected=f"< {len(self.symbols)}", got=node.symbol)
            return self.symbols[node.symbol]
        if k == SymExprKind.INTEGER:
            return sympy.Integer(node.int_value)
        if k == SymExprKind.RATIONAL:
            if node.denominator <= 1:
                raise LoadError("rational denominator must exceed 1", path=p, got=node.denominator)
            return sympy.Rational(node.int_value, node.denominator)
        if k == SymExprKind.FLOAT:
            return sympy.Float(node.float_value)
        if k == SymExprKind.BOOLEAN:
            return sympy.true if node.bool_value else sympy.false
        if k == SymExprKind.INT_POSITIVE_INFINITY:
            return int_oo
        if k == SymExprKind.INT_NEGATIVE_INFINITY:
            return -int_oo
        if k == SymExprKind.POSITIVE_INFINITY:
            return sympy.oo
        if k == SymExprKind.NEGATIVE_INFINITY:
            return -sympy.oo
        if k != SymExprKind.APPLY:
            raise LoadError("unknown expression kind", path=p, got=k)
        for a in node.args:
            if a >= j:
                raise LoadError("expression operand must come earlier in the pool", path=p, expected=f"< {j}", got=a)
        args = [self._exprs[a] for a in node.args]
        op = node.op
        try:
            if op in _NARY:
                if len(args) < 1:
                    raise LoadError("operation needs operands", path=p, got=0)
                return _NARY[op](*args)
            if op == SymOp.IS_NON_OVERLAPPING_AND_DENSE:
                if len(args) % 2 or not args:
                    raise LoadError("sizes and strides must pair up", path=p, got=len(args))
                return F.IsNonOverlappingAndDenseIndicator(*args)
            if op == SymOp.PIECEWISE:
                if len(args) % 2 or not args:
                    raise LoadError("piecewise needs (value, condition) pairs", path=p, got=len(args))
                return sympy.Piecewise(*[(args[m], args[m + 1]) for m in range(0, len(args), 2)])
            fixed = _FIXED.get(op)
            if fixed is None:
                raise LoadError("expression operation is not supported", path=p, got=op)
            fn, arity = fixed
            if len(args) != arity:
                raise LoadError("wrong number of operands", path=p, expected=arity, got=len(args))
            return fn(*args)
        except LoadError:
            raise
        except (TypeError, ValueError, ZeroDivisionError, AttributeError, RecursionError) as e:
            raise LoadError(f"expression cannot be built: {type(e).__name__}: {e}", path=p) from None

    def hint(self, i: int):
        """The example value of pool entry `i` (None when it involves an unbacked symbol or cannot be evaluated)."""
        v = self._values[i]
        if v is UNKNOWN or isinstance(v, EvalFailure):
            return None
        if isinstance(v, Fraction):
            return float(v)
        return v

    def is_float_symbol(self, i: int) -> bool:
        """Whether pool entry `i` is a FLOAT symbol, whose ranges are float ranges (SPEC.md §11.2)."""
        node = self.pool[i] if 0 <= i < len(self.pool) else None
        return node is not None and node.kind == SymExprKind.SYMBOL and node.symbol < len(self.symbols) \
            and self._program_symbols[node.symbol].kind == SymbolKind.FLOAT

    # -- values ----------------------------------------------------------------
    def sym_int(self, s, path):
        if s is None:
            raise LoadError("missing SymInt", path=path)
        if s.expr < 0:
            return s.value
        e = self.expr(s.expr, path)
        if e.is_Integer:
            return int(e)
        return torch.SymInt(SymNode(e, self.shape_env, int, self.hint(s.expr)))

    def sym_float(self, s, path):
        if s.expr < 0:
            return s.value
        e = self.expr(s.expr, path)
        if e.is_Float:
            return float(e)
        h = self.hint(s.expr)
        return torch.SymFloat(SymNode(e, self.shape_env, float, None if h is None else float(h)))

    def sym_bool(self, s, path):
        if s.expr < 0:
            return bool(s.value)
        _symbolic()
        e = self.expr(s.expr, path)
        if e is sympy.true or e is sympy.false:
            return bool(e)
        return self.shape_env.create_symboolnode(e)


def _suffix(name: str) -> int:
    digits = name.lstrip("abcdefghijklmnopqrstuvwxyz_")
    return int(digits) if digits.isdigit() else -1
