"""Cost of every consumer of a file on expressions that share subexpressions (SPEC.md §11.6, DESIGN principle 10).

The pool is a graph: `e(k+1) = Max(e(k), e(k))` is one node per level but a
tree of 2^k nodes. This test knows no attack and no consumer: it builds, for
every field that can hold a pool expression, expressions of depth d that
share their operands, and runs every consumer on each file in a child
process, with a time and a memory budget per consumer. The rules:

* no consumer ends in an untyped error, a hang or a broken budget
  (TIME_BUDGET_S per consumer, MEMORY_BUDGET_MB of resident memory);
* below the bound and within the file's budget (SPEC.md §11.6; what a file
  spends is counted here from the tree sizes, `budget_spent`), no reader
  refuses the file for its expanded size; over either, every reader (read,
  validate, dump, load, load_module, the C++ and TS dumps, the viewer page)
  refuses it with that LimitError;
* from the smallest to the largest accepted depth, a consumer's time grows
  by at most GROWTH_FACTOR (plus ABS_SLACK_S of noise), where a tree walk
  would grow 2^levels: every consumer but TREE_WALKERS, whose growth below
  the bound happens inside torch and sympy and is capped by the bound (their
  growth is printed, and their time at the bound must fit the budget).

Consumers: read, validate, dump, load, print(ep), module(), a call,
print_readable(), run_decompositions(), unflatten, load_module (Python, in
the child); the C++ pt2f-dump, the TypeScript cli.js dump and the viewer
page in headless Chromium (from the parent, with a timeout).

    python -m tests.security.pool_cost              # the full run: every field, shape, depth and consumer
                                                    # (about 30 minutes on a busy 2-core machine)
    python -m tests.security.pool_cost --sample     # what CI runs (tests/security/test_pool_cost.py)
    python -m tests.security.pool_cost --json out.json

Fields: range constraints, tensor sizes, strides and storage offsets, SymInt
values (operator arguments), SymBool values (the runtime asserts' guards).
Shapes: `max` (Max(e, e), the same value at every depth) and `mul_add`
(e + e*u0 with u0 unbacked: no value, the degree grows by one per level).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("range_constraint", "size", "stride", "storage_offset", "sym_int", "sym_bool", "input_guard")
SHAPES = ("max", "mul_add")
PY_CONSUMERS = ("read", "validate", "dump", "load", "print_ep", "module", "call", "print_readable",
                "run_decompositions", "unflatten", "load_module")
NATIVE_CONSUMERS = ("cpp_dump", "ts_dump", "viewer")
#: Per-consumer budgets: seconds of wall time (generous: a shared 2-core machine) and MiB of resident memory
#: above the child's baseline.
TIME_BUDGET_S = 30.0
MEMORY_BUDGET_MB = 1024
#: Growth from the smallest to the largest depth accepted: at most this factor plus ABS_SLACK_S. A consumer that
#: walks the tree doubles per level, i.e. 2^(levels) >> GROWTH_FACTOR.
GROWTH_FACTOR = 4.0
ABS_SLACK_S = 0.25
#: Each consumer but load runs this many times and the least time counts (2 cores shared: single runs are noisy).
REPEATS = 3
#: Depths of the full run: up to the bound (10 levels for mul_add, 11 for max), just over it, and far over it.
DEPTHS = (2, 4, 6, 8, 10, 11, 12, 16, 24, 40)


# ---------------------------------------------------------------------------
# Building the files (child side: needs torch)
# ---------------------------------------------------------------------------

def _base():
    """A small program with every field that can hold an expression: a dynamic size (and the stride it makes),
    an unbacked SymInt used as an operator argument, SymBool guards of runtime asserts, range constraints."""
    import warnings

    import torch

    from pt2format.exporter import export_package

    class M(torch.nn.Module):
        def forward(self, x, k):
            n = k.item()
            torch._check(n >= 2)
            torch._check(n <= 8)
            return x.new_zeros(n) + x.shape[1], x * 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(M(), (torch.randn(3, 5), torch.tensor(4)),
                                 dynamic_shapes={"x": {1: torch.export.Dim("b", min=2, max=64)}, "k": None})
    pkg, payloads = export_package(ep)
    return pkg, [bytes(p) for p in payloads]


def _chain(prog, shape: str, depth: int) -> int:
    """Appends e(0..depth) to the pool; returns the index of e(depth). e(0) is the dynamic size's symbol."""
    from pt2format._generated import model as m

    K, O = m.SymExprKind, m.SymOp
    pool = prog.sym_exprs

    def add(**kw):
        pool.append(m.SymExpr(**kw))
        return len(pool) - 1

    s = next(i for i, e in enumerate(pool) if e.kind == K.SYMBOL and prog.symbols[e.symbol].has_hint)
    u = next(i for i, e in enumerate(pool) if e.kind == K.SYMBOL and not prog.symbols[e.symbol].has_hint)
    if shape == "mul_add_sized":  # an input guard reads only symbols with a source: the size
        u = s
    e = s
    for _ in range(depth):
        if shape == "max":
            e = add(kind=K.APPLY, op=O.MAX, args=[e, e])
        else:
            e = add(kind=K.APPLY, op=O.ADD, args=[e, add(kind=K.APPLY, op=O.MUL, args=[e, u])])
    return e


