"""Work of every consumer on files of growing size that spend their expanded-size budget (SPEC.md §11.6).

The per-expression bound caps one tree walk, not how many there are: a file
whose every tensor size uses an expression near the bound costs torch's
printer and fake-tensor code thousands of steps per use. The file's budget
(every pool node and use 16 for free, the excess at most 2^14 per file) is
meant to make that work linear in the file with a small constant. This
measures it without knowing the consumers: operations, not time (the number
of Python and C function calls the consumer makes, counted with
sys.setprofile), so that it is not a timed test.

Files: a program with n chained adds on a tensor with a dynamic dimension s
(its sizes and strides use s about 2n times), in four variants:

* `plain`: as exported (every use is the symbol: expanded size 1);
* `free`: every use of s replaced by the largest shared expression that is
  free (`e + e*s` chained to expanded size 13 <= SYM_FREE_SIZE);
* `spend`: every use replaced by the deepest chain the budget admits for
  this file (deep for small files, shallower as n grows);
* `over`: every use replaced by a chain at the per-expression bound, which
  the budget refuses for every n (without the budget: about 4000 steps per
  use).

Rules, per consumer: the `over` file is refused with the budget's
LimitError by every reader, at no more work than reading the `plain` one
(x2); for the `free` files the work added per byte of file from the
smallest to the largest n is at most SYM_FREE_SIZE times the `plain` files'
(a use walks at most SYM_FREE_SIZE nodes where a plain use walks one), and
no work more than doubles (plus 25%) when n doubles. The `spend` files are
not a growing family (their expressions shrink as n grows): they are
printed, and must load and print; what they add is the allowance's work,
the same for every n.

    python -m tests.security.file_cost                  # n = 8, 16, 32, 64, 128: the figures
    python -m tests.security.file_cost --ns 16,32 --variants plain,free,over   # what CI runs (test_file_cost.py)
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("plain", "free", "spend", "over")
CONSUMERS = ("read", "validate", "load", "print_ep", "module", "print_readable", "call", "load_module")
READERS = ("read", "validate", "load", "load_module")
NS = (8, 16, 32, 64, 128)
#: The work added per byte may grow by at most this factor over the plain files' (SYM_FREE_SIZE: see above).
DOUBLING_SLACK = 1.25


# ---------------------------------------------------------------------------
# Files (child side: needs torch)
# ---------------------------------------------------------------------------

def _program(n: int):
    import warnings

    import torch

    from pt2format.exporter import export_package

    class M(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.n = n

        def forward(self, x):
            y = x
            for _ in range(self.n):
                y = y + 1
            return y

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(M(n), (torch.randn(3, 5),), dynamic_shapes={"x": {1: torch.export.Dim("b", min=2,
                                                                                                         max=64)}})
    pkg, payloads = export_package(ep)
    return pkg, [bytes(p) for p in payloads]


def _uses(prog, i: int) -> list:
    """Every SymInt of the graph that uses pool node `i`."""
    out = []
    for tv in prog.graph.tensor_values:
        out += [s for s in list(tv.meta.sizes) + list(tv.meta.strides) + [tv.meta.storage_offset]
                if s is not None and s.expr == i]
    return out


def build(n: int, variant: str, path: Path) -> dict:
    """Writes variant `variant` of the n-add program to `path` (without the writer's validation); returns
    {bytes, uses, depth, spent}, `spent` counted by tests.security.pool_cost.budget_spent (tree sizes)."""
    from unittest import mock

    from pt2format._api import write_package
    from pt2format._generated import model as m
    from pt2format._symeval import MAX_SYM_EXPANDED_SIZE, MAX_SYM_FILE_EXCESS, SYM_FREE_SIZE
    from tests.security.pool_cost import budget_spent, expanded_size

    pkg0, data = _program(n)
    K, O = m.SymExprKind, m.SymOp
    base_pool = len(pkg0.programs[0].sym_exprs)

    def make(depth):
        pkg = copy.deepcopy(pkg0)
        prog = pkg.programs[0]
        s = next(i for i, e in enumerate(prog.sym_exprs) if e.kind == K.SYMBOL)
        uses = _uses(prog, s)
        e = s
        for _ in range(depth):  # e + e*s: sympy keeps it (Max(e, e) it would fold to e)
            prog.sym_exprs.append(m.SymExpr(kind=K.APPLY, op=O.MUL, args=[e, s]))
            prog.sym_exprs.append(m.SymExpr(kind=K.APPLY, op=O.ADD, args=[e, len(prog.sym_exprs) - 1]))
            e = len(prog.sym_exprs) - 1
        for u in uses:
            u.expr = e
        return pkg, len(uses), budget_spent(prog.sym_exprs, {e: len(uses)})

    def deepest(ok):
        d = 0
        while ok(d + 1):
            d += 1
        return d

    if variant == "plain":
        depth = 0
    elif variant == "free":
        depth = deepest(lambda d: expanded_size("mul_add", d) <= SYM_FREE_SIZE)
    elif variant == "spend":
        depth = deepest(lambda d: expanded_size("mul_add", d) <= MAX_SYM_EXPANDED_SIZE
                        and make(d)[2] <= MAX_SYM_FILE_EXCESS)
    else:
        depth = deepest(lambda d: expanded_size("mul_add", d) <= MAX_SYM_EXPANDED_SIZE)
    pkg, uses, spent = make(depth)
    assert len(pkg.programs[0].sym_exprs) == base_pool + 2 * depth
    with mock.patch("pt2format._api.validate_package", lambda *a, **k: None):
        write_package(path, pkg, data, fsync=False)
    return {"bytes": path.stat().st_size, "uses": uses, "depth": depth, "size": expanded_size("mul_add", depth),
            "spent": spent}


# ---------------------------------------------------------------------------
# Consumers and the operation count (child side)
# ---------------------------------------------------------------------------

def _consumers(path: Path, state: dict) -> dict:
    import torch

    import pt2format

    def loaded():
        state["ep"] = pt2format.load(path)

    def module():
        state["mod"] = state["ep"].module()

    return {
        "read": lambda: pt2format.read(path).close(),
        "validate": lambda: pt2format.validate(path),
        "load": loaded,
        "print_ep": lambda: str(state["ep"]),
        "module": module,
        "print_readable": lambda: state["mod"].print_readable(print_output=False),
        "call": lambda: state["mod"](torch.randn(3, 5)),
        "load_module": lambda: pt2format.load_module(path),
    }


def count_ops(fn) -> tuple[int, object]:
    """(Python and C function calls made by fn(), its result or the exception it raised)."""
    n = 0

    def prof(frame, event, arg):
        nonlocal n
        if event == "call" or event == "c_call":
            n += 1

    sys.setprofile(prof)
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - reported; the parent judges it
        r = e
    finally:
        sys.setprofile(None)
    return n, r


def _clear_caches() -> None:
    """Empties sympy's cache and every functools cache of torch's symbolic-shape and sympy modules."""
    import sympy

    sympy.core.cache.clear_cache()
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith(("torch.fx.experimental", "torch.utils._sympy", "torch._subclasses",
                                               "torch._prims_common", "torch.fx.passes")):
            continue
        for obj in list(vars(mod).values()):
            clear = getattr(obj, "cache_clear", None)
            if callable(clear):
                clear()


def child(spec: dict) -> int:
    import torch

    from pt2format.errors import Pt2FormatError

    torch.set_num_threads(1)
    tmp = Path(spec["dir"])
    # The first (warm-up) pass: small files, so that imports and first-call set-up (sympy's and torch's modules
    # for the first non-trivial expression) are not counted against the first measured file.
    warm = [v for v in ("plain", "free") if v in spec["variants"]]
    for n, variants in [(2, warm)] + [(n, spec["variants"]) for n in spec["ns"]]:
        for variant in variants:
            path = tmp / f"{variant}-{n}.pt2f"
            info = build(n, variant, path)
            state: dict = {}
            cons = _consumers(path, state)
            _clear_caches()  # a file's expressions are not already built and reasoned about by an earlier file
            for name in spec["consumers"]:
                if name not in ("read", "validate", "load", "load_module") and "ep" not in state:
                    outcome, ops = "skipped: not loaded", 0
                elif name in ("print_readable", "call") and "mod" not in state:
                    outcome, ops = "skipped: no module", 0
                else:
                    ops, r = count_ops(cons[name])
                    outcome = (f"typed: {type(r).__name__}: {str(r)[:200]}" if isinstance(r, Pt2FormatError) else
                               f"untyped: {type(r).__name__}: {str(r)[:200]}" if isinstance(r, Exception) else "ok")
                print(json.dumps({"n": n, "variant": variant, "consumer": name, "ops": ops, "outcome": outcome,
                                  "warm_up": variants is warm, **info}), flush=True)
    return 0


# ---------------------------------------------------------------------------
# Parent: run and judge
# ---------------------------------------------------------------------------

def run(ns=NS, variants=VARIANTS, consumers=CONSUMERS, timeout: float = 1800) -> list[dict]:
    import os

    with tempfile.TemporaryDirectory(prefix="file_cost") as d:
        spec = {"dir": d, "ns": list(ns), "variants": list(variants), "consumers": list(consumers)}
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
            [str(ROOT), str(ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")])}
        r = subprocess.run([sys.executable, "-m", "tests.security.file_cost", "--child", json.dumps(spec)],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)
        rows = [row for row in map(json.loads, (x for x in r.stdout.splitlines() if x.startswith("{")))
                if not row.pop("warm_up")]
        if r.returncode != 0:
            rows.append({"n": None, "variant": None, "consumer": None, "ops": 0,
                         "outcome": f"child died (rc {r.returncode}): {r.stderr.strip()[-300:]}"})
    return rows


def problems(rows: list[dict]) -> list[str]:
    from pt2format._symeval import SYM_FREE_SIZE

    bad = []
    at = {(r["n"], r["variant"], r["consumer"]): r for r in rows}
    ns = sorted({r["n"] for r in rows if r["n"] is not None})
    for r in rows:
        o = r["outcome"]
        where = f"{r['variant']}/n={r['n']}/{r['consumer']}"
        if o.startswith(("untyped", "child died")):
            bad.append(f"{where}: {o}")
        elif r["variant"] == "over" and r["consumer"] in READERS:
            if not ("LimitError" in o and "too large in total" in o):
                bad.append(f"{where}: over the file's budget but {o}")
            plain = at.get((r["n"], "plain", r["consumer"]))
            if plain and r["ops"] > 2 * plain["ops"]:
                bad.append(f"{where}: refusing costs {r['ops']} ops, reading the plain file {plain['ops']}")
        elif r["variant"] != "over" and o != "ok":
            bad.append(f"{where}: within the budget but {o}")
    lo, hi = ns[0], ns[-1]
    for (n, variant, consumer), r in at.items():
        if n != hi or variant in ("plain", "over", "spend") or r["outcome"] != "ok":
            continue
        a, p0, p1 = at.get((lo, variant, consumer)), at.get((lo, "plain", consumer)), at.get((hi, "plain", consumer))
        if not (a and p0 and p1) or a["outcome"] != "ok":
            continue
        per_byte = (r["ops"] - a["ops"]) / (r["bytes"] - a["bytes"])
        plain_per_byte = max((p1["ops"] - p0["ops"]) / (p1["bytes"] - p0["bytes"]), 1e-9)
        if per_byte > SYM_FREE_SIZE * plain_per_byte:
            bad.append(f"{variant}/{consumer}: {per_byte:.1f} ops per added byte, plain {plain_per_byte:.1f}")
    for (n, variant, consumer), r in at.items():
        prev = at.get((n // 2, variant, consumer))
        if variant == "spend":
            continue  # not a growing family: its expressions get smaller as n grows (its cost is the allowance's)
        if prev and prev["outcome"] == r["outcome"] == "ok" and prev["ops"] > 0 \
                and r["ops"] > 2 * DOUBLING_SLACK * prev["ops"] + 1000:
            bad.append(f"{variant}/{consumer}: {prev['ops']} ops at n={n // 2}, {r['ops']} at n={n}")
    return bad


def table(rows: list[dict]) -> str:
    out = [f"{'variant':7} {'n':>4} {'bytes':>7} {'uses':>5} {'size':>5} {'spent':>6}  " +
           " ".join(f"{c:>14}" for c in CONSUMERS)]
    keys = sorted({(r["variant"], r["n"]) for r in rows if r["n"] is not None},
                  key=lambda k: (VARIANTS.index(k[0]), k[1]))
    for v, n in keys:
        rs = {r["consumer"]: r for r in rows if r["variant"] == v and r["n"] == n}
        r0 = next(iter(rs.values()))
        cells = []
        for c in CONSUMERS:
            r = rs.get(c)
            cells.append("" if r is None else str(r["ops"]) if r["outcome"] == "ok" else
                         "refused" if "LimitError" in r["outcome"] else r["outcome"][:14])
        out.append(f"{v:7} {n:>4} {r0['bytes']:>7} {r0['uses']:>5} {r0['size']:>5} {r0['spent']:>6}  " +
                   " ".join(f"{c:>14}" for c in cells))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--consumers", default=",".join(CONSUMERS))
    ap.add_argument("--json", help="write every measurement here")
    a = ap.parse_args(argv)
    if a.child:
        return child(json.loads(a.child))
    rows = run(ns=[int(x) for x in a.ns.split(",")], variants=a.variants.split(","),
               consumers=a.consumers.split(","))
    print(table(rows))
    bad = problems(rows)
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "problems": bad}, indent=1))
    print(f"{len(rows)} measurements, {len(bad)} problems")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
