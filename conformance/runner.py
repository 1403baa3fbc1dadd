"""Round-trip every corpus case through pt2format and check the result against torch itself.

For each case: export with torch; record torch's view of the program (graph,
signature, ranges, module call graph, state digests) and its behaviour
(outputs on the example and extra inputs, rejection of invalid inputs,
results of run_decompositions / unflatten / re-export); save with
pt2format in each encoding; validate and dump each file; then load every
file in a fresh process (`conformance._child`, which never imports the
corpus) and compare. Verdicts per case x encoding x check go to a markdown
report.

    python -m conformance.runner                 # whole corpus, report to conformance/REPORT.md
    python -m conformance.runner --set fast      # the default test-run subset
    python -m conformance.runner --cases mlp,cond --encodings json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:  # `python conformance/runner.py` works too
    sys.path.insert(0, REPO)

ENCODINGS = ("flatbuffers", "msgpack", "json")
PARENT_CHECKS = ("export", "save", "validate", "dump", "dedup")
CHILD_CHECKS = ("load", "graph", "meta", "signature", "range_constraints", "module_call_graph", "state",
                "example_inputs", "resave", "outputs", "extra_inputs", "invalid_inputs", "decomp", "unflatten",
                "reexport")
CHECKS = PARENT_CHECKS + CHILD_CHECKS
PASS, FAIL, ERROR, NA, BLOCKED, TORCH = "pass", "fail", "error", "na", "blocked", "torch"


@dataclass
class CaseResult:
    """Verdicts for one case: rows[encoding][check] = [status, reason]."""

    name: str
    tags: tuple = ()
    torch_error: str | None = None
    rows: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)
    seconds: float = 0.0

    def failures(self) -> list[tuple[str, str, str, str]]:
        """(encoding, check, status, reason) for every check that neither passed nor was not applicable."""
        out = []
        for enc, row in self.rows.items():
            for check in CHECKS:
                status, reason = row.get(check, [BLOCKED, "not run"])
                if status not in (PASS, NA):
                    out.append((enc, check, status, reason))
        return out

    @property
    def passed(self) -> bool:
        return self.torch_error is None and not self.failures()

    def to_json(self) -> dict:
        return {"name": self.name, "tags": list(self.tags), "torch_error": self.torch_error, "rows": self.rows,
                "timings": self.timings, "phases": self.phases, "seconds": self.seconds}


def default_encodings(case) -> tuple:
    """All three encodings for the fast set, flatbuffers (the default) for the rest."""
    return ENCODINGS if case.fast else ("flatbuffers",)


def _exc(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)[-2:]
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames))
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:300] if lines else ''} [{where}]"


# --------------------------------------------------------------------------- producer side

def _record_program(spec, ep, name: str, jobdir: str, deterministic: bool) -> dict:
    """Torch's behaviour for the original program: results per input set and follow-ups."""
    import torch

    from conformance import _behave as behave
    from conformance._describe import describe_graph
    from conformance._tensorio import TreeWriter, decode

    iodir = os.path.join(jobdir, "io", name)
    inputs_w, out_w = TreeWriter(iodir, "in"), TreeWriter(iodir, "out")
    snap = behave.snapshot(ep)
    sets = [("example", spec.args, spec.kwargs)]
    sets += [(f"extra_{i}", a, k) for i, (a, k) in enumerate(spec.extra_inputs)]
    docs = {set_name: inputs_w.encode((tuple(a), dict(k))) for set_name, a, k in sets}  # before any run

    def fresh(doc):
        args, kwargs = decode(doc, iodir)
        return tuple(args), dict(kwargs)

    def run(fn_of_nothing):
        behave.restore(ep, snap)
        return fn_of_nothing()

    example_doc = docs["example"]
    # Follow-ups first: torch keeps counters on the program that calls of
    # ep.module() advance; the loader process runs them in this same order.
    follow = {}
    try:
        behave.restore(ep, snap)
        d = ep.run_decompositions()
        follow["decomp"] = {"graph": describe_graph(d.graph_module, meta=False),
                            "result": run(lambda: behave.call(d.module(), *fresh(example_doc)))}
    except Exception as e:  # noqa: BLE001
        follow["decomp"] = {"na": "torch cannot run_decompositions() on the original: " + _exc(e)}
    try:
        behave.restore(ep, snap)
        u = torch.export.unflatten(ep)
        follow["unflatten"] = {"fqns": [n for n, _ in u.named_modules()],
                               "result": run(lambda: behave.call(u, *fresh(example_doc)))}
    except Exception as e:  # noqa: BLE001
        follow["unflatten"] = {"na": "torch cannot unflatten the original: " + _exc(e)}
    try:
        behave.restore(ep, snap)
        again = torch.export.export(ep.module(), *fresh(example_doc), strict=False)
        follow["reexport"] = {"result": run(lambda: behave.call(again.module(), *fresh(example_doc)))}
    except Exception as e:  # noqa: BLE001
        follow["reexport"] = {"na": "torch cannot re-export the original's module(): " + _exc(e)}

    first = run(lambda: behave.call(ep.module(), *fresh(example_doc)))
    second = run(lambda: behave.call(ep.module(), *fresh(example_doc)))
    deterministic = deterministic and behave.same_results(first, second)

    def rec(result):
        return behave.record(result, out_w) if deterministic else behave.record_shapes(result)

    ref = {"sets": {}, "invalid": [], "deterministic": deterministic}
    for set_name, _, _ in sets:
        result = first if set_name == "example" else run(lambda d=docs[set_name]: behave.call(ep.module(), *fresh(d)))
        ref["sets"][set_name] = {"inputs": docs[set_name], "expected": rec(result)}
    for i, (a, k) in enumerate(spec.invalid_inputs):
        doc = inputs_w.encode((tuple(a), dict(k)))
        try:
            run(lambda d=doc: behave.call(ep.module(), *fresh(d)))
        except Exception as e:  # noqa: BLE001 - the expected outcome
            ref["invalid"].append({"inputs": doc, "error": f"{type(e).__name__}: {str(e).strip()[:200]}"})
        else:
            ref["invalid_error"] = f"case definition error: the original program accepted invalid input #{i}"
    for key, entry in follow.items():
        if "result" in entry:
            entry["expected"] = rec(entry.pop("result"))
        ref[key] = entry
    behave.restore(ep, snap)
    return ref