def build_file(base, field: str, shape: str, depth: int, path: Path, info: dict | None = None,
               keep_shared: bool = False) -> Path:
    """The base program with `field` pointing at e(depth) (written without the writer's validation).

    Each value gets its own TensorMeta first, unless `keep_shared`: then a storage_offset set on the first
    value's meta is used by every value sharing it, and `uses` counts them.

    `info`, when given, gets `uses` (the references made to the expression) and `spent`: what the file spends
    of its budget (SPEC.md §11.6), counted here from the tree sizes, independently of the readers."""
    from unittest import mock

    from pt2format._api import write_package
    from pt2format._generated import model as m

    pkg0, data = base
    pkg = copy.deepcopy(pkg0)
    prog = pkg.programs[0]
    g = prog.graph
    if not keep_shared:  # the writer shares one meta among the values of a shape (pt2f_shared)
        for tv in g.tensor_values:
            tv.meta = copy.deepcopy(tv.meta)
    K, O = m.SymExprKind, m.SymOp
    size_sym = next(i for i, e in enumerate(prog.sym_exprs) if e.kind == K.SYMBOL and prog.symbols[e.symbol].has_hint)
    e = _chain(prog, field_shape(field, shape), depth)
    if field == "range_constraint":
        prog.range_constraints.append(m.RangeConstraint(expr=e, range=m.ValueRange()))
        uses = 1
    elif field in ("size", "stride"):
        uses = 0
        for tv in g.tensor_values:
            for s in (tv.meta.sizes if field == "size" else tv.meta.strides):
                if s.expr == size_sym:
                    s.expr = e
                    uses += 1
    elif field == "storage_offset":
        g.tensor_values[0].meta.storage_offset = m.SymInt(expr=e, value=0)
        uses = sum(tv.meta is g.tensor_values[0].meta for tv in g.tensor_values)
    elif field == "sym_int":
        next(v for v in g.sym_int_values if v.value.expr == size_sym).value.expr = e
        uses = 1
    elif field == "sym_bool":
        prog.sym_exprs.append(m.SymExpr(kind=K.INTEGER, int_value=2))
        two = len(prog.sym_exprs) - 1
        prog.sym_exprs.append(m.SymExpr(kind=K.APPLY, op=O.GE, args=[e, two]))
        e = len(prog.sym_exprs) - 1
        g.sym_bool_values[0].value.expr = e
        uses = 1
    elif field == "input_guard":  # GE(e, 2) as an input guard, read through x.size()[1]; listed twice
        prog.sym_exprs.append(m.SymExpr(kind=K.INTEGER, int_value=2))
        prog.sym_exprs.append(m.SymExpr(kind=K.APPLY, op=O.GE, args=[e, len(prog.sym_exprs) - 1]))
        e = len(prog.sym_exprs) - 1
        prog.input_guards = [*(prog.input_guards or ()), e, e]
        sym = prog.sym_exprs[size_sym].symbol
        if all(r.symbol != sym for r in prog.guard_sources or ()):
            prog.guard_sources = sorted([*(prog.guard_sources or ()), m.GuardSource(
                symbol=sym, input=0, kind=m.GuardSourceKind.SIZE, dim=1)], key=lambda r: r.symbol)
        uses = 2
    if info is not None:
        info["uses"] = uses
        info["spent"] = budget_spent(prog.sym_exprs, {e: uses})
    with mock.patch("pt2format._api.validate_package", lambda *a, **k: None):
        write_package(path, pkg, data, fsync=False)
    return path


