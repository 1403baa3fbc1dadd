"""The expression pool is a graph: shared subexpressions end safe in every consumer (SPEC.md §11.6, issue 21).

`Max(e, e)` chained 30 deep, or `e(k+1) = e(k) + e(k)*u0` with u0 unbacked, is
a few hundred bytes of pool and a tree of 2^30 nodes. Before the expanded-size
bound, the viewer's text doubled per level, `print(ep)` and `load` hung at 24
levels (sympy walks its trees without a memo) and `load_module` at 32. Now a
file deeper than the bound is a LimitError in every entry point, before any of
them walks anything, and a file under the bound works, its values equal to
torch's own.
"""

from __future__ import annotations

import random
import time

import pytest

import pt2format
from pt2format._generated import model as m
from pt2format._symeval import MAX_SYM_EXPANDED_SIZE, MAX_SYM_FILE_EXCESS, evaluate_pool, expanded_sizes
from tests.security import pool_cost as C

K, O = m.SymExprKind, m.SymOp


@pytest.fixture(scope="module")
def base():
    return C._base()


def _deepest_under_bound(shape: str) -> int:
    d = 0
    while C.expanded_size(shape, d + 1) <= MAX_SYM_EXPANDED_SIZE:
        d += 1
    return d


# ---------------------------------------------------------------------------
# The expanded size itself
# ---------------------------------------------------------------------------

def _tree_size(pool, i) -> int:
    """The expanded size by walking the tree (exponential: small pools only), as SPEC.md §11.6 defines it."""
    e = pool[i]
    return 1 if e.kind != K.APPLY else 1 + sum(_tree_size(pool, a) for a in e.args)


def test_expanded_size_is_the_tree_size_on_random_pools():
    rng = random.Random(21)
    for _ in range(200):
        pool = [m.SymExpr(kind=K.SYMBOL, symbol=0), m.SymExpr(kind=K.INTEGER, int_value=3)]
        for _ in range(rng.randrange(1, 14)):
            args = [rng.randrange(len(pool)) for _ in range(rng.randrange(1, 4))]
            pool.append(m.SymExpr(kind=K.APPLY, op=rng.choice([O.ADD, O.MUL, O.MAX, O.MIN]), args=args))
        want = [_tree_size(pool, i) for i in range(len(pool))]
        assert expanded_sizes(pool, cap=1 << 40) == want
        assert expanded_sizes(pool, cap=50) == [min(w, 50) for w in want]


def test_expanded_size_bound_is_exact_and_linear():
    """The bound refuses the first node over it, and not one under it; 10^5 levels cost one linear pass."""
    pool = [m.SymExpr(kind=K.SYMBOL, symbol=0)]
    for _ in range(11):
        pool.append(m.SymExpr(kind=K.APPLY, op=O.MAX, args=[len(pool) - 1, len(pool) - 1]))
    assert expanded_sizes(pool)[-1] == 2 ** 12 - 1 <= MAX_SYM_EXPANDED_SIZE
    evaluate_pool(pool, [4])  # 4095 nodes of tree: accepted
    pool.append(m.SymExpr(kind=K.APPLY, op=O.IDENTITY, args=[len(pool) - 1]))  # 4096: accepted
    evaluate_pool(pool, [4])
    pool.append(m.SymExpr(kind=K.APPLY, op=O.ADD, args=[len(pool) - 1, 0]))  # 4098: refused
    with pytest.raises(pt2format.LimitError, match=r"expanded size is too large") as err:
        evaluate_pool(pool, [4])
    assert err.value.path == f"sym_exprs[{len(pool) - 1}]" and err.value.expected == f"<= {MAX_SYM_EXPANDED_SIZE}"

    deep = [m.SymExpr(kind=K.SYMBOL, symbol=0)]
    for _ in range(100_000):
        deep.append(m.SymExpr(kind=K.APPLY, op=O.MAX, args=[len(deep) - 1, len(deep) - 1]))
    t0 = time.perf_counter()
    sizes = expanded_sizes(deep)
    assert time.perf_counter() - t0 < 5 and max(sizes) == MAX_SYM_EXPANDED_SIZE + 1


# ---------------------------------------------------------------------------
# The four blow-ups, over the bound: a LimitError, fast, in every entry point
# ---------------------------------------------------------------------------

BLOWUPS = [("sym_int", "max"), ("size", "mul_add"), ("range_constraint", "max"), ("size", "max")]


