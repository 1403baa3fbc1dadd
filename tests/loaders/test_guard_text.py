"""Stored guards mean one thing: torch's compiled guard function, every evaluator and SPEC §11 agree.

`load(...).module()` runs the guards `loaders/_guard_text.py` prints into
`ep._guards_code`, compiled by torch's own `_convert_guards_code_to_fn`;
`load_module` runs `pt2format._symeval`; the C++ and TypeScript readers run
their evaluators. Expression trees are drawn over every operator of the
pool (negative operands, zero divisors, floats, booleans, WHERE/PIECEWISE,
MIN/MAX, powers with huge exponents, floor/ceil/round, math functions,
values at the edge of 64 bits), with values for their int, float and bool
symbols, and each verdict (accepted iff the guard is true) is compared with
`reference`, a plain recursive reading of SPEC §11 written for this test.

Operations whose exact meaning Python cannot write in torch's guard
namespace (a rational, a power of floats, IS_NON_OVERLAPPING_AND_DENSE,
operands whose kind only a run tells) are printed as a guard that rejects
and says so; they are counted apart (`UNPRINTABLE`) and never counted as
agreeing. The load path itself (a file, `pt2format.load(...).module()` and
`load_module`) is held to the same reference in `test_loaded_guards_agree`.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
import torch
import torch.utils._pytree as pytree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.export._unlift import _convert_guards_code_to_fn

from pt2format._generated import model as m
from pt2format._symeval import UNKNOWN, EvalFailure, evaluate_pool
from pt2format.errors import LimitError
from pt2format.loaders._guard_text import guard_lines

K, O, SK = m.SymExprKind, m.SymOp, m.SymbolKind
LO, HI = -(1 << 63), (1 << 63) - 1
#: Input names and kinds of the drawn symbols: int inputs a, b, c, a float f and a bool p.
INPUTS = [("a", SK.INT), ("b", SK.INT), ("c", SK.INT), ("f", SK.FLOAT), ("p", SK.BOOL)]
EXAMPLES = 300
BATCH = 1000
STATS = {"drawn": 0, "accepted": 0, "rejected": 0, "unprintable": 0}


# -- drawing --------------------------------------------------------------------------------------------------------
INT_EDGES = [0, 1, -1, 2, 3, -7, 63, 64, 65, 1 << 31, 1 << 62, HI, LO, HI - 1, LO + 1, 4000, 10_000_000]
FLOAT_EDGES = [0.0, -0.0, 0.5, -1.5, 2.5, 1e300, -1e300, math.inf, -math.inf, math.nan, 709.0, 710.0, 1e-300, 3.0]


def _int(rnd):
    return rnd.choice(INT_EDGES) if rnd.random() < 0.4 else rnd.randint(-20, 20)


def _float(rnd):
    return rnd.choice(FLOAT_EDGES) if rnd.random() < 0.5 else round(rnd.uniform(-50, 50), rnd.randint(0, 3))


class Pool:
    def __init__(self, rnd, typos: bool = True):
        self.rnd, self.exprs, self.typos = rnd, [], typos

    def add(self, **kw) -> int:
        self.exprs.append(m.SymExpr(**kw))
        return len(self.exprs) - 1

    def apply(self, op, *args) -> int:
        return self.add(kind=K.APPLY, op=op, args=list(args))

    def leaf(self, kind) -> int:
        rnd = self.rnd
        if rnd.random() < 0.5:
            sym = {"i": rnd.choice([0, 1, 2]), "f": 3, "b": 4}[kind]
            return self.add(kind=K.SYMBOL, symbol=sym)
        if kind == "i":
            return self.add(kind=K.INTEGER, int_value=_int(rnd))
        if kind == "f":
            v = _float(rnd)
            if math.isinf(v) and rnd.random() < 0.5:
                return self.add(kind=K.POSITIVE_INFINITY if v > 0 else K.NEGATIVE_INFINITY)
            return self.add(kind=K.FLOAT, float_value=v)
        return self.add(kind=K.BOOLEAN, bool_value=rnd.random() < 0.5)

    def node(self, kind: str, depth: int) -> int:
        """A node whose value is of `kind` ('i', 'f', 'b'), now and then one of a wrong operand kind."""
        rnd = self.rnd
        if depth <= 0 or rnd.random() < 0.25:
            return self.leaf(kind)
        sub = lambda k: self.node(k if not self.typos or rnd.random() > 0.04 else rnd.choice("ifb"), depth - 1)  # noqa: E731
        num = lambda: sub(rnd.choice("iif"))  # noqa: E731
        if kind == "b":
            op = rnd.choice([*_CMPS, O.AND, O.OR, O.NOT, O.WHERE, O.BITWISE_AND, O.BITWISE_OR, O.PIECEWISE])
            if op in _CMPS:
                k = rnd.choice(["ii", "if", "ff", "bi" if self.typos else "ii", "ii"])
                return self.apply(op, sub(k[0]), sub(k[1]))
            if op in (O.AND, O.OR):
                return self.apply(op, *[sub("b") for _ in range(rnd.randint(1, 3))])
            if op == O.NOT:
                return self.apply(op, sub("b"))
            if op in (O.BITWISE_AND, O.BITWISE_OR):
                return self.apply(op, sub("b"), sub("b"))
            if op == O.WHERE:
                return self.apply(op, sub("b"), sub("b"), sub("b"))
            return self.apply(op, sub("b"), sub("b"), sub("b"), self.add(kind=K.BOOLEAN, bool_value=True))
        if kind == "i":
            op = rnd.choice([O.ADD, O.MUL, O.FLOOR_DIV, O.CLEAN_DIV, O.PYTHON_MOD, O.MOD, O.POW_BY_NATURAL, O.POW,
                             O.MIN, O.MAX, O.ABS, O.FLOOR_TO_INT, O.CEIL_TO_INT, O.ROUND_TO_INT, O.TRUNC_TO_INT,
                             O.FLOOR, O.CEILING, O.WHERE, O.PIECEWISE, O.MODULAR_INDEXING, O.BITWISE_XOR,
                             O.IDENTITY, O.MUL, O.ADD])
            if op in (O.ADD, O.MUL, O.MIN, O.MAX):
                return self.apply(op, *[sub("i") for _ in range(rnd.randint(1, 3))])
            if op in (O.FLOOR_DIV, O.CLEAN_DIV, O.PYTHON_MOD, O.MOD, O.BITWISE_XOR, O.POW_BY_NATURAL):
                return self.apply(op, sub("i"), sub("i"))
            if op == O.POW:  # an integer power: a natural constant exponent (others are rationals)
                return self.apply(op, sub("i"), self.add(kind=K.INTEGER, int_value=rnd.choice([0, 1, 2, 3, 63, 64,
                                                                                                    65, 1 << 40])))
            if op in (O.ABS, O.IDENTITY):
                return self.apply(op, sub("i"))
            if op == O.WHERE:
                return self.apply(op, sub("b"), sub("i"), sub("i"))
            if op == O.PIECEWISE:
                return self.apply(op, sub("i"), sub("b"), sub("i"), sub("b"))
            if op == O.MODULAR_INDEXING:
                return self.apply(op, sub("i"), sub("i"), sub("i"))
            return self.apply(op, num())
        op = rnd.choice([O.ADD, O.MUL, O.FLOAT_TRUE_DIV, O.INT_TRUE_DIV, O.TO_FLOAT, O.TRUNC_TO_FLOAT,
                         O.ROUND_DECIMAL, O.MIN, O.MAX, O.FLOOR_DIV, O.PYTHON_MOD, O.WHERE, *_MATHS])
        if op in (O.ADD, O.MUL):
            return self.apply(op, *[num() for _ in range(rnd.randint(2, 3))] + [sub("f")])
        if op in (O.MIN, O.MAX):
            return self.apply(op, sub("f"), sub("f"))
        if op in (O.FLOAT_TRUE_DIV, O.FLOOR_DIV, O.PYTHON_MOD):
            return self.apply(op, sub("f"), num())
        if op == O.INT_TRUE_DIV:
            return self.apply(op, sub("i"), sub("i"))
        if op == O.ROUND_DECIMAL:
            return self.apply(op, sub("f"), self.leaf("i"))
        if op == O.WHERE:
            return self.apply(op, sub("b"), sub("f"), sub("f"))
        return self.apply(op, num())


_CMPS = [O.EQ, O.NE, O.LT, O.LE, O.GT, O.GE]
_MATHS = [O.SQRT, O.EXP, O.LOG, O.LOG2, O.SIN, O.COS, O.TAN, O.ASIN, O.ACOS, O.ATAN, O.SINH, O.COSH, O.TANH,
          O.ASINH]


def draw_case(rnd, typos: bool = True):
    """(pool, symbols, values): a boolean guard (the pool's last node) and values for its five symbols.

    `typos`: now and then an operand of the wrong kind (an evaluation error of §11.4; torch never writes
    one, and sympy cannot build one). Pools over the structural bounds (degree, §11.6) are drawn again:
    validation refuses their files."""
    while True:
        pool = Pool(rnd, typos)
        pool.node("b", rnd.randint(1, 5))
        if pool.exprs[-1].kind != K.APPLY:  # the root must be the last node
            pool.apply(O.IDENTITY, len(pool.exprs) - 1)
        try:
            evaluate_pool(pool.exprs, [UNKNOWN] * len(INPUTS))
            break
        except LimitError:
            continue
    symbols = [m.Symbol(name=f"s{i}", kind=k, range=m.ValueRange()) for i, (_, k) in enumerate(INPUTS)]
    values = [_int(rnd), _int(rnd), _int(rnd), _float(rnd), rnd.random() < 0.5]
    return pool.exprs, symbols, values


# -- the reference: SPEC §11, read plainly -----------------------------------------------------------------------
class Reject(Exception):
    """An evaluation error or a 64-bit overflow: the guard rejects (SPEC §11.7)."""


def _fit(v):
    if isinstance(v, Fraction):
        if not (LO <= v.numerator <= HI and v.denominator <= HI):
            raise Overflow
        return v.numerator if v.denominator == 1 else v
    if isinstance(v, int) and not isinstance(v, bool) and not LO <= v <= HI:
        raise Overflow
    return v


def _need(v, *types):
    if isinstance(v, bool) and bool not in types:
        raise Reject("kind")
    if not isinstance(v, types):
        raise Reject("kind")
    return v


class Overflow(Exception):
    """A 64-bit overflow: a LimitError of the pool, whichever node it is in (§11.1, §11.6)."""


FAIL = object()


def reference(exprs, values) -> bool:
    """Whether the last node is true, by SPEC §11.1-11.4: one pass over the pool, every node evaluated; an
    evaluation error is a value (FAIL) that reaches only the nodes that use it (WHERE and PIECEWISE use only
    the chosen operand), a 64-bit overflow anywhere rejects."""
    vals = []

    def ev(i):
        v = vals[i]
        if v is FAIL:
            raise Reject("operand failed")
        return v

    def node(e):
        if e.kind == K.SYMBOL:
            return values[e.symbol]
        if e.kind == K.INTEGER:
            return e.int_value
        if e.kind == K.FLOAT:
            return e.float_value
        if e.kind == K.BOOLEAN:
            return e.bool_value
        if e.kind in (K.POSITIVE_INFINITY, K.NEGATIVE_INFINITY):
            return math.inf if e.kind == K.POSITIVE_INFINITY else -math.inf
        op, a = e.op, list(e.args)
        if op == O.WHERE:
            return ev(a[1]) if _need(ev(a[0]), bool) else ev(a[2])
        if op == O.PIECEWISE:
            for k in range(0, len(a), 2):
                if _need(ev(a[k + 1]), bool):
                    return ev(a[k])
            raise Reject("no condition")
        x = [ev(k) for k in a]
        num = (int, float)
        if op in (O.ADD, O.MUL):
            for v in x:
                _need(v, *num)
            if any(isinstance(v, float) for v in x):
                r = float(x[0])
                for v in x[1:]:
                    r = r + float(v) if op == O.ADD else r * float(v)
                return r
            r = x[0]
            for v in x[1:]:
                r = _fit(r + v if op == O.ADD else r * v)
            return r
        if op in _CMPS:
            return {O.EQ: x[0] == x[1], O.NE: x[0] != x[1], O.LT: x[0] < x[1], O.LE: x[0] <= x[1],
                    O.GT: x[0] > x[1], O.GE: x[0] >= x[1]}[op]
        if op in (O.AND, O.OR):
            for v in x:
                _need(v, bool)
            return all(x) if op == O.AND else any(x)
        if op == O.NOT:
            return not _need(x[0], bool)
        if op in (O.MIN, O.MAX):
            return (min if op == O.MIN else max)(x)
        if op == O.IDENTITY:
            return x[0]
        if op in (O.BITWISE_AND, O.BITWISE_OR, O.BITWISE_XOR):
            for v in x:
                _need(v, int, bool)
            return {O.BITWISE_AND: x[0] & x[1], O.BITWISE_OR: x[0] | x[1], O.BITWISE_XOR: x[0] ^ x[1]}[op]
        for v in x:
            _need(v, *num)
        if op in (O.FLOOR_DIV, O.CLEAN_DIV, O.PYTHON_MOD, O.MOD):
            if x[1] == 0:
                raise Reject("zero divisor")
            if isinstance(x[0], float) or isinstance(x[1], float):
                q, r = divmod(float(x[0]), float(x[1]))
            else:
                q, r = divmod(x[0], x[1])
            return _fit(q if op in (O.FLOOR_DIV, O.CLEAN_DIV) else r)
        if op in (O.POW_BY_NATURAL, O.POW):
            b, n = _need(x[0], int), _need(x[1], int)
            if n < 0:
                raise Reject("negative exponent")
            if n > 64 and abs(b) > 1:
                raise Overflow
            return _fit(b ** n)
        if op == O.ABS:
            return _fit(abs(x[0]))
        if op in (O.FLOOR_TO_INT, O.FLOOR, O.CEIL_TO_INT, O.CEILING, O.ROUND_TO_INT, O.TRUNC_TO_INT):
            if isinstance(x[0], int):
                return x[0]
            if not math.isfinite(x[0]):
                raise Reject("not finite")
            fn = {O.FLOOR_TO_INT: math.floor, O.FLOOR: math.floor, O.CEIL_TO_INT: math.ceil, O.CEILING: math.ceil,
                  O.ROUND_TO_INT: round, O.TRUNC_TO_INT: math.trunc}[op]
            return _fit(fn(x[0]))
        if op == O.MODULAR_INDEXING:
            for v in x:
                _need(v, int)
            if x[1] == 0 or x[2] == 0:
                raise Reject("zero divisor")
            return _fit((x[0] // x[1]) % x[2])
        if op == O.INT_TRUE_DIV:
            if x[1] == 0:
                raise Reject("zero divisor")
            return _need(x[0], int) / _need(x[1], int)
        if op == O.FLOAT_TRUE_DIV:
            if float(x[1]) == 0.0:
                raise Reject("zero divisor")
            return float(x[0]) / float(x[1])
        if op == O.TO_FLOAT:
            return float(x[0])
        if op == O.TRUNC_TO_FLOAT:
            f = float(x[0])
            return float(math.trunc(f)) if math.isfinite(f) else f
        if op == O.ROUND_DECIMAL:
            return round(float(x[0]), _need(x[1], int))
        fn = getattr(math, O(op).name.lower())
        try:
            return fn(float(x[0]))
        except ValueError:
            raise Reject("domain") from None
        except OverflowError:  # exp, sinh, cosh: infinity (§11.4)
            return -math.inf if op == O.SINH and x[0] < 0 else math.inf

    try:
        for e in exprs:
            try:
                vals.append(node(e))
            except Reject:
                vals.append(FAIL)
    except Overflow:
        return False
    return vals[-1] is True


# -- the evaluators ----------------------------------------------------------------------------------------------
PATHS = [(pytree.MappingKey(name),) for name, _ in INPUTS]
NAMES = {i: "L" + pytree.keystr(p) for i, p in enumerate(PATHS)}


def printed(exprs, symbols) -> list[str]:
    return guard_lines(exprs, symbols, NAMES, [len(exprs) - 1])


def torch_verdict(lines, values) -> bool:
    """Accepted by the guard function torch's module() compiles from these `_guards_code` lines."""
    fn = _convert_guards_code_to_fn(lines, PATHS)
    try:
        fn(*values)
    except Exception as e:  # noqa: BLE001 - any exception of the guard function rejects the call
        # a name torch's namespace lacks, or text that is not Python, is a bug of the printer, not a verdict
        assert not isinstance(e, (NameError, AttributeError, SyntaxError)), e
        return False
    return True


def symeval_verdict(exprs, values) -> bool:
    try:
        v = evaluate_pool(exprs, values)[-1]
    except LimitError:
        return False
    assert v is not UNKNOWN
    return v is True and not isinstance(v, EvalFailure)


def _unprintable(lines) -> bool:
    return any("cannot evaluate exactly" in line for line in lines)


def check(exprs, symbols, values) -> bool:
    """Asserts the three in-process verdicts agree; False when the guard is unprintable (counted apart)."""
    lines = printed(exprs, symbols)
    want = reference(exprs, values)
    STATS["drawn"] += 1
    if _unprintable(lines):
        STATS["unprintable"] += 1
        assert torch_verdict(lines, values) is False
        return False
    STATS["accepted" if want else "rejected"] += 1
    got = torch_verdict(lines, values), symeval_verdict(exprs, values)
    assert got == (want, want), f"reference {want}, torch guard {got[0]}, _symeval {got[1]}\n{lines}\n{values}"
    return True


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.integers(0, 1 << 32))
def test_printed_guards_mean_what_the_evaluators_mean(seed):
    # a seeded Random, not st.randoms(): hypothesis' own draws lean to small values, and the edges of
    # 64 bits are what this test is about
    check(*draw_case(random.Random(seed)))