def budget_spent(pool, uses: dict) -> int:
    """What a program spends of its file's budget (SPEC.md §11.6), from the tree size of each pool node (a
    memoised walk of the tree) and `uses` (node -> references to it; the base program's others are small)."""
    from pt2format._symeval import SYM_FREE_SIZE

    memo: dict = {}

    def tree(i):
        if i not in memo:
            memo[i] = 1 + sum(tree(a) for a in pool[i].args or ()) if pool[i].args else 1
        return memo[i]

    sizes = [tree(i) for i in range(len(pool))]
    return sum(max(0, n - SYM_FREE_SIZE) for n in sizes) + \
        sum(k * max(0, sizes[i] - SYM_FREE_SIZE) for i, k in uses.items())


def field_shape(field: str, shape: str) -> str:
    return "mul_add_sized" if field == "input_guard" and shape == "mul_add" else shape


# ---------------------------------------------------------------------------
# Consumers (child side)
# ---------------------------------------------------------------------------

def _py_consumers(path: Path, state: dict) -> dict:
    import torch

    import pt2format
    from pt2format._dump import dump

    def loaded():
        if "ep" not in state:
            state["ep"] = pt2format.load(path)
        return state["ep"]

    def module():
        state["mod"] = loaded().module()
        return state["mod"]

    def call():
        try:
            state["mod"](torch.randn(3, 5), torch.tensor(4))
        except (RuntimeError, AssertionError, ValueError) as e:  # a guard of the program refuses the inputs
            return f"refused by the program: {type(e).__name__}"

    return {
        "read": lambda: pt2format.read(path).close(),
        "validate": lambda: pt2format.validate(path),
        "dump": lambda: len(dump(path)) and None,
        "load": loaded,
        "print_ep": lambda: len(str(loaded())),
        "module": module,
        "call": call,
        "print_readable": lambda: len(state["mod"].print_readable(print_output=False)),
        "run_decompositions": lambda: loaded().run_decompositions(),
        "unflatten": lambda: torch.export.unflatten(loaded()),
        "load_module": lambda: pt2format.load_module(path),
    }


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _watchdog(limit_mb: float, emit):
    """Ends this child (exit 3) when its resident memory passes `limit_mb`: a memory budget that torch survives
    (an address-space limit does not)."""
    def run():
        while True:
            if _rss_mb() > limit_mb:
                emit({"event": "memory", "rss_mb": _rss_mb()})
                os._exit(3)
            time.sleep(0.02)
    threading.Thread(target=run, daemon=True).start()


