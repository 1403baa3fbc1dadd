"""from_torch / to_torch (pt2format._interop) over the conformance corpus: outputs equal torch's own round trip.

For each case: torch's reference is `torch.export.save` -> `torch.export.load`
of the exported program. `.pt2 -> from_torch -> pt2format.load` and
`pt2format.save -> to_torch -> torch.export.load` must give the same outputs,
bit for bit (shapes and dtypes only for cases with random outputs). A case
torch itself cannot export, or cannot save and load again, tests torch and
is skipped with torch's error. A few cases run by default; the whole corpus
with `--corpus`.
"""

from __future__ import annotations

import importlib
import warnings

import pytest
import torch
import torch.utils._pytree as pytree

import pt2format
from conformance import corpus
from conformance.adapters import trusted_subclasses
from conformance._behave import call, record_shapes, same_results

FAST = ("mlp", "dynamic_batch", "cond", "tied_weights", "mutations", "custom_op", "multi_program")


def _params():
    for c in corpus.all_cases().values():
        marks = [] if c.name in FAST else [pytest.mark.corpus]
        if c.slow:
            marks += [pytest.mark.xdist_group("conformance-slow"), pytest.mark.timeout(3600)]
        yield pytest.param(c.name, marks=marks, id=c.name)


def _fresh(args, kwargs):
    """Inputs cloned per call, so a program that mutates its inputs sees the same values every time."""
    clone = lambda x: x.clone() if isinstance(x, torch.Tensor) else x  # noqa: E731
    return pytree.tree_map(clone, tuple(args)), pytree.tree_map(clone, dict(kwargs))


def _run(ep, spec):
    args, kwargs = _fresh(spec.args, spec.kwargs)
    return call(ep.module(), args, kwargs)


def _same(case, want, got) -> bool:
    if case.deterministic:
        return same_results(want, got)
    return record_shapes(want) == record_shapes(got)


@pytest.mark.parametrize("name", list(_params()))
def test_torch_roundtrip(name, tmp_path):
    case = corpus.get_case(name)
    for module in case.child_imports:
        importlib.import_module(module)
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built = case.build()
            specs = built if isinstance(built, dict) else {None: built}
            eps = {k: p.export() for k, p in specs.items()}
    except Exception as e:  # noqa: BLE001 - torch's failure, not ours
        pytest.skip(f"torch itself cannot export this case: {type(e).__name__}: {e}")
    failures = []
    for key, ep in eps.items():
        spec = specs[key]
        ref = tmp_path / f"{key or 'forward'}.ref.pt2"
        try:
            torch.export.save(ep, ref)
            want = _run(torch.export.load(ref), spec)
        except Exception as e:  # noqa: BLE001
            pytest.skip(f"torch cannot save and load this case itself: {type(e).__name__}: {e}")
        # .pt2 -> .pt2f
        converted = tmp_path / f"{key or 'forward'}.pt2f"
        pt2format.from_torch(ref, converted, fsync=False, progress=False)
        allowed = trusted_subclasses()  # the case's own subclasses (its oplibs), as a user would allow them
        if not _same(case, want, _run(pt2format.load(converted, allow_subclasses=allowed), spec)):
            failures.append(f"{key}: from_torch output differs from torch.export.load's")
        # .pt2f -> .pt2
        ours = tmp_path / f"{key or 'forward'}.ours.pt2f"
        pt2format.save(eps if key is not None else ep, ours, fsync=False, progress=False)
        back = tmp_path / f"{key or 'forward'}.back.pt2"
        pt2format.to_torch(ours, back, program=key, allow_subclasses=allowed)
        if not _same(case, want, _run(torch.export.load(back), spec)):
            failures.append(f"{key}: to_torch output differs from torch.export.load's")
    assert not failures, failures


def test_extra_files_cross_both_ways(tmp_path):
    ep = torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    torch.export.save(ep, tmp_path / "a.pt2", extra_files={"notes.txt": "héllo"})
    pt2format.from_torch(tmp_path / "a.pt2", tmp_path / "a.pt2f")
    with pt2format.open(tmp_path / "a.pt2f") as f:
        assert f.extra_files() == {"notes.txt": "héllo".encode()}
    pt2format.to_torch(tmp_path / "a.pt2f", tmp_path / "b.pt2")
    extra = {"notes.txt": ""}
    torch.export.load(tmp_path / "b.pt2", extra_files=extra)
    assert extra == {"notes.txt": "héllo"}
    pt2format.save(ep, tmp_path / "bin.pt2f", extra_files={"w": b"\xff"})
    with pytest.raises(ValueError, match="not UTF-8"):
        pt2format.to_torch(tmp_path / "bin.pt2f", tmp_path / "c.pt2")


def test_file_objects_both_ways(tmp_path):
    import io

    ep = torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    src = io.BytesIO()
    torch.export.save(ep, src)
    src.seek(0)
    out = io.BytesIO()
    pt2format.from_torch(src, out)
    x = torch.randn(1, 2)
    assert torch.equal(pt2format.load(out.getvalue()).module()(x), ep.module()(x))
    back = io.BytesIO()
    pt2format.to_torch(out.getvalue(), back)
    back.seek(0)
    assert torch.equal(torch.export.load(back).module()(x), ep.module()(x))
