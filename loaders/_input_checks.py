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
3. the program's own guards (`_guards_code`): in a file of 1.1 or later,
   torch's guards as stored (`Program.input_guards`, each symbol read from
   the input property `guard_sources` names, SPEC §11.7), in torch's order;
   in a 1.0 file, what torch's tracer adds for derived dims: every size
   that is an expression of symbols known from other inputs must equal it.

Every walk over the pool is memoized per pool index (see _Pool), so building
and running the checks is linear in the pool, however much it shares.

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

from pt2format._generated.model import GuardSourceKind, SymExprKind, SymOp
from pt2format._symeval import UNKNOWN, EvalFailure, evaluate_pool
from pt2format.errors import LoadError


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


_SHOW_MAX = 200  # longest text _show builds for one expression; longer ones are named by pool index


class _Pool:
    """Structural keys, free symbols and evaluation of entries of one program's sym_exprs pool.

    The pool is a DAG (an entry may be an operand of many), so every walk here
    is memoized per pool index and runs forward over the entries an index
    reaches, without recursion: work is linear in the pool, never in the
    expanded tree (a chain of 40 shared `Max(e, e)` is 40 entries, not 2^40).
    """

    def __init__(self, program):
        self.pool = program.sym_exprs
        self.n_symbols = len(program.symbols)
        self._keys: dict[int, int] = {}  # pool index -> interned structural key
        self._interned: dict[tuple, int] = {}
        self._free: dict[int, frozenset] = {}
        self._affine: dict[int, dict] = {}  # symbol -> pool index -> (a, b) or None

    def entry(self, i):
        if not 0 <= i < len(self.pool):
            raise Unsupported(f"sym_exprs index {i} out of range")
        return self.pool[i]

    def reach(self, roots, done=()) -> list[int]:
        """The entries `roots` reach (themselves included) and not in `done`, ascending: operands first."""
        seen = set()
        stack = [r for r in roots if r not in done]
        for r in stack:
            self.entry(r)
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            for a in self.entry(j).args or ():
                if a >= j:
                    raise Unsupported(f"sym_exprs[{j}] refers to a later entry")
                if a not in seen and a not in done:
                    stack.append(a)
        return sorted(seen)

    def key(self, i: int) -> int:
        """A structural key: equal expressions get equal keys even if the pool holds them twice.

        Keys are interned: an entry's key is a small integer made from its own
        fields and its operands' keys, so hashing one costs its operand count.
        """
        k = self._keys.get(i)
        if k is not None:
            return k
        for j in self.reach((i,), self._keys):
            e = self.pool[j]
            t = (int(e.kind), int(e.op or 0), e.symbol, e.int_value, e.denominator, e.float_value, e.bool_value,
                 tuple(self._keys[a] for a in (e.args or ())))
            self._keys[j] = self._interned.setdefault(t, len(self._interned))
        return self._keys[i]

    def free(self, i: int) -> frozenset:
        f = self._free.get(i)
        if f is not None:
            return f
        for j in self.reach((i,), self._free):
            e = self.pool[j]
            if e.kind == SymExprKind.SYMBOL:
                f = frozenset((e.symbol,))
            else:
                parts = [self._free[a] for a in (e.args or ())]
                f = parts[0] if len(parts) == 1 else frozenset().union(*parts)
            self._free[j] = f
        return self._free[i]

    def is_symbol(self, i: int) -> bool:
        return self.entry(i).kind == SymExprKind.SYMBOL

    def integer(self, i: int):
        e = self.entry(i)
        return e.int_value if e.kind == SymExprKind.INTEGER else None

    def sub_pool(self, roots) -> tuple[list, dict[int, int]]:
        """The entries `roots` reach, renumbered into a small pool (operands first), and old index -> new."""
        order = self.reach(roots)
        seen = {j: n for n, j in enumerate(order)}
        return [_Entry(self.pool[j], [seen[a] for a in (self.pool[j].args or ())]) for j in order], seen

    def affine(self, i: int, symbol: int):
        """(a, b) when entry `i` is a*symbol + b built from ADD, MUL and integers (torch solves these), else None."""
        memo = self._affine.setdefault(symbol, {})
        for j in self.reach((i,), memo):
            e = self.pool[j]
            if e.kind == SymExprKind.SYMBOL:
                r = (1, 0) if e.symbol == symbol else None
            elif e.kind == SymExprKind.INTEGER:
                r = (0, e.int_value)
            elif e.kind != SymExprKind.APPLY or e.op not in (SymOp.ADD, SymOp.MUL) or not e.args:
                r = None
            else:
                parts = [memo[a] for a in e.args]
                if any(p is None for p in parts):
                    r = None
                elif e.op == SymOp.ADD:
                    r = (sum(p[0] for p in parts), sum(p[1] for p in parts))
                else:
                    a, b = parts[0]
                    for c, d in parts[1:]:
                        if a and c:
                            a = None
                            break
                        a, b = a * d + c * b, b * d
                    r = None if a is None else (a, b)
            memo[j] = r
        return memo[i]


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