def child(spec: dict) -> int:
    """Runs the Python consumers on every (field, shape, depth) of `spec`; one JSON line per event on stdout."""
    import torch

    from pt2format.errors import Pt2FormatError

    torch.set_num_threads(1)
    out = sys.stdout

    def emit(d):
        out.write(json.dumps(d) + "\n")
        out.flush()

    base = _base()
    tmp = Path(spec["dir"])
    baseline = _rss_mb()
    _watchdog(baseline + spec["memory_mb"], emit)
    for field in spec["fields"]:
        for shape in spec["shapes"]:
            for depth in spec["depths"]:
                info: dict = {}
                path = build_file(base, field, shape, depth, tmp / f"{field}-{shape}-{depth}.pt2f", info=info)
                emit({"event": "file", "field": field, "shape": shape, "depth": depth, "path": str(path),
                      "bytes": path.stat().st_size, "spent": info["spent"]})
                state: dict = {}
                consumers = _py_consumers(path, state)
                failed_before = None
                for name in spec["consumers"]:
                    if name not in consumers:
                        continue
                    key = {"field": field, "shape": shape, "depth": depth, "consumer": name, "spent": info["spent"]}
                    if failed_before is not None and name not in ("read", "validate", "dump", "load_module"):
                        emit({**key, "event": "done", "outcome": f"skipped: {failed_before} failed", "s": 0.0})
                        continue
                    emit({**key, "event": "start"})
                    best = None
                    try:
                        # The least of REPEATS runs (one for load, which the others reuse): the machine is shared.
                        for _ in range(1 if name == "load" else REPEATS):
                            t0 = time.perf_counter()
                            r = consumers[name]()
                            dt = time.perf_counter() - t0
                            best = dt if best is None else min(best, dt)
                        outcome = r if isinstance(r, str) else "ok"
                    except Pt2FormatError as e:
                        outcome = f"typed: {type(e).__name__}: {str(e)[:300]}"
                        if name == "load":
                            failed_before = "load"
                    except Exception as e:  # noqa: BLE001 - reported, and the test fails on it
                        outcome = f"untyped: {type(e).__name__}: {str(e)[:300]}"
                        if name in ("load", "module"):
                            failed_before = name
                    if name == "module" and "mod" not in state:
                        failed_before = failed_before or "module"
                    emit({**key, "event": "done", "outcome": outcome,
                          "s": best if best is not None else time.perf_counter() - t0, "rss_mb": _rss_mb() - baseline})
    emit({"event": "end"})
    return 0


# ---------------------------------------------------------------------------
# Native consumers (parent side: subprocesses with a timeout)
# ---------------------------------------------------------------------------

def _native(name: str, path: Path, timeout: float) -> tuple[str, float]:
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    t0 = time.perf_counter()
    try:
        if name == "cpp_dump":
            exe = ROOT / "build" / "cpp" / "pt2f-dump"
            if not exe.is_file():
                return "unavailable: build/cpp/pt2f-dump (scripts/build_cpp.sh)", 0.0
            r = subprocess.run([str(exe), str(path)], capture_output=True, timeout=timeout)
        elif name == "ts_dump":
            cli = ROOT / "loaders" / "ts" / "dist" / "cli.js"
            if not cli.is_file():
                return "unavailable: loaders/ts/dist (scripts/build_ts.sh)", 0.0
            r = subprocess.run(["node", str(cli), "dump", str(path)], capture_output=True, timeout=timeout,
                               cwd=ROOT / "loaders" / "ts")
        else:
            return _viewer(path, timeout), time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        return "hang", time.perf_counter() - t0
    dt = time.perf_counter() - t0
    err = r.stderr.decode("utf-8", "replace").strip().splitlines()
    if r.returncode == 0:
        return "ok", dt
    last = err[-1] if err else ""
    return (f"typed: {last[:300]}" if "Error" in last and "Sanitizer" not in last else f"untyped: rc {r.returncode} "
            f"{last[:300]}"), dt


def _viewer(path: Path, timeout: float) -> str:
    import viewer_driver as D

    exe = __import__("native_util_ts").chromium()
    if exe is None or not D.PAGE.is_file():
        return "unavailable: chromium or loaders/ts/viewer/dist (scripts/build_ts.sh)"
    page = D.view(path, path.with_suffix(".html"))
    try:
        out = D.drive(exe, page, [{"do": "info"}, {"do": "state"}], timeout=timeout)
    except RuntimeError as e:
        return f"untyped: {str(e)[:200]}"
    st = out["results"][1]
    if st.get("error"):
        return f"typed: {st['error'][:300]}" if "Error:" in st["error"] else f"untyped: {st['error'][:300]}"
    return "ok"


# ---------------------------------------------------------------------------
# Parent: run, watch, judge
# ---------------------------------------------------------------------------

