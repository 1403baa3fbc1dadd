"""The fresh loader process: load each saved file with its target's loader and check it against torch's records.

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
import re
import sys
import time
import traceback

import torch

from conformance import _behave as behave
from conformance._describe import (
    decomposed_meta,
    describe_graph,
    describe_program,
    describe_state,
    first_difference,
    positional_names,
    provenance_meta,
)
from conformance._inputs import error_text
from conformance._tensorio import decode, read_json, write_json

PASS, FAIL, ERROR, NA, BLOCKED = "pass", "fail", "error", "na", "blocked"
CHILD_CHECKS = ("load", "graph", "meta", "signature", "range_constraints", "module_call_graph", "state",
                "example_inputs", "resave", "outputs", "extra_inputs", "invalid_inputs", "decomp", "unflatten",
                "reexport", "programs", "options")


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


def _no_inputs_reason(ref: dict, what: str) -> str:
    info = ref.get("inputs", {})
    notes = "; ".join(info.get("notes", {}).get("extra" if what == "extra" else "invalid", [])[:2])
    if what == "extra":
        return ("no other valid input: the case lists none, and no input derived from the program's shapes "
                "and ranges was accepted by the original" + (f" ({notes})" if notes else ""))
    return ("no invalid input: the case lists none, and no input derived from the program's shapes and ranges "
            "(a size outside a range, a wrong static size) is rejected by one of the original's guards")


def _check_behaviour(row: Row, ref: dict, ep, pname: str, jobdir: str, job: dict | None = None) -> None:
    snap = behave.snapshot(ep)
    iodir = os.path.join(jobdir, "io", pname)
    if ref.get("nondeterministic_error"):  # first: it explains any difference that follows
        row.put("outputs", ERROR, ref["nondeterministic_error"], pname)
    for set_name, entry in ref["sets"].items():
        check = "outputs" if set_name == "example" else "extra_inputs"

        def one(entry=entry, set_name=set_name):
            behave.restore(ep, snap)
            args, kwargs = _inputs(entry["inputs"], iodir)
            got = behave.call(ep.module(), args, kwargs, grads="grads" in entry["expected"])
            problem = behave.compare_result(entry["expected"], got, iodir)
            if problem:
                return _layout_or_fail(job or {}, pname, check, f"{set_name}: {problem}", problem)
            if not ref.get("deterministic", True):
                return PASS, ("note: the case declares random outputs (deterministic=False): dtypes, shapes and "
                              "structure compared, not values")
            return None

        row.run(check, one, pname)
    n_extra = sum(1 for k in ref["sets"] if k != "example")
    dynamic_dims = ref.get("inputs", {}).get("dynamic_dims", 0)
    if dynamic_dims and n_extra < 2:  # the suite promises two: one fewer is the suite's failure, not a pass
        row.put("extra_inputs", ERROR, f"a program with dynamic dimensions is checked on {n_extra} other valid "
                                       "input(s), fewer than two: " + _no_inputs_reason(ref, "extra").replace(
                                           "no other valid input: ", ""), pname)
    elif not n_extra:
        row.put("extra_inputs", NA, _no_inputs_reason(ref, "extra"), pname)
    if ref.get("invalid_error"):
        row.put("invalid_inputs", ERROR, ref["invalid_error"], pname)
    elif not ref["invalid"]:
        row.put("invalid_inputs", NA, _no_inputs_reason(ref, "invalid"), pname)
    for i, entry in enumerate(ref["invalid"]):
        def bad(entry=entry, i=i):
            behave.restore(ep, snap)
            args, kwargs = _inputs(entry["inputs"], iodir)
            try:
                behave.call(ep.module(), args, kwargs)
            except Exception as e:  # noqa: BLE001 - rejecting is the expected outcome
                got = error_text(e)
                if got != entry["error"]:  # the same guard: same type and message
                    problem = f"invalid input #{i} rejected with {got!r}; the original raised {entry['error']!r}"
                    why = _explained(job or {}, pname, "invalid_inputs", problem)
                    if why is None:
                        return problem + " (not listed in conformance/explained.toml)"
                    return PASS, f"note: explained difference ({why}): {problem}"
                return None
            return f"invalid input #{i} accepted; the original raised {entry['error']}"

        row.run("invalid_inputs", bad, pname)
    behave.restore(ep, snap)


def _layout_or_fail(job: dict, pname: str, check: str, text: str, problem):
    """A failure, unless it is a layout difference (same values) listed in explained.toml."""
    if isinstance(problem, behave.LayoutDifference):
        why = _explained(job, pname, check, text)
        if why is not None:
            return PASS, f"note: explained difference ({why}): {text}"
        return text + " (not listed in conformance/explained.toml)"
    return text


def _explained(job: dict, pname: str, check: str, difference: str) -> str | None:
    for e in job.get("explained", []):
        if e.get("program", "forward") == pname and e["check"] == check and e["difference"] == difference:
            return e["why"]
    return None


def _check_followups(row: Row, job: dict, ref: dict, ep, pname: str, jobdir: str) -> None:
    snap = behave.snapshot(ep)
    iodir = os.path.join(jobdir, "io", pname)
    example = ref["sets"]["example"]
    # Make all three first, in the producer's order, then run them.
    made, failed = {}, {}
    for key in ("decomp", "unflatten", "reexport"):
        if "na" in ref[key]:
            continue
        behave.restore(ep, snap)
        try:
            if key == "decomp":
                made[key] = ep.run_decompositions()
            elif key == "unflatten":
                made[key] = torch.export.unflatten(ep)
            else:
                args, kwargs = _inputs(example["inputs"], iodir)
                made[key] = torch.export.export(ep.module(), args, kwargs, strict=False)
        except Exception as e:  # noqa: BLE001
            failed[key] = e
    decomp_state = describe_state(made["decomp"]) if "decomp" in made else None  # as made, before any run

    def results(key):
        prog = made[key]
        fn = prog if key == "unflatten" else prog.module()
        own = behave.snapshot(prog)  # as the producer does

        def outcome(label, inputs, want, lost=""):
            """(what differs from torch's outcome, or None; the result's comparison problem, or None)."""
            behave.restore(prog, own)
            behave.restore(ep, snap)
            args, kwargs = _inputs(inputs, iodir)
            try:
                got = behave.call(fn, args, kwargs)
            except Exception as e:  # noqa: BLE001 - compared with torch's outcome
                if "error" in want and (error_text(e) == want["error"] or key == "decomp" and
                                        _any_node(error_text(e)) == _any_node(want["error"])):
                    return None, None
                return f"{label}: raised {error_text(e)!r}" + (
                    f"; torch raised {want['error']!r}" if "error" in want else "; torch returned a result"), None
            if "error" in want:
                return f"{label}: returned a result; torch raised {want['error']!r}{lost}", None
            return None, behave.compare_result(want["expected"], got, iodir)

        note = None
        for set_name, want in ref[key]["sets"].items():
            differs, problem = outcome(set_name, ref["sets"][set_name]["inputs"], want)
            if differs:
                return differs
            if problem:
                verdict = _layout_or_fail(job, pname, key, f"{set_name}: {problem}", problem)
                if not isinstance(verdict, tuple):
                    return verdict
                note = note or verdict  # explained: the other sets are still compared
        for i, want in enumerate(ref[key].get("invalid", [])):  # torch's outcome on each invalid input
            differs, problem = outcome(f"invalid input #{i}", ref["invalid"][i]["inputs"], want, " (guards lost?)")
            if differs or problem:
                return differs or f"invalid input #{i}: {problem}"
        return note

    def check(key, static_problem, state_problem=None):
        r = ref[key]
        if "na" in r:
            return NA, r["na"]
        if key in failed:
            raise failed[key]
        if state_problem:  # never explainable: the state must be torch's, bit for bit
            return state_problem
        problem = results(key)
        if isinstance(problem, tuple):  # an explained layout difference: still check the graph
            if not static_problem:
                return problem
            problem = None
        if problem:
            return problem + (f"; {static_problem}" if static_problem else "")
        if static_problem:
            why = _explained(job, pname, key, static_problem)
            if why is None:
                return static_problem + " (not listed in conformance/explained.toml)"
            return PASS, f"note: explained difference ({why}): {static_problem}"
        return None

    def decomp_graph():
        if "decomp" not in made:
            return None
        got = positional_names(describe_graph(made["decomp"].graph_module, meta=False))
        diff = first_difference(positional_names(ref["decomp"]["graph"]), got)
        if diff:
            return f"decomposed graph differs from torch's decomposition of the original " \
                   f"(intermediate names ignored): {diff}"
        if "meta" in ref["decomp"]:
            diff = first_difference(provenance_meta(ref["decomp"]["meta"]),
                                    provenance_meta(decomposed_meta(made["decomp"].graph_module)))
            if diff:
                return f"decomposed graph's node metadata differs from torch's decomposition of the original " \
                       f"(nodes by position, provenance keys): {diff}"
        return None

    def unflatten_fqns():
        if "unflatten" not in made:
            return None
        fqns = sorted(n for n, _ in made["unflatten"].named_modules())  # torch's order depends on the hash seed
        diff = first_difference(sorted(ref["unflatten"]["fqns"]), fqns)
        return f"submodules: {diff}" if diff else None

    def decomp_state_problem():
        if decomp_state is None or "state" not in ref["decomp"]:
            return None
        diff = first_difference(ref["decomp"]["state"], decomp_state)
        return f"the decomposed program's state differs from torch's decomposition of the original: {diff}" \
            if diff else None

    row.run("decomp", lambda: check("decomp", decomp_graph(), decomp_state_problem()), pname)
    row.run("unflatten", lambda: check("unflatten", unflatten_fqns()), pname)
    row.run("reexport", lambda: check("reexport", None), pname)
    behave.restore(ep, snap)


def _any_node(error: str) -> str:
    """A runtime assertion's error without the node it names: a re-trace (run_decompositions) names its
    nodes from counters outside the program, as `positional_names` says."""
    return re.sub(r"on node '[A-Za-z_][A-Za-z0-9_]*'", "on node '…'", error)


def _check_resave(row: Row, job: dict, loaded: dict, target: dict, path: str, jobdir: str) -> None:
    from conformance import adapters

    writer = adapters.resolve(target["writer"])
    if not adapters.attr(writer, "deterministic_bytes", True):
        row.put("resave", NA, f"the writer ({target['writer']}) does not give the same bytes when it saves the same "
                              "program twice, so re-saving a loaded program cannot be compared byte for byte")
        return

    def resave():
        out = os.path.join(jobdir, f"resaved.{target['label']}.pt2f")
        obj = loaded if job["multi"] else next(iter(loaded.values()))
        writer.save(obj, out, **{k: adapters.SAVE_OPTION_VALUES[k] for k in target.get("save_options", ())})
        with open(path, "rb") as f:
            a = f.read()
        with open(out, "rb") as f:
            b = f.read()
        if a == b:
            os.unlink(out)
            return None
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        diag = f"; canonical dumps: {_dump_diff(path, out)}" if adapters.attr(writer, "pt2format_file", True) else ""
        return f"saving the loaded program gives different bytes ({len(a)} vs {len(b)} bytes, first difference " \
               f"at offset {at}; kept as {os.path.basename(out)}){diag}"

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


def run_target(job: dict, target: dict, jobdir: str) -> tuple[dict, dict]:
    """Every loader-side check for one target's file."""
    from conformance import adapters

    row, timing = Row(), {}
    path = os.path.join(jobdir, target["path"])
    loader = adapters.resolve(target["loader"])
    if job["multi"] and not adapters.attr(loader, "multi_program", False):
        for c in CHILD_CHECKS:
            row.put(c, NA, f"the loader ({target['loader']}) reads one program per file; this case is a "
                           "multi-program file")
        return row.checks, timing
    loaded = {}
    for pname in job["programs"]:
        try:
            t0 = time.perf_counter()
            ep = loader.load(path, program=pname if job["multi"] else None)
            timing[f"load_s:{pname}"] = time.perf_counter() - t0
            if not isinstance(ep, torch.export.ExportedProgram):
                raise TypeError(f"the loader returned {type(ep).__name__}, not an ExportedProgram")
            loaded[pname] = ep
            row.put("load", PASS)
        except Exception as e:  # noqa: BLE001
            row.put("load", ERROR, _exc(e), pname)
    if len(loaded) != len(job["programs"]):
        return row.checks, timing
    # Static properties and re-saving first, while the state is as loaded.
    for pname, ep in loaded.items():
        _check_static(row, job["refs"][pname], ep, pname)
    _check_resave(row, job, loaded, target, path, jobdir)
    # Follow-ups before any call of ep.module(), in the producer's order (torch
    # keeps counters on the program that change the names later passes pick).
    for pname, ep in loaded.items():
        _check_followups(row, job, job["refs"][pname], ep, pname, jobdir)
        _check_behaviour(row, job["refs"][pname], ep, pname, jobdir, job)
    _check_programs(row, job, loaded, jobdir)
    _check_options(row, job, target, loader, path)
    return row.checks, timing


