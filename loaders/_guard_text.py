"""Input guards as Python text for torch's guard function, printed from the pool with exactly SPEC §11's meaning.

`ExportedProgram.module()` compiles `ep._guards_code` with
`torch.export._unlift._convert_guards_code_to_fn`, whose namespace is
`SYMPY_INTERP` (`math`, `torch`, two torch helpers) plus Python's builtins: a
guard may call nothing else. The bounded evaluator (`pt2format._symeval`) is
what `load_module` runs; this printer writes the same meaning as plain Python
in that namespace, node by node from the stored pool (never through sympy,
whose constructors fold `x.size(0) >= 1` to True under torch's size
assumptions, which the file does not state). Each guard is:

* the guard as torch's printer writes it (terms in the pool's order, which
  is sympy's: `x.size()[1] * x.size()[0] > 5`), so messages match torch's;
* before it, when the guard holds a node whose integer result can leave 64
  bits (§11.1), the evaluator's forward pass written out: one line per node
  those need (`_pt2f_v3 := ...`, None standing for an evaluation error, which
  propagates as §11.4 says), each integer result checked against 64 bits and
  each power's exponent checked before it is computed, so no call computes
  `4000**10000000`, and an overflow anywhere rejects, as `_symeval`'s
  `LimitError` does;
* after it, when the guard holds a power (Python's `**` also takes negative
  exponents), the pass's own verdict (`_pt2f_v9 is True`).

The lines of the pass run on concrete inputs only (`_pt2f_concrete`), so a
retrace of `module()` sees torch's guards alone. `AND`/`OR` evaluate every
operand (an error in any rejects), `WHERE`/`PIECEWISE` only the chosen one;
sums and products with a float convert every operand first; `exp`, `sinh`
and `cosh` overflow to infinity; an operand of the wrong kind is an
evaluation error where it is evaluated (`torch._assert(False, ...)`). What
Python cannot evaluate exactly in that namespace (rationals, powers of
floats, IS_NON_OVERLAPPING_AND_DENSE, operands whose kind only a run tells)
is `Unprintable`: that guard rejects every call and says why.
"""

from __future__ import annotations

import math
import struct

from pt2format._generated.model import SymExprKind as K
from pt2format._generated.model import SymbolKind
from pt2format._generated.model import SymOp as O

LO, HI = -(1 << 63), (1 << 63) - 1
CONCRETE = "_pt2f_concrete"
_RANGE = f"{LO} <= {{}} <= {HI}"


class Unprintable(Exception):
    """A guard whose exact meaning has no Python text in torch's guard namespace (what and where)."""


def _last_finite(fn) -> float:
    """The largest double x with fn(x) finite (fn raises OverflowError above it), by bisection on the bits."""
    lo, hi = 0, struct.unpack("<q", struct.pack("<d", 1e6))[0]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        x = struct.unpack("<d", struct.pack("<q", mid))[0]
        try:
            ok = math.isfinite(fn(x))
        except OverflowError:
            ok = False
        lo, hi = (mid, hi) if ok else (lo, mid)
    return struct.unpack("<d", struct.pack("<q", lo))[0]


_OVERFLOW_AT = {O.EXP: _last_finite(math.exp), O.SINH: _last_finite(math.sinh), O.COSH: _last_finite(math.cosh)}
_CMP = {O.EQ: "==", O.NE: "!=", O.LT: "<", O.LE: "<=", O.GT: ">", O.GE: ">="}
_MATH = {O.SQRT: "sqrt", O.EXP: "exp", O.LOG: "log", O.LOG2: "log2", O.SIN: "sin", O.COS: "cos", O.TAN: "tan",
         O.ASIN: "asin", O.ACOS: "acos", O.ATAN: "atan", O.SINH: "sinh", O.COSH: "cosh", O.TANH: "tanh",
         O.ASINH: "asinh"}
_TO_INT = {O.TRUNC_TO_INT: "math.trunc", O.FLOOR_TO_INT: "math.floor", O.FLOOR: "math.floor",
           O.CEIL_TO_INT: "math.ceil", O.CEILING: "math.ceil", O.ROUND_TO_INT: "round"}