def _dump(path: str, timeout: float) -> bytes:
    """Canonical dump through the public CLI (`python -m pt2format dump FILE`)."""
    proc = subprocess.run([sys.executable, "-m", "pt2format", "dump", path], capture_output=True, timeout=timeout,
                          cwd=REPO, env=_child_env())
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(f"`python -m pt2format dump` exited with {proc.returncode}: {' | '.join(tail)}")
    return proc.stdout


def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _file_checks(row: dict, path: str, expected_storages: tuple, timeout: float) -> bytes | None:
    import pt2format

    try:
        pt2format.validate(path)
        row["validate"] = [PASS, ""]
    except Exception as e:  # noqa: BLE001
        row["validate"] = [FAIL if isinstance(e, pt2format.Pt2FormatError) else ERROR, _exc(e)]
    dump = None
    try:
        dump = _dump(path, timeout)
        json.loads(dump)
        row["dump"] = [PASS, ""]
    except Exception as e:  # noqa: BLE001
        row["dump"] = [ERROR, _exc(e)]
    try:
        f = pt2format.read(path)
        try:
            n = len(f.package.storages)
        finally:
            f.close()
        lo, hi = expected_storages
        want = f"{lo}" if lo == hi else f"{lo} to {hi} (empty storages may be merged)"
        row["dedup"] = [PASS, ""] if lo <= n <= hi else \
            [FAIL, f"file holds {n} storages, the programs use {want} distinct ones"]
    except Exception as e:  # noqa: BLE001
        row["dedup"] = [ERROR, _exc(e)]
    return dump