_INFIX = {SymOp.ADD: " + ", SymOp.MUL: "*", SymOp.MOD: " % ", SymOp.PYTHON_MOD: " % ", SymOp.FLOOR_DIV: " // ",
          SymOp.EQ: " == ", SymOp.NE: " != ", SymOp.LT: " < ", SymOp.LE: " <= ", SymOp.GT: " > ",
          SymOp.GE: " >= ", SymOp.AND: " and ", SymOp.OR: " or "}
_CALL = {SymOp.MIN: "min", SymOp.MAX: "max", SymOp.NOT: "not "}


class InputChecks:
    """Built once per module from the program's user inputs; `__call__(flat)` raises torch's AssertionError."""

    def __init__(self, program, leaves: list, paths: list[str], *, stored_guards: bool = False):
        """`leaves`: per flat user input, ("tensor", TensorMeta) / ("symint", SymInt) / ("const", value);
        `paths`: how torch names each input in its messages (`x`, `xs[0]`, `kw['a']`);
        `stored_guards`: the file carries torch's own guards (`Program.input_guards`, format 1.1): they
        replace the ones derived for derived dims in step 3."""
        self.pool = _Pool(program)
        self.n_symbols = self.pool.n_symbols
        self.paths = paths
        ranges = _range_of(program, self.pool)
        self.steps: list[tuple] = []
        sources: dict[int, tuple] = {}  # structural key -> (leaf, dim) where first seen
        deferred = []

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
        for src, expr in [(src, e) for src, e in _first_sources(leaves, self.pool, sources)]:
            symbol_src[self.pool.entry(expr).symbol] = src
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
        if stored_guards:
            # torch's own guards (ep._guards_code), in its order, read from the inputs they name.
            from ._guards import guard_sources

            self.guard_src = guard_sources(program, [_ndim(leaf) for leaf in leaves])
            for i, g in enumerate(program.input_guards or ()):
                missing = self.pool.free(g) - self.guard_src.keys()
                if missing:
                    raise LoadError("input guard reads a symbol without a source", path=f"input_guards[{i}]",
                                    expected="a symbol of guard_sources", got=min(missing))
                self.steps.append(("guard", None, g))
        else:
            # A 1.0 file: what torch's tracer adds for derived dims (derive_guards in _guards.py, for load()).
            self.guard_src = {}
            for idx, (kind, v) in enumerate(leaves):
                dims = list(enumerate(v.sizes)) if kind == "tensor" else [(None, v)] if kind == "symint" else []
                for d, s in dims:
                    if s.expr < 0 or self.pool.is_symbol(s.expr) or self.pool.integer(s.expr) is not None:
                        continue
                    free = self.pool.free(s.expr)
                    if free and free <= set(symbol_src) and symbol_src.get(next(iter(free))) != (idx, d):
                        self.steps.append(("expr_known", (idx, d), s.expr))
        # One renumbered pool per kind of symbol binding, evaluated at most once per call.
        derived = [w for op, _, w in self.steps if op in ("expr", "expr_known")]
        guards = [w for op, _, w in self.steps if op == "guard"]
        self._derived = self.pool.sub_pool(derived) if derived else None
        self._guards = self.pool.sub_pool(guards) if guards else None
        self._shown: dict[int, str] = {}

    # -- evaluation ----------------------------------------------------------------
    @staticmethod
    def _value(flat, src):
        idx, d = src
        arg = flat[idx]
        return arg if d is None else arg.size()[d]

    def _name(self, src) -> str:
        idx, d = src
        return self.paths[idx] if d is None else f"{self.paths[idx]}.size()[{d}]"

    def _symbol_name(self, symbol: int) -> str | None:
        src = self.guard_src.get(symbol)
        if src is not None:
            idx, kind, dim = src
            suffix = {GuardSourceKind.VALUE: "", GuardSourceKind.SIZE: f".size()[{dim}]",
                      GuardSourceKind.STRIDE: f".stride()[{dim}]",
                      GuardSourceKind.STORAGE_OFFSET: ".storage_offset()"}[kind]
            return self.paths[idx] + suffix
        src = self.symbol_src.get(symbol)
        if src is not None:
            return self._name(src)
        if symbol in self.solved:
            src, a, b = self.solved[symbol]
            return f"({self._name(src)} - {b})/{a}" if b else f"{self._name(src)}/{a}"
        return None

    def _show(self, i: int) -> str:
        """An expression of the inputs, for messages: memoized per pool index, and named `sym_exprs[i]`
        when its text would pass _SHOW_MAX characters (a shared DAG never expands)."""
        shown = self._shown
        if i in shown:
            return shown[i]
        for j in self.pool.reach((i,), shown):
            e = self.pool.entry(j)
            text = None
            if e.kind == SymExprKind.INTEGER:
                text = str(e.int_value)
            elif e.kind == SymExprKind.BOOLEAN:
                text = str(bool(e.bool_value))
            elif e.kind == SymExprKind.SYMBOL:
                text = self._symbol_name(e.symbol)
            elif e.kind == SymExprKind.APPLY and e.args:
                parts = [shown[a] for a in e.args]
                if e.op in _INFIX:
                    if e.op in (SymOp.ADD, SymOp.MUL):
                        parts = sorted(parts, key=lambda t: not t.lstrip("-").isdigit())
                    text = _INFIX[e.op].join(f"({p})" if " " in p and e.op != SymOp.ADD else p for p in parts)
                elif e.op in _CALL and e.op != SymOp.NOT:
                    text = f"{_CALL[e.op]}({', '.join(parts)})"
                elif e.op == SymOp.NOT:
                    text = f"not ({parts[0]})"
            if text is None or len(text) > _SHOW_MAX:
                text = f"sym_exprs[{j}]"
            shown[j] = text
        return shown[i]

    def _symbol_values(self, flat, guards: bool) -> list:
        values = [UNKNOWN] * self.n_symbols
        if guards:
            for sym, (idx, kind, dim) in self.guard_src.items():
                arg = flat[idx]
                if kind == GuardSourceKind.VALUE:
                    v = arg
                elif kind == GuardSourceKind.SIZE:
                    v = arg.size()[dim]
                elif kind == GuardSourceKind.STRIDE:
                    v = arg.stride()[dim]
                else:
                    v = arg.storage_offset()
                values[sym] = int(v)
            return values
        for sym, src in self.symbol_src.items():
            values[sym] = int(self._value(flat, src))
        for sym, (src, a, b) in self.solved.items():
            q = Fraction(int(self._value(flat, src)) - b, a)
            values[sym] = int(q) if q.denominator == 1 else q
        return values

    def __call__(self, flat) -> None:
        evaluated: dict[bool, list] = {}

        def value_of(expr, guards: bool):
            vals = evaluated.get(guards)
            if vals is None:
                sub, index = self._guards if guards else self._derived
                vals = evaluated[guards] = (evaluate_pool(sub, self._symbol_values(flat, guards)), index)
            return vals[0][vals[1][expr]]

        for step in self.steps:
            op, src, want = step
            if op == "guard":
                v = value_of(want, True)
                if isinstance(v, EvalFailure) or v is UNKNOWN or not v:
                    raise AssertionError(f"Guard failed: {self._show(want)}")
                continue
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
                v = value_of(want, False)
                ok = v is UNKNOWN or isinstance(v, EvalFailure) or got == v
                text = f"{self._name(src)} == {self._show(want)}"
            if not ok:
                raise AssertionError(f"Guard failed: {text}")


def _ndim(leaf) -> int | None:
    kind, v = leaf
    return len(v.sizes) if kind == "tensor" else None


def _first_sources(leaves, pool, sources):
    """(src, pool index) of every bare symbol among the first-seen input sizes."""
    for idx, (kind, v) in enumerate(leaves):
        dims = list(enumerate(v.sizes)) if kind == "tensor" else [(None, v)] if kind == "symint" else []
        for d, s in dims:
            if s.expr >= 0 and pool.is_symbol(s.expr):
                src = (idx, d)
                if sources.get(pool.key(s.expr)) == src:
                    yield src, s.expr