def _check_programs(row: Row, job: dict, loaded: dict, jobdir: str) -> None:
    """A multi-program file: state its programs share is one storage after load, and the
    programs run one after another without a restore (a prefill writes the cache a decode
    reads) give torch's results."""
    from conformance._describe import cross_program_aliases

    if not job["multi"]:
        row.put("programs", NA, "one program per file: nothing is shared between programs")
        return

    def shared():
        diff = first_difference(job["cross_aliases"], cross_program_aliases(loaded))
        return f"state shared between programs (one storage in torch's programs) after load: {diff}" \
            if diff else None

    def sequence():
        snaps = {n: behave.snapshot(ep) for n, ep in loaded.items()}
        iodir = os.path.join(jobdir, "io", "_sequence")
        try:
            for n, ep in loaded.items():
                behave.restore(ep, snaps[n])
            for n, ep in loaded.items():
                want = job["sequence"][n]
                args, kwargs = _inputs(want["inputs"], iodir)
                problem = behave.compare_result(want["expected"], behave.call(ep.module(), args, kwargs), iodir)
                if problem:
                    return (f"programs run one after another ({', '.join(loaded)}) without a restore: {n}: {problem}"
                            " (state one program writes is not what the next one reads?)")
        finally:
            for n, ep in loaded.items():
                behave.restore(ep, snaps[n])
        return None

    row.run("programs", shared)
    row.run("programs", sequence)


