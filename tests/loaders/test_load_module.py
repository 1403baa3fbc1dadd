"""pt2format.load_module against torch's own `ep.module()`, case by case over the conformance corpus.

Each corpus program is exported here (in this process: the reference is the
freshly exported program), saved, and loaded with `load_module`. On the
example input, the case's other valid inputs and those derived from the
program's ranges (conformance/_inputs.py), both modules must return the same
output tree bit for bit, leave the same bits in every buffer and parameter
and in the inputs they mutate; on the invalid inputs both must refuse, with
the same exception type and the same kind of message (input guard, runtime
assertion, input structure). Every run starts from the initial state: torch's
module shares its tensors with the program (restored from a snapshot), ours is
loaded afresh (its tensors are a private map of the file).

The fast set runs by default; the rest is marked `corpus` (run with --corpus).
A program the fast path does not build must fall back to `load(...).module()`,
and only for the reasons listed in FALLBACKS.
"""

from __future__ import annotations

import importlib

import pytest
import torch
import torch.utils._pytree as pytree

import pt2format
from conformance.adapters import trusted_subclasses
from conformance import _behave as behave
from conformance import _inputs, corpus
from conformance._describe import describe_treespec
from conformance._tensorio import tensor_bytes
from conformance.runner import not_exportable

#: case -> why load_module takes torch's path for it (reported, never silent).
FALLBACKS = {
    "effect_tokens": "effect tokens",
}


def _params():
    for c in corpus.all_cases().values():
        marks = [] if c.fast else [pytest.mark.corpus]
        if c.slow:
            marks.append(pytest.mark.timeout(3600))
        yield pytest.param(c.name, marks=marks, id=c.name)


def _leaves_equal(a, b) -> str | None:
    la, sa = pytree.tree_flatten(a)
    lb, sb = pytree.tree_flatten(b)
    if describe_treespec(sa) != describe_treespec(sb):
        return f"tree structure differs: {sa} vs {sb}"
    for i, (x, y) in enumerate(zip(la, lb)):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return f"leaf {i}: {type(x).__name__} vs {type(y).__name__}"
        if isinstance(x, torch.Tensor):
            if x.dtype != y.dtype or x.shape != y.shape or x.device != y.device:
                return f"leaf {i}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
            if tensor_bytes(x) != tensor_bytes(y):
                return f"leaf {i}: values differ"
        elif type(x) is not type(y) or (x != y and not (x != x and y != y)):
            return f"leaf {i}: {x!r} vs {y!r}"
    return None


def _shapes(tree):
    leaves, spec = pytree.tree_flatten(tree)
    return describe_treespec(spec), [(x.dtype, tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x)
                                     for x in leaves]


def _copy(a, k):
    return pytree.tree_map_only(torch.Tensor, torch.clone, (tuple(a), dict(k)))


def _programs(case):
    built = case.build()
    return built if isinstance(built, dict) else {"forward": built}, isinstance(built, dict)


@pytest.mark.parametrize("name", list(_params()))
def test_load_module_matches_torch_module(name, tmp_path):
    case = corpus.get_case(name)
    for mod in case.child_imports:
        importlib.import_module(mod)
    pinned = not_exportable()
    try:
        specs, multi = _programs(case)
        eps = {pname: spec.export() for pname, spec in specs.items()}
    except Exception as e:  # noqa: BLE001
        if name in pinned:
            pytest.skip(f"torch cannot export {name}: {pinned[name].get('reason', '')}")
        raise
    path = tmp_path / "case.pt2f"
    pt2format.save(eps if multi else eps["forward"], path, progress=False)
    trusted = trusted_subclasses()  # the case's own subclass libraries, as a user would pass them
    for pname, ep in eps.items():
        spec = specs[pname]
        snap = behave.snapshot(ep)
        reference = ep.module()

        def run_torch(a, k):
            behave.restore(ep, snap)
            with torch.no_grad():
                return reference(*a, **k)

        def run_ours(a, k):
            m = pt2format.load_module(path, program=pname if multi else None, allow_subclasses=trusted)
            with torch.no_grad():
                return m, m(*a, **k)

        extra, invalid, _ = _inputs.derive(ep, spec.args, spec.kwargs, run_torch, want_extra=2, want_invalid=1)
        valid = [(tuple(spec.args), dict(spec.kwargs))] + [tuple(x) for x in spec.extra_inputs] + extra
        invalid = [tuple(x) for x in spec.invalid_inputs] + invalid

        probe = pt2format.load_module(path, program=pname if multi else None, allow_subclasses=trusted)
        why = getattr(probe, "pt2format_fallback", None)
        if why is not None:
            expected = FALLBACKS.get(name)
            assert expected is not None and expected in why, f"{name}/{pname} fell back unexpectedly: {why}"

        assert probe.meta.get("custom") == reference.meta.get("custom"), f"{name}/{pname}: meta['custom'] differs"
        for i, (a, k) in enumerate(valid):
            ta, tk = _copy(a, k)
            oa, ok_ = _copy(a, k)
            want = run_torch(ta, tk)
            want_state = behave.snapshot(reference)  # bits: sub-byte dtypes have no copy kernel
            mod, got = run_ours(oa, ok_)
            where = f"{name}/{pname} input set {i}"
            if case.deterministic:
                assert _leaves_equal(want, got) is None, f"{where}: outputs: {_leaves_equal(want, got)}"
                assert _leaves_equal((ta, tk), (oa, ok_)) is None, f"{where}: inputs after the call differ"
                ours = behave.snapshot(mod)
                assert set(want_state) == set(ours), f"{where}: state names {sorted(set(want_state) ^ set(ours))}"
                for n, bits in want_state.items():
                    assert torch.equal(bits, ours[n]), f"{where}: state {n!r} after the call differs"
            else:
                assert _shapes(want) == _shapes(got), f"{where}: output structure or shapes differ"

        for i, (a, k) in enumerate(invalid):
            where = f"{name}/{pname} invalid input {i}"
            errors = []
            for run in (run_torch, run_ours):
                try:
                    run(*_copy(a, k))
                except Exception as e:  # noqa: BLE001 - the expected outcome
                    errors.append(e)
                else:
                    errors.append(None)
            want, got = errors
            assert want is not None, f"{where}: torch accepted it"
            assert got is not None, f"{where}: load_module accepted what torch refused ({_inputs.error_text(want)})"
            assert type(got) is type(want), f"{where}: {_inputs.error_text(got)} vs torch's {_inputs.error_text(want)}"
            assert _inputs.guard_kind(got) == _inputs.guard_kind(want), \
                f"{where}: {_inputs.error_text(got)} vs torch's {_inputs.error_text(want)}"
        behave.restore(ep, snap)