_BITS = {O.BITWISE_AND: "&", O.BITWISE_OR: "|", O.BITWISE_XOR: "^"}
I, F, B = "i", "f", "b"


#: characters a power of a constant exponent may take when printed as a product, as torch prints it
_MAX_PRODUCT_TEXT = 4096


def _fail(reason: str) -> str:
    # an evaluation error of §11.4 where the node is evaluated; no quote or backslash (torch pastes the
    # guard into a double-quoted message)
    return f"torch._assert(False, 'pt2format guard: {reason}')"


def _float_literal(v: float) -> str:
    if math.isnan(v):
        return "math.nan"
    if math.isinf(v):
        return "math.inf" if v > 0 else "(-math.inf)"
    return repr(v) if v >= 0 else f"({v!r})"


class GuardPrinter:
    """Prints input guards of one program's pool; one instance per `_guards_code` (names are unique in it)."""

    def __init__(self, exprs, symbols, names: dict[int, str], bounds: dict[int, tuple[int, int]] | None = None):
        """`names[i]`: the text of Program.symbols[i] in torch's guard namespace (`L['x'].size()[0]`);
        `bounds[i]`: the integers symbol i can hold whatever the input (a size is in [0, 2**63 - 1])."""
        self.exprs, self.symbols, self.names = exprs, symbols, names
        self.bounds = bounds or {}
        self._n = 0
        self._kind: dict[int, str | None] = {}
        self._interval_of: dict[int, tuple[int, int] | None] = {}
        self._what = ""

    # -- kinds ----------------------------------------------------------------------------------------------------
    def kind(self, i: int) -> str | None:
        """'i', 'f' or 'b': the kind every evaluation of node i has, or None when only a run can tell."""
        if i in self._kind:
            return self._kind[i]
        e = self.exprs[i]
        k = None
        if e.kind == K.SYMBOL:
            k = {SymbolKind.INT: I, SymbolKind.FLOAT: F, SymbolKind.BOOL: B}.get(self.symbols[e.symbol].kind)
        elif e.kind == K.INTEGER:
            k = I
        elif e.kind in (K.FLOAT, K.POSITIVE_INFINITY, K.NEGATIVE_INFINITY):
            k = F
        elif e.kind == K.BOOLEAN:
            k = B
        elif e.kind == K.APPLY:
            k = self._apply_kind(e.op, list(e.args or ()))
        self._kind[i] = k
        return k

    def _apply_kind(self, op, args) -> str | None:
        ks = [self.kind(a) for a in args]
        if op in _CMP or op in (O.AND, O.OR, O.NOT):
            return B
        if op in (O.POW_BY_NATURAL, O.MODULAR_INDEXING, O.IS_NON_OVERLAPPING_AND_DENSE) or op in _TO_INT:
            return I
        if None in ks:
            return None
        if op in (O.ADD, O.MUL, O.FLOOR_DIV, O.CLEAN_DIV, O.PYTHON_MOD, O.MOD):
            return None if B in ks else F if F in ks else I
        if op in (O.MIN, O.MAX, O.IDENTITY):
            return ks[0] if len(set(ks)) == 1 else None
        if op == O.WHERE:
            return ks[1] if len(ks) == 3 and ks[1] == ks[2] else None
        if op == O.PIECEWISE:
            vals = set(ks[0::2])
            return vals.pop() if len(vals) == 1 else None
        if op == O.POW:
            return I if ks == [I, I] and self._natural_exponent(args[1]) else None
        if op == O.ABS:
            return ks[0]
        if op in _BITS:
            return B if ks == [B, B] else I
        return F  # FLOAT_POW, the true divisions, TO_FLOAT, TRUNC_TO_FLOAT, ROUND_DECIMAL, math functions

    def _natural_exponent(self, a) -> bool:
        e = self.exprs[a]
        return e.kind == K.INTEGER and e.int_value >= 0

    def _kind_error(self, op, args, ks) -> str | None:
        """Why node (op, args) fails whatever its values (§11.4, an operand of the wrong kind), or None;
        Unprintable when that depends on a run."""
        name = _name(op)
        if op in _CMP or op in (O.MIN, O.MAX, O.IDENTITY):
            return None  # any kinds: Python compares bools as 0/1 and ints with floats exactly, as §11.1
        if op == O.WHERE:
            if ks[0] is None:
                raise Unprintable(f"{self._what}: WHERE whose condition kind only a run tells")
            return None if ks[0] == B else "WHERE: boolean operand expected"
        if op == O.PIECEWISE:
            if None in ks[1::2]:
                raise Unprintable(f"{self._what}: PIECEWISE whose condition kind only a run tells")
            return None
        if None in ks:
            raise Unprintable(f"{self._what}: {name} of operands whose kind only a run tells")
        if op in (O.AND, O.OR, O.NOT):
            return None if all(k == B for k in ks) else f"{name}: boolean operand expected"
        if op in _BITS:
            return None if F not in ks else f"{name}: integer operand expected"
        if B in ks:
            return f"{name}: boolean operand where a number is needed"
        if op in (O.POW_BY_NATURAL, O.MODULAR_INDEXING, O.INT_TRUE_DIV) or (op == O.ROUND_DECIMAL and ks[1] != I):
            return None if all(k == I for k in (ks if op != O.ROUND_DECIMAL else ks[1:])) else \
                f"{name}: integer operand expected"
        if op == O.POW and not (ks == [I, I] and self._natural_exponent(args[1])):
            raise Unprintable(f"{self._what}: POW of these operands (a rational or a float power)")
        if op in (O.FLOAT_POW, O.IS_NON_OVERLAPPING_AND_DENSE):
            raise Unprintable(f"{self._what}: {name}")
        return None

    # -- the guard ------------------------------------------------------------------------------------------------
    def guard(self, root: int, what: str) -> list[str]:
        """The lines that check input guard `root` (`what` names it in errors)."""
        self._what = what
        if self.kind(root) not in (B, None):
            return [_fail(f"{what} is not a boolean")]
        main = self._text(root)
        if self.kind(root) is None:  # a guard holds only when it is true (§11.7); torch._assert(-7) would pass
            main = f"({main} is True)"
        nodes = self._reach([root])
        powers = any(self._op(i) in (O.POW, O.POW_BY_NATURAL) for i in nodes)
        wide = [i for i in nodes if self._may_overflow(i)]
        if not wide and not powers:
            return [main]
        self._ref: dict[int, str] = {}
        self._lines: list[str] = []
        for i in self._reach([root] if powers else wide):
            self._shadow(i)
        lines = [*self._lines, main]
        if powers:
            lines.append(f"not {CONCRETE} or ({self._ref[root]} is True)")
        return lines

    def _op(self, i):
        e = self.exprs[i]
        return e.op if e.kind == K.APPLY else None

    def _reach(self, roots) -> list[int]:
        """The nodes roots need, in pool order (operands first)."""
        seen, stack = set(roots), list(roots)
        while stack:
            e = self.exprs[stack.pop()]
            for a in (e.args or ()) if e.kind == K.APPLY else ():
                if a not in seen:
                    seen.add(a)
                    stack.append(a)
        return sorted(seen)

    def _may_overflow(self, i) -> bool:
        """Whether node i's integer result can leave 64 bits (§11.1), for some values of its operands."""
        e = self.exprs[i]
        if e.kind != K.APPLY or self.kind(i) != I:
            return False
        ks = [self.kind(a) for a in e.args]
        if e.op in (O.ADD, O.MUL):
            return len(e.args) > 1 and self._interval(i) is None
        if e.op in (O.POW, O.POW_BY_NATURAL, O.FLOOR_DIV, O.CLEAN_DIV, O.ABS):
            return True
        return e.op in _TO_INT and ks == [F]

    def _interval(self, i) -> tuple[int, int] | None:
        """The integers every evaluation of node i gives, every partial sum or product inside 64 bits on the
        way, or None when some input could leave them (so `x.size()[0] + 1` needs no check, `2 * n` does)."""
        if i in self._interval_of:
            return self._interval_of[i]
        e, r = self.exprs[i], None
        if e.kind == K.INTEGER:
            r = (e.int_value, e.int_value)
        elif e.kind == K.SYMBOL:
            r = self.bounds.get(e.symbol)
        elif e.kind == K.APPLY and e.op in (O.ADD, O.MUL) and e.args and all(self.kind(a) == I for a in e.args):
            parts = [self._interval(a) for a in e.args]
            if all(parts):
                lo, hi = parts[0]
                for a, b in parts[1:]:
                    if e.op == O.ADD:
                        lo, hi = lo + a, hi + b
                    else:
                        c = (lo * a, lo * b, hi * a, hi * b)
                        lo, hi = min(c), max(c)
                    if lo < LO or hi > HI:
                        break
                else:
                    r = (lo, hi)
        self._interval_of[i] = r
        return r

    # -- the pass: one line per node, None for an evaluation error --------------------------------------------------
    def _new(self) -> str:
        self._n += 1
        return f"_pt2f_v{self._n}"

    def _emit(self, expr: str, checked: bool) -> str:
        v = self._new()
        check = f"{LO} <= {v} <= {HI}" if checked else "True"
        self._lines.append(f"not {CONCRETE} or (({v} := {expr}) is None or {check})")
        return v

    def _shadow(self, i: int) -> None:
        e = self.exprs[i]
        if e.kind != K.APPLY:
            text = self._leaf(e)
            self._ref[i] = "None" if text.startswith("torch._assert") else text
            return
        op, args = e.op, list(e.args or ())
        ks = [self.kind(a) for a in args]
        r = [self._ref[a] for a in args]
        if self._kind_error(op, args, ks) is not None:
            self._ref[i] = "None"
            return
        if op == O.WHERE:
            self._ref[i] = self._emit(f"None if {r[0]} is None else ({r[1]} if {r[0]} else {r[2]})", False)
            return
        if op == O.PIECEWISE:
            text = "None"
            for k in range(len(args) - 2, -1, -2):
                c = r[k + 1] if ks[k + 1] == B else "None"
                text = f"None if {c} is None else ({r[k]} if {c} else {text})"
            self._ref[i] = self._emit(text, False)
            return
        checked = self._may_overflow(i)
        if op in (O.ADD, O.MUL) and len(args) > 1 and self.kind(i) == I:
            acc = r[0]
            for x in r[1:]:
                fails = " or ".join(f"{t} is None" for t in (acc, x) if not _never_none(t))
                acc = self._emit((f"None if {fails} else " if fails else "") +
                                 f"{acc} {'+' if op == O.ADD else '*'} {x}", True)
            self._ref[i] = acc
            return
        fails = [f"{t} is None" for t in r if not _never_none(t)]
        domain = self._domain(op, r, ks)
        if domain:
            fails.append(domain)
        if op in (O.POW, O.POW_BY_NATURAL):
            body = f"{r[0]}**{r[1]} if {r[1]} <= 64 or -1 <= {r[0]} <= 1 else {HI + 1}"
        else:
            body = self._apply(op, args, ks, lambda k: r[k])
        self._ref[i] = self._emit((f"None if {' or '.join(fails)} else " if fails else "") + body, checked)

    def _domain(self, op, r, ks) -> str | None:
        """The Python condition under which op fails on these operand values (§11.1, §11.4)."""
        fl = [t if k == F else f"float({t})" for t, k in zip(r, ks)]
        if op in (O.FLOOR_DIV, O.CLEAN_DIV, O.PYTHON_MOD, O.MOD, O.INT_TRUE_DIV, O.FLOAT_TRUE_DIV):
            return f"{r[1]} == 0"
        if op == O.MODULAR_INDEXING:
            return f"{r[1]} == 0 or {r[2]} == 0"
        if op in (O.POW, O.POW_BY_NATURAL):
            return f"{r[1]} < 0"
        if op in _TO_INT and ks[0] == F:
            return f"not math.isfinite({r[0]})"
        if op == O.SQRT:
            return f"{fl[0]} < 0"
        if op in (O.LOG, O.LOG2):
            return f"{fl[0]} <= 0"
        if op in (O.ASIN, O.ACOS):
            return f"{fl[0]} < -1 or {fl[0]} > 1"
        if op in (O.SIN, O.COS, O.TAN):
            return f"math.isinf({fl[0]})"
        if op == O.PIECEWISE:
            return None
        return None

    # -- the guard as torch prints it -------------------------------------------------------------------------------
    def _leaf(self, e) -> str:
        if e.kind == K.SYMBOL:
            return self.names[e.symbol]
        if e.kind == K.INTEGER:
            return str(e.int_value) if e.int_value >= 0 else f"({e.int_value})"
        if e.kind == K.FLOAT:
            return _float_literal(e.float_value)
        if e.kind == K.BOOLEAN:
            return "True" if e.bool_value else "False"
        if e.kind == K.POSITIVE_INFINITY:
            return "math.inf"
        if e.kind == K.NEGATIVE_INFINITY:
            return "(-math.inf)"
        if e.kind in (K.INT_POSITIVE_INFINITY, K.INT_NEGATIVE_INFINITY):
            return _fail("integer infinity is a bound, not a number")
        if e.kind == K.RATIONAL:
            raise Unprintable(f"{self._what}: a rational constant")
        raise Unprintable(f"{self._what}: expression kind {int(e.kind)}")

    def _text(self, i: int) -> str:
        """Node i as Python, the whole tree under it (bounded by the expanded size, §11.6)."""
        e = self.exprs[i]
        if e.kind != K.APPLY:
            return self._leaf(e)
        op, args = e.op, list(e.args or ())
        ks = [self.kind(a) for a in args]
        why = self._kind_error(op, args, ks)
        if why is not None:
            return _fail(why)
        return self._apply(op, args, ks, lambda k: self._text(args[k]))

    def _apply(self, op, args, ks, t) -> str:
        """Node (op, args) as Python, its operands printed by t(k); the kinds are right (_kind_error)."""
        n = len(args)

        def fl(k):
            return t(k) if ks[k] == F else f"float({t(k)})"

        if op == O.WHERE:
            return f"({t(1)} if {t(0)} else {t(2)})"
        if op == O.PIECEWISE:  # a condition that is not a boolean fails when it is reached
            cond = [t(k + 1) if ks[k + 1] == B else _fail("PIECEWISE: boolean operand expected")
                    for k in range(0, n - 1, 2)]
            parts = "".join(f"{t(k)} if {cond[k // 2]} else " for k in range(0, n - 1, 2))
            return f"({parts}{_fail('PIECEWISE: no condition holds')})"
        if op in _CMP:
            return f"({t(0)} {_CMP[op]} {t(1)})"
        if op in (O.MIN, O.MAX):  # the first least / greatest, by `<` / `>`, as Python's min / max
            return t(0) if n == 1 else f"{'min' if op == O.MIN else 'max'}({', '.join(map(t, range(n)))})"
        if op == O.IDENTITY:
            return t(0)
        if op in (O.AND, O.OR):  # every operand evaluated, as §11.4 (Python's and/or would stop early)
            return t(0) if n == 1 else f"{'all' if op == O.AND else 'any'}(({', '.join(map(t, range(n)))}))"
        if op == O.NOT:
            return f"(not {t(0)})"
        if op in _BITS:
            return f"({t(0)} {_BITS[op]} {t(1)})"
        if op in (O.ADD, O.MUL):
            sym = " + " if op == O.ADD else "*"
            if F in ks:  # §11.1: every operand converted, then a left fold in doubles
                return "(" + sym.join(fl(k) for k in range(n)) + ")" if n > 1 else fl(0)
            # in the pool's order, which is the order torch's printer uses (sympy's args): `2*s0*s1`, `1 + s0`
            return "(" + sym.join(map(t, range(n))) + ")" if n > 1 else t(0)
        if op in (O.FLOOR_DIV, O.CLEAN_DIV):
            return f"({t(0)} // {t(1)})" if F not in ks else f"({fl(0)} // {fl(1)})"
        if op in (O.PYTHON_MOD, O.MOD):
            return f"({t(0)} % {t(1)})" if F not in ks else f"({fl(0)} % {fl(1)})"
        if op == O.POW and self.exprs[args[1]].kind == K.INTEGER and 0 <= self.exprs[args[1]].int_value <= 64:
            # torch's printer writes sympy's Pow of a constant exponent as a product (`s*s`), and its
            # guard messages quote that text; PowByNatural stays `**`
            # (up to a bounded text: a nested power must not grow the code geometrically)
            k, base = self.exprs[args[1]].int_value, t(0)
            if k * len(base) <= _MAX_PRODUCT_TEXT:
                return "(" + "*".join([base] * k) + ")" if k > 1 else (base if k else "1")
            return f"({base}**{k})"
        if op in (O.POW_BY_NATURAL, O.POW):
            return f"({t(0)}**{t(1)})"
        if op == O.INT_TRUE_DIV:
            return f"({t(0)} / {t(1)})"
        if op == O.FLOAT_TRUE_DIV:
            return f"({fl(0)} / {fl(1)})"
        if op in _TO_INT:
            return t(0) if ks[0] == I else f"{_TO_INT[op]}({t(0)})"
        if op == O.TRUNC_TO_FLOAT:
            return f"(math.modf({fl(0)})[1] + 0.0)"  # + 0.0: trunc(-0.5) is 0.0, as float(math.trunc(-0.5))
        if op == O.ROUND_DECIMAL:
            return f"round({fl(0)}, {t(1)})"
        if op == O.TO_FLOAT:
            return fl(0)
        if op == O.ABS:
            return f"abs({t(0)})"
        if op in _OVERFLOW_AT:  # math raises OverflowError where §11.4 gives an infinity
            v, at = self._new(), repr(_OVERFLOW_AT[op])
            x = f"({v} := {fl(0)})"
            if op == O.EXP:
                return f"(math.inf if {x} > {at} else math.exp({v}))"
            if op == O.COSH:
                return f"(math.inf if abs({x}) > {at} else math.cosh({v}))"
            return f"(math.inf if {x} > {at} else (-math.inf) if {v} < -{at} else math.sinh({v}))"
        if op in _MATH:
            return f"math.{_MATH[op]}({fl(0)})"
        if op == O.MODULAR_INDEXING:
            return f"(({t(0)} // {t(1)}) % {t(2)})"
        raise Unprintable(f"{self._what}: {_name(op)}")