def _state_devices(ep) -> list:
    """(name, device type) of every state tensor that is not on the meta device."""
    tensors = list(ep.state_dict.items()) + [(k, v) for k, v in ep.constants.items() if isinstance(v, torch.Tensor)]
    return [(k, v.device.type) for k, v in tensors if v.device.type != "meta"]


def _check_options(row: Row, job: dict, target: dict, loader, path: str) -> None:
    """The writer's and the loader's options, each declared one checked once (first program):
    map_location="meta" and weights=False give meta-device state and torch's graph; extra_files
    and metadata give back what the writer was given."""
    from conformance import adapters

    pname = job["programs"][0]
    program = pname if job["multi"] else None
    declared = adapters.attr(loader, "load_options", ())
    written = target.get("save_options", [])
    skipped = []

    def meta_state(option, value):
        def check():
            ep = loader.load(path, program=program, **{option: value})
            if not isinstance(ep, torch.export.ExportedProgram):
                return f"load({option}={value!r}) returned {type(ep).__name__}"
            real = _state_devices(ep)
            if real:
                return f"load({option}={value!r}) left state off the meta device: {real[:3]}"
            diff = first_difference(job["refs"][pname]["static"]["graph"], describe_graph(ep.graph_module,
                                                                                        meta=False))
            return f"load({option}={value!r}) changed the graph: {diff}" if diff else None
        return check

    def read_back(option):
        def check():
            got = {}
            loader.load(path, program=program, **{option: got})
            want = adapters.SAVE_OPTION_VALUES[option]
            if option == "extra_files":
                want = {k: v.encode("utf-8") for k, v in want.items()}
                got = {k: v.encode("utf-8") if isinstance(v, str) else bytes(v) for k, v in got.items()}
            missing = {k: v for k, v in want.items() if got.get(k) != v}
            return f"{option} given to the writer {want!r}, read back {got!r}" if missing else None
        return check

    for option, fn in (("map_location", meta_state("map_location", "meta")), ("weights", meta_state("weights", False)),
                       ("extra_files", read_back("extra_files")), ("metadata", read_back("metadata"))):
        if option not in declared:
            skipped.append(f"the loader takes no {option}")
        elif option in ("extra_files", "metadata") and option not in written:
            skipped.append(f"the writer takes no {option}")
        else:
            row.run("options", fn)
    if len(skipped) == 4:
        row.put("options", NA, "; ".join(skipped))
    elif skipped and row.checks.get("options", [None])[0] == PASS:
        row.put("options", PASS, "note: not checked: " + "; ".join(skipped))


def run_encoding(job: dict, enc: str, jobdir: str) -> tuple[dict, dict]:
    """pt2format's own loader and writer for one encoding (kept for callers of the old interface)."""
    return run_target(job, {"label": enc, "path": f"program.{enc}.pt2f",
                            "loader": "conformance.adapters:pt2format_loader",
                            "writer": f"conformance.adapters:{enc}_writer"}, jobdir)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    jobdir = argv[0]
    job = read_json(os.path.join(jobdir, "job.json"))
    torch.manual_seed(0)
    torch.set_num_threads(job["num_threads"])
    for name in job["child_imports"]:
        importlib.import_module(name)
    result = {"rows": {}, "timings": {}}
    for target in job["targets"]:
        if not os.path.exists(os.path.join(jobdir, target["path"])):
            continue
        result["rows"][target["label"]], result["timings"][target["label"]] = run_target(job, target, jobdir)
    producer = sorted(m for m in sys.modules if m.startswith("conformance.corpus"))
    result["producer_modules_imported"] = producer
    write_json(os.path.join(jobdir, "result.json"), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
