"""The fresh loader process: load each saved file with pt2format and check it against torch's records.

Run as `python -m conformance._child JOBDIR`. It imports torch, pt2format, the
operator libraries listed in the job (custom ops, torchbind, pytree
registrations) and nothing of the corpus: loading must not need the code
that produced the program. Inputs and expected results come from files
written by the runner (JSON + raw bytes, no pickle). The verdicts go to
`JOBDIR/result.json`.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback

import torch

from conformance import _behave as behave
from conformance._describe import (
    describe_graph,
    describe_program,
    first_difference,
    positional_names,
)
from conformance._tensorio import decode, read_json, write_json

PASS, FAIL, ERROR, NA, BLOCKED = "pass", "fail", "error", "na", "blocked"


def _exc(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)[-2:]
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames))
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''} [{where}]"


class Row:
    """Verdicts for one encoding; a check across several programs fails on the first bad one."""

    def __init__(self):
        self.checks: dict[str, list] = {}

    def put(self, check: str, status: str, reason: str = "", program: str | None = None) -> None:
        if program and reason:
            reason = f"[{program}] {reason}"
        old = self.checks.get(check)
        if (old is None or (old[0] == PASS and status != PASS) or (old[0] == NA and status != NA)
                or (old[0] == status == PASS and reason and not old[1])):
            self.checks[check] = [status, reason]

    def run(self, check: str, fn, program: str | None = None) -> None:
        try:
            problem = fn()
        except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
            self.put(check, ERROR, _exc(e), program)
            return
        if isinstance(problem, tuple):  # (status, reason)
            self.put(check, problem[0], problem[1], program)
        elif problem:
            self.put(check, FAIL, problem, program)
        else:
            self.put(check, PASS, "", program)


def _inputs(doc, directory):
    args, kwargs = decode(doc, directory)
    return tuple(args), dict(kwargs)


def _check_static(row: Row, ref: dict, ep, pname: str) -> None:
    got = describe_program(ep)
    for key in ("graph", "meta", "signature", "range_constraints", "state", "example_inputs"):
        row.run(key, lambda k=key: first_difference(ref["static"][k], got[k]), pname)
    row.run("module_call_graph", lambda: _compare_mcg(ref["static"]["module_call_graph"], got["module_call_graph"]),
            pname)


def _compare_mcg(want: list, got: list) -> str | None:
    wf, gf = [e["fqn"] for e in want], [e["fqn"] for e in got]
    if wf != gf:
        return f"fqns: expected {wf}, got {gf}"
    for w, g in zip(want, got):
        for key in ("inputs", "outputs", "forward_arg_names"):
            d = first_difference(w.get(key), g.get(key), f"[{w['fqn']!r}].{key}")
            if d:
                return d
        for key in ("in_spec", "out_spec"):
            if (w.get(key) is None) != (g.get(key) is None):
                return f"[{w['fqn']!r}].{key}: expected {w.get(key)}, got {g.get(key)}"
            if w.get(key) is not None:
                p = behave.compare_spec(w[key], g[key])
                if p:
                    return f"[{w['fqn']!r}].{key}: {p}"
    return None


def _check_behaviour(row: Row, ref: dict, ep, pname: str, jobdir: str) -> None:
    snap = behave.snapshot(ep)
    iodir = os.path.join(jobdir, "io", pname)
    for set_name, entry in ref["sets"].items():
        check = "outputs" if set_name == "example" else "extra_inputs"

        def one(entry=entry, set_name=set_name):
            behave.restore(ep, snap)
            args, kwargs = _inputs(entry["inputs"], iodir)
            problem = behave.compare_result(entry["expected"], behave.call(ep.module(), args, kwargs), iodir)
            return f"{set_name}: {problem}" if problem else None

        row.run(check, one, pname)
    if not any(k != "example" for k in ref["sets"]):
        row.put("extra_inputs", NA, "no extra inputs", pname)
    if ref.get("invalid_error"):
        row.put("invalid_inputs", ERROR, ref["invalid_error"], pname)
    elif not ref["invalid"]:
        row.put("invalid_inputs", NA, "no invalid inputs", pname)
    for i, entry in enumerate(ref["invalid"]):
        def bad(entry=entry, i=i):
            behave.restore(ep, snap)
            args, kwargs = _inputs(entry["inputs"], iodir)
            try:
                behave.call(ep.module(), args, kwargs)
            except Exception as e:  # noqa: BLE001 - rejecting is the expected outcome
                want = entry["error"].split(":", 1)[0]
                if type(e).__name__ != want:
                    return f"invalid input #{i} rejected with {type(e).__name__}: {str(e).strip()[:200]}; " \
                           f"the original raised {entry['error']}"
                return None
            return f"invalid input #{i} accepted; the original raised {entry['error']}"

        row.run("invalid_inputs", bad, pname)
    behave.restore(ep, snap)


def _check_followups(row: Row, ref: dict, ep, pname: str, jobdir: str) -> None:
    snap = behave.snapshot(ep)
    iodir = os.path.join(jobdir, "io", pname)
    example = ref["sets"]["example"]

    def decomp():
        r = ref["decomp"]
        if "na" in r:
            return NA, r["na"]
        behave.restore(ep, snap)
        d = ep.run_decompositions()
        got = positional_names(describe_graph(d.graph_module, meta=False))
        graph_diff = first_difference(positional_names(r["graph"]), got)
        behave.restore(ep, snap)  # the decomposed program shares the state tensors
        args, kwargs = _inputs(example["inputs"], iodir)
        problem = behave.compare_result(r["expected"], behave.call(d.module(), args, kwargs), iodir)
        if problem:
            return problem + (f"; decomposed graph differs too: {graph_diff}" if graph_diff else "")
        if graph_diff:  # same results, different (equivalent) graph: pass, with a note
            return PASS, f"note: decomposed graph differs from torch's decomposition of the original " \
                         f"(intermediate names ignored): {graph_diff}"
        return None

    def unflatten():
        r = ref["unflatten"]
        if "na" in r:
            return NA, r["na"]
        behave.restore(ep, snap)
        u = torch.export.unflatten(ep)
        fqns = sorted(n for n, _ in u.named_modules())  # torch's order depends on the hash seed
        if fqns != sorted(r["fqns"]):
            return f"submodules: {first_difference(sorted(r['fqns']), fqns)}"
        args, kwargs = _inputs(example["inputs"], iodir)
        return behave.compare_result(r["expected"], behave.call(u, args, kwargs), iodir)

    def reexport():
        r = ref["reexport"]
        if "na" in r:
            return NA, r["na"]
        behave.restore(ep, snap)
        args, kwargs = _inputs(example["inputs"], iodir)
        again = torch.export.export(ep.module(), args, kwargs, strict=False)
        behave.restore(ep, snap)
        args, kwargs = _inputs(example["inputs"], iodir)
        return behave.compare_result(r["expected"], behave.call(again.module(), args, kwargs), iodir)

    row.run("decomp", decomp, pname)
    row.run("unflatten", unflatten, pname)
    row.run("reexport", reexport, pname)
    behave.restore(ep, snap)


def _check_resave(row: Row, job: dict, loaded: dict, enc: str, path: str, jobdir: str) -> None:
    import pt2format

    def resave():
        out = os.path.join(jobdir, f"resaved.{enc}.pt2f")
        obj = loaded if job["multi"] else next(iter(loaded.values()))
        pt2format.save(obj, out, encoding=enc, fsync=False, progress=False)
        with open(path, "rb") as f:
            a = f.read()
        with open(out, "rb") as f:
            b = f.read()
        if a == b:
            os.unlink(out)
            return None
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return f"saving the loaded program gives different bytes ({len(a)} vs {len(b)} bytes, first difference " \
               f"at offset {at}; kept as {os.path.basename(out)}); canonical dumps: {_dump_diff(path, out)}"

    row.run("resave", resave)


def _dump_diff(a: str, b: str) -> str:
    """First difference between the canonical dumps (`python -m pt2format dump`) of two files."""
    import json
    import subprocess

    try:
        docs = [json.loads(subprocess.run([sys.executable, "-m", "pt2format", "dump", p], capture_output=True,
                                          check=True, timeout=600).stdout) for p in (a, b)]
    except Exception as e:  # noqa: BLE001 - only a diagnostic
        return f"not comparable ({type(e).__name__})"
    return first_difference(docs[0], docs[1]) or "identical (the bytes differ in layout only)"


def run_encoding(job: dict, enc: str, jobdir: str) -> tuple[dict, dict]:
    import pt2format

    row, timing = Row(), {}
    path = os.path.join(jobdir, f"program.{enc}.pt2f")
    loaded = {}
    for pname in job["programs"]:
        try:
            t0 = time.perf_counter()
            ep = pt2format.load(path, program=pname if job["multi"] else None)
            timing[f"load_s:{pname}"] = time.perf_counter() - t0
            loaded[pname] = ep
            row.put("load", PASS)
        except Exception as e:  # noqa: BLE001
            row.put("load", ERROR, _exc(e), pname)
    if len(loaded) != len(job["programs"]):
        return row.checks, timing
    # Static properties and re-saving first, while the state is as loaded.
    for pname, ep in loaded.items():
        _check_static(row, job["refs"][pname], ep, pname)
    _check_resave(row, job, loaded, enc, path, jobdir)
    # Follow-ups before any call of ep.module(), in the producer's order (torch
    # keeps counters on the program that change the names later passes pick).
    for pname, ep in loaded.items():
        if enc == job["followup_encoding"]:
            _check_followups(row, job["refs"][pname], ep, pname, jobdir)
        else:
            for c in ("decomp", "unflatten", "reexport"):
                row.put(c, NA, f"run for {job['followup_encoding']} only")
        _check_behaviour(row, job["refs"][pname], ep, pname, jobdir)
    return row.checks, timing


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    jobdir = argv[0]
    job = read_json(os.path.join(jobdir, "job.json"))
    torch.manual_seed(0)
    torch.set_num_threads(job["num_threads"])
    for name in job["child_imports"]:
        importlib.import_module(name)
    result = {"rows": {}, "timings": {}}
    for enc in job["encodings"]:
        if not os.path.exists(os.path.join(jobdir, f"program.{enc}.pt2f")):
            continue
        result["rows"][enc], result["timings"][enc] = run_encoding(job, enc, jobdir)
    producer = sorted(m for m in sys.modules if m.startswith("conformance.corpus"))
    result["producer_modules_imported"] = producer
    write_json(os.path.join(jobdir, "result.json"), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
