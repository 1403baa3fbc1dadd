"""The input checks of a module built by load_module: torch's guards, evaluated from validated values.

`ExportedProgram.module()` compiles a guard function from text: guards it
derives from the placeholders' shapes and `range_constraints`
(`torch.export._unlift._get_input_guards_for_graph`) plus the program's
`_guards_code`, then calls it first thing in `forward`, raising
`AssertionError("Guard failed: ...")`. Here the same checks are built as
data from the file's structured values (static sizes, constants, symbolic
sizes as `sym_exprs` pool entries, integer ranges) and evaluated with the
bounded evaluator of SPEC §11 (`pt2format._symeval`); nothing is compiled
and no text from the file is parsed. In torch's order:

1. each user input leaf, in order: a constant must be equal (NaN is NaN); a
   tensor's static size must be equal; a symbolic size seen before must be
   equal to where it was first seen; otherwise its range is checked (a lower
   bound only above 2, as torch does; 0/1 are not specialized away);
2. sizes that are expressions of one symbol (derived dims): a symbol
   known only through such a size is solved for (affine expressions, as
   torch's `try_solve` does), later ones must agree;
3. what torch's tracer adds for derived dims (`_guards_code`): every size
   that is an expression of symbols known from other inputs must equal it.

The structure of the inputs is checked first, as torch's pre-hook does
(`ValueError`, "Trying to flatten user inputs with exported input tree
spec"). A size is read as `arg.size()[i]`, so a non-tensor or a tensor with
too few dimensions fails the way torch's generated guard does.
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch
import torch.utils._pytree as pytree
from torch.export._tree_utils import reorder_kwargs

from pt2format._generated.model import SymExprKind, SymOp
from pt2format._symeval import UNKNOWN, EvalFailure, evaluate_pool


class Unsupported(Exception):
    """The program needs a check this module does not build; load_module falls back to torch's module()."""


def _normalize_type(t):
    if t is torch.Size:  # torch.fx.experimental.proxy_tensor._pytree_subclasses_that_lose_info
        t = tuple
    return str(t)


def eq_spec(a: pytree.TreeSpec, b: pytree.TreeSpec) -> bool:
    """torch.export._unlift.eq_spec: TreeSpec equality; torch.Size matches tuple, dict keys in any order."""
    if a is b:
        return True
    if _normalize_type(a.type) != _normalize_type(b.type):
        return False
    if a.type is dict and b.type is dict:
        if set(a.context) != set(b.context):
            return False
    elif a.context != b.context:
        return False
    if a.num_children != b.num_children:
        return False
    return all(eq_spec(x, y) for x, y in zip(a.children(), b.children()))


def flatten_inputs(args, kwargs, in_spec) -> list:
    """The flat user inputs, or torch's ValueError when their structure is not the exported one."""
    reordered = reorder_kwargs(kwargs, in_spec)
    flat, received = pytree.tree_flatten((args, reordered))
    if not eq_spec(received, in_spec):
        raise ValueError(
            "Trying to flatten user inputs with exported input tree spec: \n"
            f"{in_spec}\n"
            "but actually got inputs with tree spec of: \n"
            f"{received}.\n"
            "Please check that the inputs have the same number and type of "
            "args and kwargs as the ones you used when tracing.")
    return flat