@pytest.mark.parametrize("field,shape", BLOWUPS)
def test_over_the_bound_every_entry_point_refuses_fast(base, tmp_path, field, shape):
    path = C.build_file(base, field, shape, 30, tmp_path / "deep.pt2f")
    for what, call in [("validate", pt2format.validate), ("read", pt2format.read), ("load", pt2format.load),
                       ("load_module", pt2format.load_module)]:
        t0 = time.perf_counter()
        with pytest.raises(pt2format.LimitError, match="expanded size is too large") as err:
            call(path)
        assert time.perf_counter() - t0 < 5, what
        assert "sym_exprs[" in err.value.path, (what, err.value.path)


# ---------------------------------------------------------------------------
# Under the bound: everything works, with torch's values
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["max", "mul_add"])
def test_deepest_expression_under_the_bound_loads_prints_and_runs(base, tmp_path, shape):
    import sympy
    import torch

    d = _deepest_under_bound(shape)
    path = C.build_file(base, "range_constraint", shape, d, tmp_path / "under.pt2f")
    pt2format.validate(path)
    t0 = time.perf_counter()
    ep = pt2format.load(path)
    text = str(ep)  # print(ep)
    readable = ep.module().print_readable(print_output=False)
    mod = pt2format.load_module(path)
    assert time.perf_counter() - t0 < 60
    # The constraint is torch's expression, built by torch's own constructors: compare with one built here.
    syms = {str(x): x for k in ep.range_constraints for x in k.free_symbols}
    s = next(v for k, v in syms.items() if k.startswith("s"))
    e = s
    for _ in range(d):
        e = torch.utils._sympy.functions.Max(e, e) if shape == "max" else e + e * syms["u0"]
    assert e in ep.range_constraints, (e, list(ep.range_constraints))
    assert isinstance(text, str) and readable
    x, k = torch.randn(3, 5), torch.tensor(4)
    got, want = mod(x, k), ep.module()(x, k)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    if shape == "mul_add":
        assert sympy.srepr(e).count("u0") == 2 ** d - 1  # the tree torch holds is the expanded one


@pytest.mark.parametrize("field", ["size", "sym_int", "storage_offset", "stride", "sym_bool"])
def test_shared_expression_in_every_field_under_the_bound_ends_safe(base, tmp_path, field):
    """Loaded, or refused with a typed error; never a hang or an untyped error. A field used more than once
    (a size and the stride it makes) spends the file's budget more than once (SPEC.md §11.6)."""
    info: dict = {}
    path = C.build_file(base, field, "mul_add", _deepest_under_bound("mul_add"), tmp_path / "f.pt2f", info=info)
    if info["spent"] > MAX_SYM_FILE_EXCESS:
        with pytest.raises(pt2format.LimitError, match="too large in total"):
            pt2format.validate(path)
        return
    pt2format.validate(path)
    t0 = time.perf_counter()
    try:
        ep = pt2format.load(path)
        str(ep)
    except pt2format.Pt2FormatError:
        pass
    assert time.perf_counter() - t0 < 60


def test_a_shared_meta_spends_the_budget_at_every_value_that_uses_it(base, tmp_path):
    """One TensorMeta object written once and referenced by several values (pt2f_shared) is charged per value,
    as its copies would be: an expression that one use may make is refused when the meta's users are many."""
    depth = _deepest_under_bound("mul_add")
    alone, shared = {}, {}
    C.build_file(base, "storage_offset", "mul_add", depth, tmp_path / "alone.pt2f", info=alone)
    path = C.build_file(base, "storage_offset", "mul_add", depth, tmp_path / "shared.pt2f", info=shared,
                        keep_shared=True)
    assert alone["uses"] == 1 and shared["uses"] > 1
    assert alone["spent"] <= MAX_SYM_FILE_EXCESS < shared["spent"]  # the case: only the sharing crosses the bound
    pt2format.validate(tmp_path / "alone.pt2f")
    from crafting import decode_file

    tree = decode_file(path)[0]  # decoded without validation
    tvs = tree.programs[0].graph.tensor_values
    assert sum(tv.meta is tvs[0].meta for tv in tvs) == shared["uses"]  # written once, read as one object
    with pytest.raises(pt2format.LimitError, match="too large in total"):
        pt2format.validate(path)


# ---------------------------------------------------------------------------
# The same refusal, in the same words, from every reader
# ---------------------------------------------------------------------------

