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
    python -m conformance.runner --writer conformance.adapters:torch_writer \\
                                 --loader conformance.adapters:torch_loader   # torch's row beside ours
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:  # `python conformance/runner.py` works too
    sys.path.insert(0, REPO)

from conformance._record import _record_program, _record_sequence  # noqa: E402
from conformance._verdicts import (  # noqa: E402,F401 - the runner's names, as callers import them
    BLOCKED,
    CHECKS,
    CHILD_CHECKS,
    ERROR,
    FAIL,
    NA,
    PARENT_CHECKS,
    PASS,
    TORCH,
    CaseResult,
    Target,
    _exc,
    default_encodings,
    default_targets,
    explained_differences,
    not_exportable,
)


def _dump(path: str, timeout: float, command: str | None = None) -> bytes:
    """Canonical dump through a dump reader's command (default `python -m pt2format dump FILE`)."""
    import shlex

    template = command or "{python} -m pt2format dump {path}"
    argv = [a.replace("{python}", sys.executable).replace("{path}", path) for a in shlex.split(template)]
    proc = subprocess.run(argv, capture_output=True, timeout=timeout, cwd=REPO, env=_child_env())
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(f"the dump reader exited with {proc.returncode}: {' | '.join(tail)}")
    return proc.stdout


def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _file_checks(row: dict, path: str, expected_storages: tuple, timeout: float, dump_cmd: str | None = None
                 ) -> bytes | None:
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
    if dump_cmd and row["dump"][0] == PASS:  # a third-party dump reader must print the same bytes
        try:
            theirs = _dump(path, timeout, dump_cmd)
            if theirs != dump:
                at = next((i for i, (x, y) in enumerate(zip(dump, theirs)) if x != y), min(len(dump), len(theirs)))
                row["dump"] = [FAIL, f"the dump reader's output differs from `python -m pt2format dump` at byte {at} "
                                     f"({len(theirs)} vs {len(dump)} bytes)"]
        except Exception as e:  # noqa: BLE001
            row["dump"] = [ERROR, _exc(e)]
    try:
        f = pt2format.read(path)
        try:  # the storages of tensors (an extra file has a storage of its own, not a tensor's)
            extra = {e.storage for e in (f.package.extra_files or ())}
            n = len(f.package.storages) - len(extra)
        finally:
            f.close()
        lo, hi = expected_storages
        want = f"{lo}" if lo == hi else f"{lo} to {hi} (empty storages may be merged)"
        row["dedup"] = [PASS, ""] if lo <= n <= hi else \
            [FAIL, f"file holds {n} storages, the programs use {want} distinct ones"]
    except Exception as e:  # noqa: BLE001
        row["dedup"] = [ERROR, _exc(e)]
    return dump


def _compare_with_own_file(row: dict, obj, options: dict, dump: bytes, jobdir: str, label: str,
                           timeout: float) -> None:
    """A third party's pt2format file against pt2format's own file of the same program: equal
    canonical dumps (a file labelled with an older minor than its content dumps differently)."""
    from conformance import adapters

    if row["dump"][0] != PASS:
        return
    ref = os.path.join(jobdir, f"reference.{label}.pt2f")
    try:
        adapters.flatbuffers_writer.save(obj, ref, **options)
        ours = _dump(ref, timeout)
    except Exception as e:  # noqa: BLE001
        row["dump"] = [ERROR, "pt2format's own file of the same program, the reference, failed: " + _exc(e)]
        return
    if ours != dump:
        from conformance._describe import first_difference

        diff = first_difference(json.loads(ours), json.loads(dump))
        row["dump"] = [FAIL, "the canonical dump differs from that of pt2format's own file of the same program "
                             f"(saved with the same options): {diff or 'same tree, other bytes'}"]
    else:
        os.unlink(ref)


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


def run_case(case, *, encodings=None, targets=None, workdir: str | None = None, timeout: float = 1800.0
             ) -> CaseResult:
    """Run one corpus case end to end; never raises (a crash of the runner itself is an error verdict).

    `targets` (Target rows) default to pt2format's writer and loader in `encodings`
    (default: all three for fast cases, flatbuffers otherwise)."""
    t_start = time.perf_counter()
    targets = tuple(targets or default_targets(encodings or default_encodings(case)))
    try:
        return _run_case(case, targets=targets, workdir=workdir, timeout=timeout)
    except Exception as e:  # noqa: BLE001
        res = CaseResult(case.name, tuple(sorted(case.tags)))
        reason = "the runner failed (recording torch's behaviour or writing files): " + _exc(e)
        res.rows = {t.label: {c: [ERROR, reason] for c in CHECKS} for t in targets}
        res.seconds = time.perf_counter() - t_start
        return res


def _export_verdict(case, error: str | None) -> tuple[str, str]:
    """The `export` cell: torch's failure is expected only for pinned cases."""
    pinned = not_exportable().get(case.name)
    if error is None:
        if pinned:
            return FAIL, ("torch exports this case, but conformance/not_exportable.toml pins it as not exportable "
                          f"({pinned['reason']}): remove it from the list")
        return PASS, ""
    if pinned is None:
        return ERROR, f"torch failed to export a case that is not pinned in conformance/not_exportable.toml: {error}"
    if not error.startswith(pinned["error"]):
        return ERROR, (f"torch failed differently from the pinned reason (expected {pinned['error']!r}): {error}")
    return TORCH, f"pinned as not exportable: {pinned['reason']} (torch: {error})"