def test_the_draw_reaches_both_verdicts_and_prints_most_guards():
    rnd = random.Random(7)
    printable = sum(check(*draw_case(rnd)) for _ in range(300))
    assert printable > 240, STATS
    assert STATS["accepted"] > 30 and STATS["rejected"] > 30, STATS


# -- the other readers, one process each ----------------------------------------------------------------------------
def _batch_file(path, cases):
    from pt2f_samples import write_raw

    programs = [m.Program(name=f"g{n}", symbols=symbols, sym_exprs=exprs) for n, (exprs, symbols, _) in enumerate(cases)]
    write_raw(path, m.Package(format_version=m.FormatVersion(1, 1), programs=programs), [])


def _value_text(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _verdicts(lines: list[str]) -> list[bool]:
    return [line.strip() == "True" for line in lines]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    rnd = random.Random(11)
    cases = [draw_case(rnd) for _ in range(BATCH)]
    path = tmp_path_factory.mktemp("guards") / "guards.pt2f"
    _batch_file(path, cases)
    return path, cases


def test_cpp_evaluator_agrees(batch):
    import native_util_cpp as U

    why = U.missing_toolchain()
    if why:
        pytest.skip(f"C++ toolchain missing: {why}")
    exe = U.build("release") / "pt2f-symeval"
    path, cases = batch
    stdin = "".join(f"g{n} " + " ".join(f"s{i}={_value_text(v)}" for i, v in enumerate(values)) + "\n"
                    for n, (_, _, values) in enumerate(cases))
    r = subprocess.run([str(exe), str(path), "-"], input=stdin.encode(), capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = _verdicts(r.stdout.decode().splitlines())
    want = [reference(exprs, values) for exprs, _, values in cases]
    bad = [n for n, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    assert not bad, [(n, got[n], want[n], cases[n][2]) for n in bad[:5]]


def test_ts_evaluator_agrees(batch):
    import native_util_ts as T

    why = T.missing_toolchain()
    if why:
        pytest.skip(f"TypeScript toolchain missing: {why}")
    T.build()
    path, cases = batch
    kinds = "iiifb"
    stdin = "".join(json.dumps({"program": f"g{n}", "values": [[k, _value_text(v)] for k, v in zip(kinds, values)]})
                    + "\n" for n, (_, _, values) in enumerate(cases))
    driver = Path(__file__).resolve().parents[1] / "support" / "guard_eval_ts.mjs"
    r = subprocess.run(["node", str(driver), str(T.TS_DIR / "dist"), str(path)], input=stdin.encode(),
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = _verdicts(r.stdout.decode().splitlines())
    want = [reference(exprs, values) for exprs, _, values in cases]
    bad = [n for n, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    assert not bad, [(n, got[n], want[n], cases[n][2]) for n in bad[:5]]


def test_a_power_of_a_constant_exponent_reads_as_torchs_product(tmp_path):
    """torch prints sympy's Pow(s, 2) as `s*s` in its guard code, and its guard messages quote that text:
    a rejected input names the guard exactly as the exported program's module() does."""
    import warnings

    import pt2format
    from conformance import corpus

    prog = corpus.get_case("torch_test.export_statically_known_true").build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = prog.export()
        pt2format.save(ep, tmp_path / "p.pt2f", progress=False)
        loaded = pt2format.load(tmp_path / "p.pt2f")
    (args, kwargs), = prog.invalid_inputs
    messages = []
    for module in (ep.module(), loaded.module()):
        with pytest.raises(AssertionError) as e:
            module(*args, **kwargs)
        messages.append(str(e.value))
    assert "*" in messages[0] and "**" not in messages[0]  # the case still holds a squared size
    assert messages[1] == messages[0]