@pytest.mark.native
@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
def test_every_reader_refuses_the_invalid_corpus_entry_alike(encoding):
    """conformance/invalid/sym_expanded_size-*: Python, C++ (pt2f-dump) and TypeScript (cli.js dump) give the
    same LimitError, naming the same node, with the same message, expected and got."""
    path = C.ROOT / "conformance" / "invalid" / f"sym_expanded_size-{encoding}.pt2f"
    tail = _every_reader_refuses(path, r"at (programs\[0\]\.sym_exprs\[\d+\]: .*)$")
    assert "expanded size is too large" in tail


def _every_reader_refuses(path, where: str) -> str:
    """The Python LimitError's tail (matched by `where`), which the C++ and TypeScript dumps must end with."""
    import re
    import subprocess

    import native_util_cpp
    import native_util_ts

    for util in (native_util_cpp, native_util_ts):
        why = util.missing_toolchain()
        if why:
            pytest.fail(f"the native readers are needed: {why}")
    cpp = native_util_cpp.build() / "pt2f-dump"
    native_util_ts.build()
    with pytest.raises(pt2format.LimitError) as err:
        pt2format.validate(path)
    tail = re.search(where, str(err.value)).group(1)
    for cmd in ([str(cpp), str(path)], ["node", str(native_util_ts.CLI), "dump", str(path)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        line = r.stderr.strip().splitlines()[-1]
        assert r.returncode != 0 and "LimitError" in line and line.endswith(tail), (cmd[0], line, tail)
    return tail


# ---------------------------------------------------------------------------
# Linear independent of the bound: conversion to sympy builds each pool node once
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["max", "mul_add"])
def test_conversion_to_sympy_builds_each_node_once(monkeypatch, shape):
    """60 levels (a 2^60 tree; the bound lifted): every pool node becomes one sympy object, built once."""
    import pt2format._symeval as S
    from pt2format.loaders._symbols import ShapeBuilder

    monkeypatch.setattr(S.evaluate_pool, "__kwdefaults__", {**S.evaluate_pool.__kwdefaults__, "max_size": 1 << 80})
    symbols = [m.Symbol(name="s0", kind=m.SymbolKind.INT, hint=4, has_hint=True, positive=True),
               m.Symbol(name="u0", kind=m.SymbolKind.INT)]
    pool = [m.SymExpr(kind=K.SYMBOL, symbol=0), m.SymExpr(kind=K.SYMBOL, symbol=1)]
    e = 0
    for _ in range(60 if shape == "max" else 62):  # mul_add: degree 63, under the degree bound
        if shape == "max":
            pool.append(m.SymExpr(kind=K.APPLY, op=O.MAX, args=[e, e]))
        else:
            pool.append(m.SymExpr(kind=K.APPLY, op=O.MUL, args=[e, 1]))
            pool.append(m.SymExpr(kind=K.APPLY, op=O.ADD, args=[e, len(pool) - 1]))
        e = len(pool) - 1
    program = m.Program(name="p", symbols=symbols, sym_exprs=pool)
    builder = ShapeBuilder(program)
    made = []
    real = builder._make
    monkeypatch.setattr(builder, "_make", lambda j, node: made.append(j) or real(j, node))
    t0 = time.perf_counter()
    root = builder.expr(e)
    assert time.perf_counter() - t0 < 20
    reachable, todo = set(), [e]
    while todo:
        j = todo.pop()
        if j not in reachable:
            reachable.add(j)
            todo.extend(pool[j].args or ())
    assert sorted(made) == sorted(reachable)  # each node it needs, once
    assert root is builder.expr(e) and builder.hint(e) == (4 if shape == "max" else None)


# ---------------------------------------------------------------------------
# The file's budget: the same refusal from every reader
# ---------------------------------------------------------------------------

@pytest.mark.native
@pytest.mark.parametrize("field", ["size", "sym_bool"])
def test_every_reader_refuses_a_file_over_its_budget_alike(base, tmp_path, field):
    """Each expression under the bound, the file over its budget (SPEC.md §11.6): Python, C++ (pt2f-dump) and
    TypeScript (cli.js dump) give the same LimitError, naming the same use, with the same message."""
    info: dict = {}
    path = C.build_file(base, field, "mul_add", _deepest_under_bound("mul_add"), tmp_path / "over.pt2f", info=info)
    assert info["spent"] > MAX_SYM_FILE_EXCESS
    tail = _every_reader_refuses(path, r"at (programs\[0\]\.\S+: .*)$")
    assert "too large in total" in tail