def _run_child(jobdir: str, timeout: float) -> tuple[dict | None, str]:
    log = os.path.join(jobdir, "child.log")
    with open(log, "wb") as out:
        try:
            proc = subprocess.run([sys.executable, "-m", "conformance._child", jobdir], stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout, cwd=REPO, env=_child_env())
        except subprocess.TimeoutExpired:
            return None, f"loader process timed out after {timeout:.0f} s"
    if proc.returncode != 0:
        with open(log, "rb") as f:
            tail = f.read().decode("utf-8", "replace").strip().splitlines()[-4:]
        return None, f"loader process exited with {proc.returncode}: {' | '.join(tail)}"
    from conformance._tensorio import read_json

    return read_json(os.path.join(jobdir, "result.json")), ""


def run_case(case, *, encodings=None, workdir: str | None = None, timeout: float = 1800.0) -> CaseResult:
    """Run one corpus case end to end; never raises (a crash of the runner itself is an error verdict)."""
    t_start = time.perf_counter()
    try:
        return _run_case(case, encodings=encodings, workdir=workdir, timeout=timeout)
    except Exception as e:  # noqa: BLE001
        encodings = tuple(encodings or default_encodings(case))
        res = CaseResult(case.name, tuple(sorted(case.tags)))
        reason = "the runner failed (recording torch's behaviour or writing files): " + _exc(e)
        res.rows = {enc: {c: [ERROR, reason] for c in CHECKS} for enc in encodings}
        res.seconds = time.perf_counter() - t_start
        return res


def _run_case(case, *, encodings, workdir, timeout) -> CaseResult:
    import torch

    import pt2format
    from conformance._describe import describe_program, first_difference, storage_keys
    from conformance._tensorio import write_json

    encodings = tuple(encodings or default_encodings(case))
    res = CaseResult(case.name, tuple(sorted(case.tags)))
    t_start = time.perf_counter()
    jobdir = os.path.join(workdir or tempfile.mkdtemp(prefix="pt2f-conf-"), case.name)
    shutil.rmtree(jobdir, ignore_errors=True)
    os.makedirs(jobdir)
    torch.manual_seed(0)

    try:
        built = case.build()
        multi = isinstance(built, dict)
        specs = built if multi else {"forward": built}
    except Exception as e:  # noqa: BLE001 - our own case definition is broken: a failure, not torch's
        res.rows = {enc: {"export": [ERROR, "building the case failed: " + _exc(e)]} for enc in encodings}
        res.seconds = time.perf_counter() - t_start
        return res
    try:
        eps = {name: spec.export() for name, spec in specs.items()}
    except Exception as e:  # noqa: BLE001 - torch cannot export this case
        res.torch_error = _exc(e)
        res.rows = {enc: {"export": [TORCH, res.torch_error]} for enc in encodings}
        res.seconds = time.perf_counter() - t_start
        return res

    res.phases["export"] = time.perf_counter() - t_start
    static = {name: describe_program(ep) for name, ep in eps.items()}
    full, empty = set(), set()
    for ep in eps.values():
        f, e = storage_keys(ep)
        full |= f
        empty |= e
    storages = (len(full) + min(1, len(empty)), len(full) + len(empty))  # allowed range
    obj = eps if multi else eps["forward"]
    dumps = {}
    for enc in encodings:
        row = res.rows.setdefault(enc, {"export": [PASS, ""]})
        path = os.path.join(jobdir, f"program.{enc}.pt2f")
        try:
            t0 = time.perf_counter()
            pt2format.save(obj, path, encoding=enc, fsync=False, progress=False)
            res.timings.setdefault(enc, {})["save_s"] = time.perf_counter() - t0
            row["save"] = [PASS, ""]
        except Exception as e:  # noqa: BLE001
            row["save"] = [ERROR, _exc(e)]
            if os.path.exists(path):
                os.unlink(path)
            continue
        dumps[enc] = _file_checks(row, path, storages, timeout)
    for name, ep in eps.items():  # saving must not change the program
        problem = first_difference(static[name], describe_program(ep))
        if problem:
            for enc in res.rows:
                if res.rows[enc].get("save", [None])[0] == PASS:
                    res.rows[enc]["save"] = [FAIL, f"[{name}] save changed the program: {problem}"]
    good = [d for d in dumps.values() if d is not None]
    if len(good) > 1 and any(d != good[0] for d in good):
        for enc, d in dumps.items():
            if d is not None and res.rows[enc]["dump"][0] == PASS and d != good[0]:
                res.rows[enc]["dump"] = [FAIL, f"canonical dump differs from {next(iter(dumps))}'s"]

    res.phases["save_and_file_checks"] = time.perf_counter() - t_start - res.phases["export"]
    t_rec = time.perf_counter()
    refs = {}
    for name, ep in eps.items():
        refs[name] = {"static": static[name]}
        refs[name].update(_record_program(specs[name], ep, name, jobdir, case.deterministic))
    del eps, obj
    gc.collect()

    saved = [enc for enc in encodings if res.rows[enc].get("save", [None])[0] in (PASS, FAIL)]
    job = {"case": case.name, "multi": multi, "programs": list(specs), "encodings": saved,
           "followup_encoding": saved[0] if saved else None, "child_imports": list(case.child_imports),
           "num_threads": torch.get_num_threads(), "refs": refs}
    write_json(os.path.join(jobdir, "job.json"), job)
    res.phases["torch_records"] = time.perf_counter() - t_rec
    t_child = time.perf_counter()
    child, why = _run_child(jobdir, timeout) if saved else (None, "nothing was saved")
    res.phases["loader_process"] = time.perf_counter() - t_child
    for enc in encodings:
        row = res.rows[enc]
        if child is None or enc not in child["rows"]:
            reason = why if enc in saved else "save failed"
            for c in CHILD_CHECKS:
                row[c] = [ERROR if enc in saved else BLOCKED, reason]
            continue
        got = child["rows"][enc]
        res.timings.setdefault(enc, {}).update(child["timings"].get(enc, {}))
        for c in CHILD_CHECKS:
            row[c] = got.get(c, [BLOCKED, "load failed" if c != "load" else "not run"])
        if child.get("producer_modules_imported"):
            row["load"] = [FAIL, f"the loader process imported producer code: {child['producer_modules_imported']}"]
    res.seconds = time.perf_counter() - t_start
    return res