class _Pool:
    """Structural keys, free symbols and evaluation of entries of one program's sym_exprs pool."""

    def __init__(self, program):
        self.pool = program.sym_exprs
        self.n_symbols = len(program.symbols)
        self._keys: dict[int, tuple] = {}
        self._free: dict[int, frozenset] = {}

    def entry(self, i):
        if not 0 <= i < len(self.pool):
            raise Unsupported(f"sym_exprs index {i} out of range")
        return self.pool[i]

    def key(self, i: int) -> tuple:
        """A structural key: equal expressions get equal keys even if the pool holds them twice."""
        k = self._keys.get(i)
        if k is None:
            e = self.entry(i)
            args = tuple(self.key(a) for a in (e.args or ()) if a < i)
            if len(args) != len(e.args or ()):
                raise Unsupported(f"sym_exprs[{i}] refers to a later entry")
            k = self._keys[i] = (int(e.kind), int(e.op or 0), e.symbol, e.int_value, e.denominator, e.float_value,
                                 e.bool_value, args)
        return k

    def free(self, i: int) -> frozenset:
        f = self._free.get(i)
        if f is None:
            e = self.entry(i)
            if e.kind == SymExprKind.SYMBOL:
                f = frozenset((e.symbol,))
            else:
                f = frozenset().union(*(self.free(a) for a in (e.args or ()) if a < i))
            self._free[i] = f
        return f

    def is_symbol(self, i: int) -> bool:
        return self.entry(i).kind == SymExprKind.SYMBOL

    def integer(self, i: int):
        e = self.entry(i)
        return e.int_value if e.kind == SymExprKind.INTEGER else None

    def sub_pool(self, i: int) -> list:
        """Entry `i` and its operands, renumbered into a small pool whose last entry is `i`."""
        order, seen = [], {}

        def visit(j):
            if j in seen:
                return
            for a in self.entry(j).args or ():
                if a >= j:
                    raise Unsupported(f"sym_exprs[{j}] refers to a later entry")
                visit(a)
            seen[j] = len(order)
            order.append(j)

        visit(i)
        out = []
        for j in order:
            e = self.entry(j)
            out.append(_Entry(e, [seen[a] for a in (e.args or ())]))
        return out

    def affine(self, i: int, symbol: int):
        """(a, b) when entry `i` is a*symbol + b built from ADD, MUL and integers (torch solves these), else None."""
        e = self.entry(i)
        if e.kind == SymExprKind.SYMBOL:
            return (1, 0) if e.symbol == symbol else None
        if e.kind == SymExprKind.INTEGER:
            return (0, e.int_value)
        if e.kind != SymExprKind.APPLY or e.op not in (SymOp.ADD, SymOp.MUL):
            return None
        parts = [self.affine(a, symbol) for a in e.args or ()]
        if not parts or any(p is None for p in parts):
            return None
        if e.op == SymOp.ADD:
            return (sum(p[0] for p in parts), sum(p[1] for p in parts))
        a, b = parts[0]
        for c, d in parts[1:]:
            if a and c:
                return None
            a, b = a * d + c * b, b * d
        return (a, b)


class _Entry:
    """A pool entry with renumbered operands (the evaluator reads only these attributes)."""

    __slots__ = ("kind", "op", "symbol", "int_value", "denominator", "float_value", "bool_value", "args")

    def __init__(self, e, args):
        self.kind, self.op, self.symbol = e.kind, e.op, e.symbol
        self.int_value, self.denominator, self.float_value, self.bool_value = \
            e.int_value, e.denominator, e.float_value, e.bool_value
        self.args = args


def _range_of(program, pool: _Pool) -> dict:
    """Structural key -> (lower or None, upper or None) for every range constraint (integer ranges only)."""
    out = {}
    for i, rc in enumerate(program.range_constraints):
        if rc.range is not None and (rc.range.float_lower or rc.range.float_upper):
            raise Unsupported(f"range_constraints[{i}] is a float range")
        r = rc.range
        lo = r.lower if r is not None and r.has_lower else None
        hi = r.upper if r is not None and r.has_upper else None
        out[pool.key(rc.expr)] = (lo, hi)
    return out


