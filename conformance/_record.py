"""The producer side of a conformance run: torch's own behaviour on the original program, recorded to disk.

Outputs on the example, extra and invalid inputs, and the follow-ups
(run_decompositions, unflatten, re-export), written for the child process
that loads the saved file and compares (conformance/_child.py).
"""

from __future__ import annotations

import os

from conformance._verdicts import _exc

#: Minimum number of other valid / invalid inputs each program is checked on.
MIN_EXTRA, MIN_INVALID = 2, 1


class _Skipped(Exception):
    """A follow-up the case declares torch cannot record (Program.torch_breaks)."""


def _record_program(spec, ep, name: str, jobdir: str, deterministic: bool, *, derive_inputs: bool = True) -> dict:
    """Torch's behaviour for the original program: results per input set and follow-ups."""
    import torch

    from conformance import _behave as behave
    from conformance import _inputs
    from conformance._describe import decomposed_meta, describe_graph, describe_state
    from conformance._tensorio import TreeWriter, decode

    iodir = os.path.join(jobdir, "io", name)
    inputs_w, out_w = TreeWriter(iodir, "in"), TreeWriter(iodir, "out")
    snap = behave.snapshot(ep)
    example_doc = inputs_w.encode((tuple(spec.args), dict(spec.kwargs)))  # before any run

    def fresh(doc):
        args, kwargs = decode(doc, iodir)
        return tuple(args), dict(kwargs)

    def run(fn_of_nothing):
        behave.restore(ep, snap)
        return fn_of_nothing()

    # Follow-up programs first: torch keeps counters on the program that calls of
    # ep.module() advance; the loader process makes them in this same order.
    made, follow = {}, {}
    breaks = dict(getattr(spec, "torch_breaks", None) or {})
    for key, why in breaks.items():
        follow[key] = {"na": f"torch's own {key} of the original breaks the process: {why}"}
    try:
        if "decomp" in breaks:
            raise _Skipped
        behave.restore(ep, snap)
        made["decomp"] = ep.run_decompositions()
        follow["decomp"] = {"graph": describe_graph(made["decomp"].graph_module, meta=False),
                            "meta": decomposed_meta(made["decomp"].graph_module)}
    except _Skipped:
        pass
    except Exception as e:  # noqa: BLE001
        follow["decomp"] = {"na": "torch cannot run_decompositions() on the original: " + _exc(e)}
    try:
        if "unflatten" in breaks:
            raise _Skipped
        behave.restore(ep, snap)
        made["unflatten"] = torch.export.unflatten(ep)
        follow["unflatten"] = {"fqns": [n for n, _ in made["unflatten"].named_modules()]}
    except _Skipped:
        pass
    except Exception as e:  # noqa: BLE001
        follow["unflatten"] = {"na": "torch cannot unflatten the original: " + _exc(e)}
    try:
        if "reexport" in breaks:
            raise _Skipped
        behave.restore(ep, snap)
        made["reexport"] = torch.export.export(ep.module(), *fresh(example_doc), strict=False)
        follow["reexport"] = {}
    except _Skipped:
        pass
    except Exception as e:  # noqa: BLE001
        follow["reexport"] = {"na": "torch cannot re-export the original's module(): " + _exc(e)}
    if "decomp" in made:  # its state as made (the loader process describes its own at the same point)
        follow["decomp"]["state"] = describe_state(made["decomp"])

    # Inputs: the case's own, then derived ones up to the minimum (checked against the original).
    extra = [tuple(x) for x in spec.extra_inputs]
    invalid = [tuple(x) for x in spec.invalid_inputs]
    notes = {"extra": [], "invalid": []}
    n_extra, n_invalid = len(extra), len(invalid)
    if derive_inputs:
        def call_original(a, k):
            behave.restore(ep, snap)
            behave.call(ep.module(), a, k)

        try:
            more_extra, more_invalid, why = _inputs.derive(
                ep, spec.args, spec.kwargs, call_original, want_extra=MIN_EXTRA - len(extra),
                want_invalid=MIN_INVALID - len(invalid))
        except Exception as e:  # noqa: BLE001 - deriving is best effort; the cell says why it is missing
            more_extra, more_invalid, why = [], [], [f"deriving inputs failed: {_exc(e)}"]
        extra += more_extra
        invalid += more_invalid
        notes["extra"] += why
    sets = [("example", example_doc)]
    sets += [(f"extra_{i}" if i < n_extra else f"derived_{i - n_extra}", inputs_w.encode((tuple(a), dict(k))))
             for i, (a, k) in enumerate(extra)]

    # The example run also does one backward: every parameter's .grad is compared (`outputs`).
    first = run(lambda: behave.call(ep.module(), *fresh(example_doc), grads=deterministic))
    second = run(lambda: behave.call(ep.module(), *fresh(example_doc)))
    same = behave.same_results(first, second)

    def rec(result):
        return behave.record(result, out_w) if deterministic else behave.record_shapes(result)

    ref = {"sets": {}, "invalid": [], "deterministic": deterministic, "inputs": {
        "extra_listed": n_extra, "extra_derived": len(extra) - n_extra,
        "invalid_listed": n_invalid, "invalid_derived": len(invalid) - n_invalid,
        "dynamic": bool(ep.range_constraints), "dynamic_dims": _inputs.dynamic_dims(ep), "notes": notes}}
    if deterministic and not same:
        ref["nondeterministic_error"] = ("case definition error: two runs of the original on the example input "
                                         "differ, but the case does not declare deterministic=False")
    for set_name, doc in sets:
        result = first if set_name == "example" else run(lambda d=doc: behave.call(ep.module(), *fresh(d)))
        ref["sets"][set_name] = {"inputs": doc, "expected": rec(result)}
    for i, (a, k) in enumerate(invalid):
        doc = inputs_w.encode((tuple(a), dict(k)))
        origin = "listed" if i < n_invalid else "derived"
        try:
            run(lambda d=doc: behave.call(ep.module(), *fresh(d)))
        except Exception as e:  # noqa: BLE001 - the expected outcome
            kind = _inputs.guard_kind(e)
            if kind is None:
                ref["invalid_error"] = (f"case definition error: {origin} invalid input #{i} is not rejected by a "
                                        f"guard; the original fails elsewhere: {_exc(e)}")
            ref["invalid"].append({"inputs": doc, "error": _inputs.error_text(e), "kind": kind, "origin": origin})
        else:
            ref["invalid_error"] = f"case definition error: the original program accepted {origin} invalid input #{i}"
    # Follow-up results on every valid input set: a result, or torch's refusal.
    for key, prog in made.items():
        fn = prog if key == "unflatten" else prog.module()
        own = behave.snapshot(prog)  # its own state, if it copied any: every run starts from the initial one
        outcomes = {}
        for set_name, doc in sets:
            try:
                behave.restore(prog, own)
                outcomes[set_name] = {"expected": rec(run(lambda d=doc: behave.call(fn, *fresh(d))))}
            except Exception as e:  # noqa: BLE001 - e.g. the static re-export refuses other sizes
                outcomes[set_name] = {"error": _inputs.error_text(e)}
        follow[key]["sets"] = outcomes
        # The invalid inputs too: a follow-up whose module lost the guards accepts them.
        rejected = []
        for entry in ref["invalid"]:
            try:
                behave.restore(prog, own)
                rejected.append({"expected": rec(run(lambda d=entry["inputs"]: behave.call(fn, *fresh(d))))})
            except Exception as e:  # noqa: BLE001 - the expected outcome: torch's refusal, compared
                rejected.append({"error": _inputs.error_text(e)})
        follow[key]["invalid"] = rejected
    ref.update(follow)
    behave.restore(ep, snap)
    return ref


def _record_sequence(specs: dict, eps: dict, jobdir: str, deterministic: bool) -> dict:
    """Torch's results when a file's programs run one after another on their example inputs
    without restoring the state in between (a prefill writes the cache a decode then reads):
    program name -> {inputs, expected}, in the file's order."""
    from conformance import _behave as behave
    from conformance._tensorio import TreeWriter, decode

    iodir = os.path.join(jobdir, "io", "_sequence")
    w_in, w_out = TreeWriter(iodir, "in"), TreeWriter(iodir, "out")
    snaps = {name: behave.snapshot(ep) for name, ep in eps.items()}
    for name, ep in eps.items():
        behave.restore(ep, snaps[name])
    out = {}
    try:
        for name, ep in eps.items():
            doc = w_in.encode((tuple(specs[name].args), dict(specs[name].kwargs)))
            args, kwargs = decode(doc, iodir)
            result = behave.call(ep.module(), tuple(args), dict(kwargs))
            out[name] = {"inputs": doc, "expected": behave.record(result, w_out) if deterministic
                         else behave.record_shapes(result)}
    finally:
        for name, ep in eps.items():
            behave.restore(ep, snaps[name])
    return out