def _name(op) -> str:
    return O(op).name if op in O._value2member_map_ else f"op {int(op)}"


def _never_none(ref: str) -> bool:
    return not ref.startswith("_pt2f_v") and ref != "None"


#: Deepest nesting printed: CPython's parser refuses 200 nested parentheses, and each level here may add two.
MAX_DEPTH = 60


def depths(exprs) -> list[int]:
    """Nesting depth of every pool node (a leaf 0), in one forward pass."""
    d = [0] * len(exprs)
    for i, e in enumerate(exprs):
        if e.kind == K.APPLY and e.args:
            d[i] = 1 + max(d[a] for a in e.args if a < i)
    return d


def guard_lines(exprs, symbols, names: dict[int, str], roots: list[int],
                bounds: dict[int, tuple[int, int]] | None = None) -> list[str]:
    """`ep._guards_code` for input guards `roots` (pool indices), each printed once, in their order.

    A guard this module cannot print exactly (`Unprintable`) becomes a line that rejects every call
    and says why: `load_module` evaluates it; torch's guard function would give it another meaning.
    """
    printer = GuardPrinter(exprs, symbols, names, bounds)
    depth = depths(exprs)
    lines, seen, checks = [], set(), False
    for n, root in enumerate(roots):
        if root in seen:
            continue
        seen.add(root)
        what = f"input_guards[{n}]"
        try:
            if depth[root] > MAX_DEPTH:
                raise Unprintable(f"{what}: nested deeper than {MAX_DEPTH}")
            got = printer.guard(root, what)
        except Unprintable as e:
            got = [_fail(f"{e}, which torch guard code cannot evaluate exactly; pt2format.load_module checks it")]
        checks = checks or len(got) > 1
        lines.extend(got)
    if checks:  # the range checks run on concrete inputs only: a retrace of module() sees torch's guards alone
        srcs = ", ".join(dict.fromkeys(names[s] for s in sorted(names)))
        lines.insert(0, f"(({CONCRETE} := all(isinstance(v, (int, float)) for v in ({srcs},))) or True)")
    return lines