def run(fields=FIELDS, shapes=SHAPES, depths=DEPTHS, consumers=PY_CONSUMERS + NATIVE_CONSUMERS,
        time_budget=TIME_BUDGET_S, memory_mb=MEMORY_BUDGET_MB, native_fields=None, log=None) -> list[dict]:
    """Every measurement as a dict (field, shape, depth, consumer, outcome, s, rss_mb)."""
    rows: list[dict] = []
    files: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="pool_cost") as d:
        spec = {"dir": d, "fields": list(fields), "shapes": list(shapes), "depths": list(depths),
                "consumers": list(consumers), "memory_mb": memory_mb}
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
            [str(ROOT), str(ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, "-m", "tests.security.pool_cost", "--child", json.dumps(spec)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env, text=True)
        current, deadline, buf = None, time.monotonic() + 120 + time_budget, ""
        try:
            while True:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    proc.kill()
                    rows.append({**(current or {}), "outcome": "hang", "s": time_budget})
                    break
                ready, _, _ = select.select([proc.stdout], [], [], wait)
                if not ready:
                    continue
                line = proc.stdout.readline()
                if not line:
                    proc.wait()
                    if current is not None:
                        rows.append({**current, "outcome": f"child died (rc {proc.returncode})", "s": 0.0})
                    break
                ev = json.loads(line)
                kind = ev.pop("event")
                if kind == "start":
                    current, deadline = ev, time.monotonic() + time_budget
                elif kind == "done":
                    rows.append(ev)
                    current, deadline = None, time.monotonic() + 120
                    if log:
                        log(ev)
                elif kind == "file":
                    files.append(ev)
                    deadline = time.monotonic() + 120
                elif kind == "memory":
                    rows.append({**(current or {}), "outcome": f"memory budget exceeded ({ev['rss_mb']:.0f} MiB)"})
                elif kind == "end":
                    proc.wait()
                    break
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for f in files:
            if native_fields is not None and f["field"] not in native_fields:
                continue
            for name in consumers:
                if name in NATIVE_CONSUMERS:
                    outcome, s = _native(name, Path(f["path"]), time_budget)
                    ev = {"field": f["field"], "shape": f["shape"], "depth": f["depth"], "consumer": name,
                          "outcome": outcome, "s": s, "spent": f["spent"]}
                    rows.append(ev)
                    if log:
                        log(ev)
    return rows


def problems(rows: list[dict], time_budget=TIME_BUDGET_S, memory_mb=MEMORY_BUDGET_MB) -> list[str]:
    """What breaks the rules: an untyped error, a hang, a broken budget, a refusal below the bounds (the
    expression's and the file's, SPEC.md §11.6), an acceptance over one of them, doubling."""
    from pt2format._symeval import MAX_SYM_EXPANDED_SIZE, MAX_SYM_FILE_EXCESS

    bad = []
    for r in rows:
        o = r.get("outcome", "")
        where = f"{r.get('field')}/{r.get('shape')}/d={r.get('depth')}/{r.get('consumer')}"
        if o.startswith(("untyped", "hang", "child died", "memory")):
            bad.append(f"{where}: {o}")
        elif r.get("s", 0) > time_budget:
            bad.append(f"{where}: {r['s']:.1f}s > {time_budget}s")
        elif r.get("rss_mb", 0) > memory_mb:
            bad.append(f"{where}: {r['rss_mb']:.0f} MiB > {memory_mb} MiB")
        elif "LimitError" in o and field_size(r["field"], r["shape"], r["depth"]) <= MAX_SYM_EXPANDED_SIZE \
                and "expanded size is too large" in o:
            bad.append(f"{where}: refused below the bound: {o}")
        elif "LimitError" in o and "too large in total" in o and r.get("spent", 0) <= MAX_SYM_FILE_EXCESS:
            bad.append(f"{where}: refused below the file's budget: {o}")
        elif o == "ok" and r.get("consumer") in READERS \
                and (field_size(r["field"], r["shape"], r["depth"]) > MAX_SYM_EXPANDED_SIZE
                     or r.get("spent", 0) > MAX_SYM_FILE_EXCESS):
            bad.append(f"{where}: accepted over the bound")
    bad += [f"{k}: {v}" for k, v in growth(rows).items() if v["doubling"]]
    return bad


def expanded_size(shape: str, depth: int) -> int:
    """The expanded size of e(depth) (SPEC.md §11.6)."""
    s = 1
    for _ in range(depth):
        s = 2 * s + 1 if shape == "max" else 2 * s + 3  # mul_add and mul_add_sized alike
    return s


#: Consumers whose work below the bound is torch's or sympy's walk of the expression tree: torch's printing
#: (`print(ep)`, `print_readable`, sympy's printer), fake-tensor creation in `load` (torch's `_fast_expand`, reached
#: from `torch.empty_strided`'s contiguity checks) and `run_decompositions` (the same, when it retraces). They grow
#: with the expanded size, which the bound caps (SPEC.md §11.6): for them the rule is the budget at every depth,
#: and their growth is reported, not judged. Every other consumer must be flat.
TREE_WALKERS = ("load", "print_ep", "print_readable", "run_decompositions")


#: Consumers that read the file themselves, so must refuse it over the bound.
READERS = ("read", "validate", "dump", "load", "load_module", "cpp_dump", "ts_dump", "viewer")


def field_size(field: str, shape: str, depth: int) -> int:
    """The expanded size of what `field` points at: e(depth), or GE(e(depth), 2) for the guard."""
    return expanded_size(shape, depth) + (2 if field in ("sym_bool", "input_guard") else 0)


def growth(rows: list[dict]) -> dict:
    """Per (field, shape, consumer): time at the smallest and the largest accepted depth, and whether it doubles
    (judged for every consumer but TREE_WALKERS)."""
    by: dict = {}
    for r in rows:
        if r.get("outcome") == "ok" or str(r.get("outcome", "")).startswith("refused by the program"):
            by.setdefault((r["field"], r["shape"], r["consumer"]), {})[r["depth"]] = r["s"]
    out = {}
    for (field, shape, consumer), t in by.items():
        lo, hi = min(t), max(t)
        if lo == hi:
            continue
        out[f"{field}/{shape}/{consumer}"] = {
            "depths": [lo, hi], "s": [round(t[lo], 4), round(t[hi], 4)],
            "doubling": consumer not in TREE_WALKERS and t[hi] > GROWTH_FACTOR * t[lo] + ABS_SLACK_S}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--sample", action="store_true", help="the CI sample: fewer depths and no browser")
    ap.add_argument("--depths", default="", help="comma-separated depths (default: DEPTHS)")
    ap.add_argument("--fields", default=",".join(FIELDS))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--consumers", default=",".join(PY_CONSUMERS + NATIVE_CONSUMERS))
    ap.add_argument("--json", help="write every measurement here")
    a = ap.parse_args(argv)
    if a.child:
        return child(json.loads(a.child))
    kw = {"fields": a.fields.split(","), "shapes": a.shapes.split(","), "consumers": a.consumers.split(",")}
    if a.depths:
        kw["depths"] = [int(x) for x in a.depths.split(",")]
    if a.sample:
        kw.update(SAMPLE)

    def log(ev):
        print(f"{ev['field']:16} {ev['shape']:8} d={ev['depth']:<3} {ev['consumer']:18} {ev.get('s', 0):8.3f}s  "
              f"{ev['outcome'][:110]}", flush=True)

    rows = run(**kw, log=log)
    g = growth(rows)
    for k, v in sorted(g.items()):
        print(f"growth {k}: d={v['depths'][0]} {v['s'][0]}s -> d={v['depths'][1]} {v['s'][1]}s"
              f"{'  DOUBLING' if v['doubling'] else ''}")
    bad = problems(rows)
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "growth": g, "problems": bad}, indent=1))
    print(f"{len(rows)} measurements, {len(bad)} problems")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


#: The CI sample (well under a minute): every field and shape at three depths (small, a 253-node tree, a 2^31-node
#: one over the bound), every consumer but run_decompositions (a second a file) and the browser; the C++ and TS
#: dumps on the size field only. The full run takes every depth up to the bound and every consumer.
SAMPLE = {"depths": [2, 6, 30], "consumers": [c for c in PY_CONSUMERS if c != "run_decompositions"]
          + ["cpp_dump", "ts_dump"], "native_fields": ["size"]}


if __name__ == "__main__":
    sys.exit(main())