class InputChecks:
    """Built once per module from the program's user inputs; `__call__(flat)` raises torch's AssertionError."""

    def __init__(self, program, leaves: list, paths: list[str]):
        """`leaves`: per flat user input, ("tensor", TensorMeta) / ("symint", SymInt) / ("const", value);
        `paths`: how torch names each input in its messages (`x`, `xs[0]`, `kw['a']`)."""
        self.pool = _Pool(program)
        self.n_symbols = self.pool.n_symbols
        ranges = _range_of(program, self.pool)
        self.steps: list[tuple] = []
        sources: dict[tuple, tuple] = {}  # structural key -> (leaf, dim) where first seen
        deferred = []
        self._sub: dict[int, list] = {}

        def handle(expr, src):
            free = self.pool.free(expr)
            if len(free) == 1:
                deferred.append((src, expr))
            k = self.pool.key(expr)
            if k in sources:
                self.steps.append(("same", src, sources[k]))
            else:
                sources[k] = src
                lo, hi = ranges[k]
                if lo is not None and lo > 2:
                    self.steps.append(("ge", src, lo))
                if hi is not None:
                    self.steps.append(("le", src, hi))

        for idx, (kind, v) in enumerate(leaves):
            if kind == "const":
                if isinstance(v, (bool, int, float, str)):
                    self.steps.append(("const", (idx, None), v))
            elif kind == "symint":
                if v.expr >= 0 and self.pool.integer(v.expr) is None and self.pool.key(v.expr) in ranges:
                    handle(v.expr, (idx, None))
                elif v.expr < 0 or self.pool.integer(v.expr) is not None:
                    self.steps.append(("const", (idx, None), v.value if v.expr < 0 else self.pool.integer(v.expr)))
            else:
                for d, s in enumerate(v.sizes):
                    static = s.value if s.expr < 0 else self.pool.integer(s.expr)
                    if static is not None:
                        self.steps.append(("eq", (idx, d), static))
                    elif self.pool.key(s.expr) in ranges:
                        handle(s.expr, (idx, d))
        # Derived dims (torch: "process complex equations").
        symbol_src: dict[int, tuple] = {}
        for k, src in sources.items():
            if k[0] == SymExprKind.SYMBOL:
                symbol_src[k[2]] = src
        solved: dict[int, tuple] = {}  # symbol -> (src, a, b): symbol = (value at src - b) / a
        for src, expr in deferred:
            (symbol,) = self.pool.free(expr)
            if symbol in symbol_src:
                continue
            if symbol in solved:
                self.steps.append(("expr", src, expr))
            else:
                ab = self.pool.affine(expr, symbol)
                if ab is not None and ab[0] != 0:
                    solved[symbol] = (src, ab[0], ab[1])
        self.symbol_src, self.solved = symbol_src, solved
        # What torch's tracer adds (derive_guards in _guards.py builds the same for load()).
        for idx, (kind, v) in enumerate(leaves):
            dims = list(enumerate(v.sizes)) if kind == "tensor" else [(None, v)] if kind == "symint" else []
            for d, s in dims:
                if s.expr < 0 or self.pool.is_symbol(s.expr) or self.pool.integer(s.expr) is not None:
                    continue
                free = self.pool.free(s.expr)
                if free and free <= set(symbol_src) and symbol_src.get(next(iter(free))) != (idx, d):
                    self.steps.append(("expr_known", (idx, d), s.expr))
        self.paths = paths

    # -- evaluation ----------------------------------------------------------------
    @staticmethod
    def _value(flat, src):
        idx, d = src
        arg = flat[idx]
        return arg if d is None else arg.size()[d]

    def _name(self, src) -> str:
        idx, d = src
        return self.paths[idx] if d is None else f"{self.paths[idx]}.size()[{d}]"

    def _show(self, i: int) -> str:
        """An expression of the input sizes, for messages (sums and products; anything else by its pool index)."""
        e = self.pool.entry(i)
        if e.kind == SymExprKind.INTEGER:
            return str(e.int_value)
        if e.kind == SymExprKind.SYMBOL:
            src = self.symbol_src.get(e.symbol)
            if src is not None:
                return self._name(src)
            if e.symbol in self.solved:
                src, a, b = self.solved[e.symbol]
                return f"({self._name(src)} - {b})/{a}" if b else f"{self._name(src)}/{a}"
        if e.kind == SymExprKind.APPLY and e.op in (SymOp.ADD, SymOp.MUL) and e.args:
            parts = sorted((self._show(a) for a in e.args), key=lambda t: not t.lstrip("-").isdigit())
            return (" + " if e.op == SymOp.ADD else "*").join(parts)
        return f"sym_exprs[{i}]"

    def _eval(self, expr: int, flat):
        sub = self._sub.get(expr)
        if sub is None:
            sub = self._sub[expr] = self.pool.sub_pool(expr)
        values = [UNKNOWN] * self.n_symbols
        for sym, src in self.symbol_src.items():
            values[sym] = int(self._value(flat, src))
        for sym, (src, a, b) in self.solved.items():
            q = Fraction(int(self._value(flat, src)) - b, a)
            values[sym] = int(q) if q.denominator == 1 else q
        return evaluate_pool(sub, values)[-1]

    def __call__(self, flat) -> None:
        for step in self.steps:
            op, src, want = step
            got = self._value(flat, src)
            if op == "const":
                if isinstance(want, float) and math.isnan(want):
                    ok = isinstance(got, float) and math.isnan(got)
                else:
                    ok = got == want
                text = f"{self._name(src)} == {want!r}"
            elif op == "eq":
                ok, text = got == want, f"{self._name(src)} == {want}"
            elif op == "same":
                ok, text = got == self._value(flat, want), f"{self._name(src)} == {self._name(want)}"
            elif op == "ge":
                ok, text = got >= want, f"{self._name(src)} >= {want}"
            elif op == "le":
                ok, text = got <= want, f"{self._name(src)} <= {want}"
            else:  # "expr" / "expr_known": a size that is an expression of symbols known from other inputs
                v = self._eval(want, flat)
                ok = v is UNKNOWN or isinstance(v, EvalFailure) or got == v
                text = f"{self._name(src)} == {self._show(want)}"
            if not ok:
                raise AssertionError(f"Guard failed: {text}")