def _block(row: dict, checks, reason: str) -> None:
    """Mark `checks` blocked by an earlier cell, with why."""
    for c in checks:
        row.setdefault(c, [BLOCKED, reason])


def _na_row(reason: str) -> dict:
    return {c: [NA, reason] for c in CHECKS}


def _run_case(case, *, targets, workdir, timeout) -> CaseResult:
    import torch

    from conformance import adapters
    from conformance._describe import cross_program_aliases, describe_program, first_difference, storage_keys
    from conformance._tensorio import write_json

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
        res.rows = {t.label: {"export": [ERROR, "building the case failed: " + _exc(e)]} for t in targets}
        res.seconds = time.perf_counter() - t_start
        return res
    try:
        eps = {name: spec.export() for name, spec in specs.items()}
    except Exception as e:  # noqa: BLE001 - torch cannot export this case
        status, reason = _export_verdict(case, _exc(e))
        if status == TORCH:
            res.torch_error = reason
        res.rows = {t.label: {"export": [status, reason]} for t in targets}
        res.seconds = time.perf_counter() - t_start
        return res
    export_cell = list(_export_verdict(case, None))

    res.phases["export"] = time.perf_counter() - t_start
    static = {name: describe_program(ep) for name, ep in eps.items()}
    full, empty = set(), set()
    for ep in eps.values():
        f, e = storage_keys(ep)
        full |= f
        empty |= e
    storages = (len(full) + min(1, len(empty)), len(full) + len(empty))  # allowed range
    obj = eps if multi else eps["forward"]
    dumps, saved = {}, []
    for t in targets:
        writer = adapters.resolve(t.writer)
        if multi and not adapters.attr(writer, "multi_program", False):
            res.rows[t.label] = _na_row(f"the writer ({t.writer}) saves one program per file; this case is a "
                                        "multi-program file")
            res.rows[t.label]["export"] = list(export_cell)
            continue
        row = res.rows.setdefault(t.label, {"export": list(export_cell)})
        path = os.path.join(jobdir, f"program.{t.label}.pt2f")
        options = adapters.save_options(writer)
        try:
            t0 = time.perf_counter()
            writer.save(obj, path, **options)
            res.timings.setdefault(t.label, {})["save_s"] = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001
            row["save"] = [ERROR, _exc(e)]
            if os.path.exists(path):
                os.unlink(path)
            _block(row, PARENT_CHECKS[2:], "save raised an exception (see the save cell)")
            continue
        if not os.path.isfile(path):
            row["save"] = [FAIL, f"the writer ({t.writer}) returned without an error but left no file at "
                                 f"{os.path.basename(path)}"]
            _block(row, PARENT_CHECKS[2:], "save left no file (see the save cell)")
            continue
        row["save"] = [PASS, ""]
        saved.append(t)
        if adapters.attr(writer, "pt2format_file", True):
            dumps[t.label] = _file_checks(row, path, storages, timeout, t.dump)
            if not adapters.is_own_writer(writer) and dumps[t.label] is not None:
                _compare_with_own_file(row, obj, options, dumps[t.label], jobdir, t.label, timeout)
        else:
            why = f"the writer ({t.writer}) does not write pt2format files"
            for c, what in (("validate", "pt2format.validate"), ("dump", "the canonical dump"),
                            ("dedup", "storage counting through pt2format.read")):
                row[c] = [NA, f"{why}: {what} is defined for pt2format files only"]
    for name, ep in eps.items():  # saving must not change the program
        problem = first_difference(static[name], describe_program(ep))
        if problem:
            for t in saved:
                if res.rows[t.label].get("save", [None])[0] == PASS:
                    res.rows[t.label]["save"] = [FAIL, f"[{name}] save changed the program: {problem}"]
    own = {t.label for t in saved if adapters.is_own_writer(adapters.resolve(t.writer))}
    good = [(label, d) for label, d in dumps.items() if d is not None and label in own]
    for label, d in good[1:]:
        if d != good[0][1] and res.rows[label]["dump"][0] == PASS:
            res.rows[label]["dump"] = [FAIL, f"canonical dump differs from {good[0][0]}'s"]

    res.phases["save_and_file_checks"] = time.perf_counter() - t_start - res.phases["export"]
    t_rec = time.perf_counter()
    refs = {}
    for name, ep in eps.items():
        refs[name] = {"static": static[name]}
        refs[name].update(_record_program(specs[name], ep, name, jobdir, case.deterministic))
    sequence = _record_sequence(specs, eps, jobdir, case.deterministic) if multi else None
    cross = cross_program_aliases(eps) if multi else None
    del eps, obj
    gc.collect()
    res.inputs = {"extra": sum(len(r["sets"]) - 1 for r in refs.values()),
                  "invalid": sum(len(r["invalid"]) for r in refs.values()),
                  "programs": {name: {"extra": len(r["sets"]) - 1, "invalid": len(r["invalid"]),
                                      "dynamic_dims": r["inputs"]["dynamic_dims"]} for name, r in refs.items()}}

    explained = explained_differences().get(case.name, [])
    job = {"case": case.name, "multi": multi, "programs": list(specs),
           "targets": [{"label": t.label, "loader": t.loader, "writer": t.writer,
                        "save_options": sorted(adapters.save_options(adapters.resolve(t.writer))),
                        "path": f"program.{t.label}.pt2f"} for t in saved],
           "sequence": sequence, "cross_aliases": cross,
           "child_imports": list(case.child_imports), "num_threads": torch.get_num_threads(), "refs": refs,
           "explained": explained}
    write_json(os.path.join(jobdir, "job.json"), job)
    res.phases["torch_records"] = time.perf_counter() - t_rec
    t_child = time.perf_counter()
    child, why = _run_child(jobdir, timeout) if saved else (None, "nothing was saved")
    res.phases["loader_process"] = time.perf_counter() - t_child
    labels = {t.label for t in saved}
    for t in targets:
        row = res.rows[t.label]
        if row.get("save", [NA])[0] == NA:
            continue
        if t.label not in labels:  # nothing to load: every later cell is blocked, with the save cell's reason
            _block(row, CHILD_CHECKS, "save " + ("left no file" if row["save"][0] == FAIL else "raised an exception")
                   + " (see the save cell)")
            continue
        if child is None or t.label not in child["rows"]:
            reason = why or "the loader process returned no verdicts for this row"
            for c in CHILD_CHECKS:
                row[c] = [ERROR, reason]
            continue
        got = child["rows"][t.label]
        res.timings.setdefault(t.label, {}).update(child["timings"].get(t.label, {}))
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
    third = ap.add_argument_group("a third party's writer, loader or dump reader (see conformance/README.md)")
    third.add_argument("--writer", help="module:attribute of a writer (save(obj, path)); default: pt2format "
                                        "flatbuffers when --loader or --dump-reader is given")
    third.add_argument("--loader", help="module:attribute of a loader (load(path, program=None) -> "
                                        "ExportedProgram), run in a fresh process; default: pt2format.load")
    third.add_argument("--dump-reader", help="command printing the canonical dump of {path}, compared byte for "
                                             "byte with `python -m pt2format dump`")
    third.add_argument("--label", help="the third party's row label (default: the writer's `label`, or 'third')")
    third.add_argument("--only-third-party", action="store_true", help="leave pt2format's own rows out")
    ap.add_argument("--render", metavar="JSON", help="render the report from a --json file of an earlier (possibly "
                                                     "interrupted) run instead of running; selected cases missing "
                                                     "from it are listed as not run")
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
    from conformance._report import render_report

    if args.render:
        with open(args.render, encoding="utf-8") as f:
            results = [CaseResult.from_json(d) for d in json.load(f)]
        done = {r.name for r in results}
        text = render_report(results, not_run=[c.name for c in cases if c.name not in done])
        print(text)
        if not args.no_report:
            with open(args.report, "w", encoding="utf-8") as f:
                f.write(text)
        return 0
    extra_target = third_party_target(args)
    workdir = args.workdir or tempfile.mkdtemp(prefix="pt2f-conformance-")
    results = []
    t_run = time.perf_counter()
    for i, c in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {c.name} ...", file=sys.stderr, flush=True)
        targets = () if args.only_third_party else default_targets(encodings or default_encodings(c))
        targets += (extra_target,) if extra_target else ()
        r = run_case(c, targets=targets, workdir=workdir, timeout=args.timeout)
        state = "torch cannot export" if r.torch_error else ("pass" if r.passed else f"{len(r.failures())} failing")
        phases = ", ".join(f"{k} {v:.1f}" for k, v in r.phases.items())
        print(f"    {state} ({r.seconds:.1f} s: {phases})", file=sys.stderr, flush=True)
        results.append(r)
        if args.json:  # after every case, so an interrupted run can still be rendered (--render)
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump([x.to_json() for x in results], f, indent=1, sort_keys=True)
        gc.collect()
    print(f"{len(results)} cases in {time.perf_counter() - t_run:.0f} s", file=sys.stderr)
    text = render_report(results)
    print(text)
    if not args.no_report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"files and records kept in {workdir}", file=sys.stderr)
    return 0 if all(r.passed or r.torch_error for r in results) else 1


def third_party_target(args) -> Target | None:
    """The row for --writer/--loader/--dump-reader, or None when none is given."""
    if not (args.writer or args.loader or args.dump_reader):
        return None
    from conformance import adapters

    writer = args.writer or "conformance.adapters:flatbuffers_writer"
    label = args.label
    if label is None and args.writer:
        label = getattr(adapters.resolve(writer), "label", None)
    return Target(label or "third", writer, args.loader or "conformance.adapters:pt2format_loader",
                  args.dump_reader)


if __name__ == "__main__":
    sys.exit(main())
