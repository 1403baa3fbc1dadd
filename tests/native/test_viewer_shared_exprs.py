"""The viewer's expression text is linear in the pool: shared subexpressions are shown by name (issue 21).

`Max(e, e)` chained 40 deep once made the page build a 2^40-character string
(`RangeError: Invalid string length`). The viewer's `SymText` now shows a
long or shared operand as `e<index>` and defines it once in the program's
"shared expressions" table. These tests run `SymText` itself (bundled from
loaders/ts/viewer/src/model.ts with the viewer's esbuild) on pools far over
the reader's bound, where nothing else stops the doubling, and the page in
headless Chromium on a file under the bound, against torch's expression.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

import native_util_ts as U
import viewer_driver as D

pytestmark = [pytest.mark.native, pytest.mark.xdist_group("ts_reader")]

ENTRY = """
import { SymText } from '../src/model.ts';
import { readFileSync } from 'node:fs';
const { exprs, symbols, show } = JSON.parse(readFileSync(0, 'utf8'));
const t0 = performance.now();
const st = new SymText(exprs, symbols);
const texts = show.map((i) => st.text(i));
const shared = st.shared();
process.stdout.write(JSON.stringify({ texts, shared, ms: performance.now() - t0 }));
"""


@pytest.fixture(scope="module")
def symtext(tmp_path_factory):
    why = U.missing_toolchain()
    if why:
        pytest.skip(why)
    U.build()
    out = tmp_path_factory.mktemp("symtext")
    # The entry goes to esbuild on stdin, resolved as if it sat in tools/ (for the relative import):
    # nothing is written into the source tree; the bundle goes to `out`.
    bundle = out / "symtext.mjs"
    stdin = {"contents": ENTRY, "resolveDir": str(D.VIEWER / "tools"), "loader": "ts", "sourcefile": "symtext-entry.ts"}
    r = subprocess.run(["node", "-e", f"require('esbuild').buildSync({{stdin: {json.dumps(stdin)}, "
                        f"bundle: true, platform: 'node', format: 'esm', outfile: {json.dumps(str(bundle))}, "
                        "logLevel: 'error'})"], cwd=D.VIEWER, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr

    def run(exprs, symbols, show):
        r = subprocess.run(["node", str(bundle)], input=json.dumps({"exprs": exprs, "symbols": symbols,
                                                                     "show": show}),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout)

    return run


def _chain(depth: int, shape: str):
    """Pool JSON (the viewer's tree form): s0, u0, then e(k+1) = Max(e, e) or e + e*u0."""
    exprs = [{"kind": "SYMBOL", "symbol": 0}, {"kind": "SYMBOL", "symbol": 1}]
    e = 0
    for _ in range(depth):
        if shape == "max":
            exprs.append({"kind": "APPLY", "op": "MAX", "args": [e, e]})
        else:
            exprs.append({"kind": "APPLY", "op": "MUL", "args": [e, 1]})
            exprs.append({"kind": "APPLY", "op": "ADD", "args": [e, len(exprs) - 1]})
        e = len(exprs) - 1
    return exprs, [{"name": "s0"}, {"name": "u0"}], e


def _expand(text: str, defs: dict, depth_left: int = 64) -> str:
    """Replaces every name e<i> by its definition (the reader of the page would), recursively."""
    def sub(m):
        return "(" + _expand(defs[m.group(0)], defs, depth_left - 1) + ")"
    assert depth_left > 0
    return re.sub(r"\be\d+\b", sub, text)


@pytest.mark.parametrize("shape", ["max", "mul_add"])
def test_names_stand_for_exactly_the_tree(symtext, shape):
    """Expanding the names gives back the whole tree: as many symbol occurrences as the tree has leaves."""
    depth = 12
    exprs, symbols, root = _chain(depth, shape)
    out = symtext(exprs, symbols, [root])
    defs = {x["name"]: x["expr"] for x in out["shared"]}
    assert all(len(x["expr"]) <= 200 for x in out["shared"]) and len(out["texts"][0]) <= 200
    full = _expand(out["texts"][0], defs)
    leaves = 2 ** depth if shape == "max" else None
    if shape == "max":
        assert full.count("s0") == leaves
    else:  # e(k) = e(k-1) + e(k-1)*u0: s0 occurs 2^k times, u0 2^k - 1 times
        assert full.count("s0") == 2 ** depth and full.count("u0") == 2 ** depth - 1


@pytest.mark.parametrize("shape", ["max", "mul_add"])
def test_text_is_linear_far_over_the_bound(symtext, shape):
    """40 levels (a 2^40 tree) and 20,000 levels: text and time proportional to the pool."""
    for depth in (40, 20_000):
        exprs, symbols, root = _chain(depth, shape)
        t0 = time.perf_counter()
        out = symtext(exprs, symbols, [root, root - 1])
        total = sum(len(t) for t in out["texts"]) + sum(len(x["expr"]) + len(x["name"]) for x in out["shared"])
        assert total <= 100 * len(exprs), (depth, total)
        assert time.perf_counter() - t0 < 30


def test_small_expressions_stay_inline(symtext):
    """A program's usual expressions (2*s0, s0 + 1 used twice) read as before: no names."""
    exprs = [{"kind": "SYMBOL", "symbol": 0}, {"kind": "INTEGER", "int_value": 2},
             {"kind": "APPLY", "op": "MUL", "args": [1, 0]}, {"kind": "INTEGER", "int_value": 1},
             {"kind": "APPLY", "op": "ADD", "args": [2, 3]}, {"kind": "APPLY", "op": "MAX", "args": [4, 4]}]
    out = symtext(exprs, [{"name": "s0"}], [2, 4, 5])
    assert out["texts"] == ["2*s0", "2*s0 + 1", "Max(2*s0 + 1, 2*s0 + 1)"] and out["shared"] == []


def test_page_under_the_bound_shows_names_torch_agrees(tmp_path):
    """The page, in headless Chromium, for e + e*u0 at the deepest depth under the bound, in a range constraint."""
    import sympy

    import pt2format
    from tests.security import pool_cost as C

    exe = D.chromium_or_skip()
    U.build()
    depth = 10
    path = C.build_file(C._base(), "range_constraint", "mul_add", depth, tmp_path / "shared.pt2f")
    ep = pt2format.load(path)
    want = max(ep.range_constraints, key=lambda k: sympy.count_ops(k, visual=False))
    page = D.view(path, tmp_path / "shared.html")
    out = D.drive(exe, page, [{"do": "info"}, {"do": "state"}])
    info = out["results"][1]["info"]
    assert len(info) < 40_000, len(info)
    # The info panel's tables, one row a line, cells separated by tabs.
    table, rows = None, {}
    for line in info.splitlines():
        m = re.match(r"^(.*) \(\d+\)$", line)
        if m:
            table = m.group(1)
            continue
        if table and "\t" in line:
            rows.setdefault(table, []).append(line.split("\t"))
    defs = {name: expr for name, expr in rows["shared expressions"][1:]}
    assert defs and all(len(x) <= 200 for x in defs.values()), defs
    constraints = {expr: rng for expr, rng in rows["range constraints"][1:]}
    # torch's expression (the one with the most operations) against the page's, names expanded: the same
    # number of occurrences of each symbol, and the range unbounded as the file says.
    s = next(str(x) for x in want.free_symbols if str(x).startswith("s"))
    page_expr, page_range = max(constraints.items(), key=lambda kv: len(_expand(kv[0], defs)))
    full = _expand(page_expr, defs)
    assert full.count(s) == sympy.srepr(want).count(f"'{s}'") == 2 ** depth
    assert full.count("u0") == sympy.srepr(want).count("'u0'") == 2 ** depth - 1
    assert page_range == "[-oo, oo]"
