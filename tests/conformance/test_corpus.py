"""Every corpus case round-trips through pt2format with torch-verified fidelity (conformance.runner).

The fast cases run by default (all three encodings); the rest are marked
`corpus` and run with `pytest --corpus` (flatbuffers). Only the cases pinned
in conformance/not_exportable.toml (with torch's reason) may fail to export;
they are skipped with that reason. Any other export failure fails, and so
does a pinned case that torch now exports. Every other outcome that is not a
pass fails, with each failing check's reason.
"""

from __future__ import annotations

import pytest

from conformance import corpus
from conformance.runner import run_case


def _params():
    for c in corpus.all_cases().values():
        marks = []
        if not c.fast:
            marks.append(pytest.mark.corpus)
        if c.slow:  # big models and C++ builds: keep them on one worker
            marks += [pytest.mark.xdist_group("conformance-slow"), pytest.mark.timeout(3600)]
        else:
            marks.append(pytest.mark.timeout(900))
        yield pytest.param(c.name, marks=marks, id=c.name)


@pytest.mark.parametrize("name", list(_params()))
def test_corpus_case(name, tmp_path):
    result = run_case(corpus.get_case(name), workdir=str(tmp_path))
    if result.torch_error is not None:  # set only for a pinned case failing with its pinned error
        pytest.skip(result.torch_error)
    known = corpus.get_case(name).xfail_checks  # check -> a known problem: must still fail, alone
    fixed = [c for c in known if all(row.get(c, ["blocked"])[0] == "pass" for row in result.rows.values())]
    failures = [f for f in result.failures() if f[1] not in known]
    if fixed:
        failures.append(("*", ",".join(fixed), "fixed", "listed in the case's xfail_checks but passes now: "
                                                      "remove it from the list"))
    if failures:
        lines = [f"{len(failures)} failing checks for {name} (files in {tmp_path / name}):"]
        lines += [f"  {enc:11s} {check:18s} {status}: {reason}" for enc, check, status, reason in failures]
        pytest.fail("\n".join(lines), pytrace=False)


def test_fast_set_covers_the_issue_list():
    """The default run exercises each feature family at least once."""
    fast = {c.name for c in corpus.select(tags=["fast"])}
    for required in ("mlp", "dynamic_batch", "derived_dim_mul", "derived_dim_add", "unbacked_item",
                     "symfloat_symbool", "cond", "cond_nested", "map", "while_loop", "no_grad_region",
                     "autocast_region", "mutations", "lifted_constants", "tied_weights", "custom_op",
                     "custom_op_mutating_decomposed", "dtypes_state", "views_as_state", "effect_tokens", "multi_program",
                     "gpt2_tiny"):
        assert required in fast, required
    assert all(not c.slow for c in corpus.all_cases().values() if c.fast)


def test_exportdb_fully_listed():
    """Every ExportDB example is a case (those torch cannot export are pinned, not dropped)."""
    from torch._export.db.examples import all_examples

    names = {c.name for c in corpus.select(tags=["exportdb"])}
    assert names == {f"exportdb.{n}" for n in all_examples()}