# --------------------------------------------------------------------------- CLI

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.runner", description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("fast", "full", "all"), default="all",
                    help="fast: the default test-run subset; full: all but 'slow'; all: everything (default)")
    ap.add_argument("--cases", help="comma-separated case names (overrides --set)")
    ap.add_argument("--encodings", help="comma-separated encodings (default: all three for fast cases, "
                                        "flatbuffers otherwise)")
    ap.add_argument("--workdir", help="where files and records go (default: a new temporary directory)")
    ap.add_argument("--report", default=os.path.join(REPO, "conformance", "REPORT.md"))
    ap.add_argument("--no-report", action="store_true", help="print the report only")
    ap.add_argument("--json", help="also write all verdicts as JSON here")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per loader process")
    ap.add_argument("--list", action="store_true", help="list the selected cases and exit")
    args = ap.parse_args(argv)

    from conformance import corpus

    if args.cases:
        cases = corpus.select(names=args.cases.split(","))
    elif args.set == "fast":
        cases = corpus.select(tags=["fast"])
    elif args.set == "full":
        cases = [c for c in corpus.select() if not c.slow]
    else:
        cases = corpus.select()
    if args.list:
        for c in cases:
            print(f"{c.name:40s} {','.join(sorted(c.tags)):30s} {c.description}")
        return 0
    encodings = args.encodings.split(",") if args.encodings else None
    workdir = args.workdir or tempfile.mkdtemp(prefix="pt2f-conformance-")
    results = []
    for i, c in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {c.name} ...", file=sys.stderr, flush=True)
        r = run_case(c, encodings=encodings, workdir=workdir, timeout=args.timeout)
        state = "torch cannot export" if r.torch_error else ("pass" if r.passed else f"{len(r.failures())} failing")
        phases = ", ".join(f"{k} {v:.1f}" for k, v in r.phases.items())
        print(f"    {state} ({r.seconds:.1f} s: {phases})", file=sys.stderr, flush=True)
        results.append(r)
        gc.collect()
    from conformance._report import render_report

    text = render_report(results)
    print(text)
    if not args.no_report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([r.to_json() for r in results], f, indent=1, sort_keys=True)
    print(f"files and records kept in {workdir}", file=sys.stderr)
    return 0 if all(r.passed or r.torch_error for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
