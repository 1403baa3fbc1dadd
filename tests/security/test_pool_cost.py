"""The cost test's CI sample (tests/security/pool_cost.py): every consumer, every field that holds a pool
expression, shared expressions at depths below and far over the bound (SPEC.md §11.6).

The full run is `python -m tests.security.pool_cost` (every depth up to the bound, the browser and
run_decompositions too); see that module for the consumers, budgets and the growth rule.
"""

from __future__ import annotations

import pytest

from tests.security import pool_cost as C


def _check(rows, consumers):
    bad = C.problems(rows)
    assert not bad, "\n".join(bad)
    seen = {(r["field"], r["shape"], r["depth"], r["consumer"]) for r in rows}
    assert {r["consumer"] for r in rows} == set(consumers)
    assert not [r for r in rows if r["outcome"].startswith("unavailable")]
    return seen


def test_python_consumers_sample():
    consumers = [c for c in C.SAMPLE["consumers"] if c in C.PY_CONSUMERS]
    rows = C.run(depths=C.SAMPLE["depths"], consumers=consumers)
    _check(rows, consumers)
    over = [r for r in rows if r["depth"] == max(C.SAMPLE["depths"]) and r["consumer"] in C.READERS]
    assert over and all("LimitError" in r["outcome"] and "expanded size" in r["outcome"] for r in over)
    under = [r for r in rows if r["depth"] < max(C.SAMPLE["depths"]) and r["consumer"] == "load"]
    assert under and all(r["outcome"] == "ok" for r in under), [r for r in under if r["outcome"] != "ok"]


@pytest.mark.native
def test_native_dumps_sample():
    import native_util_cpp
    import native_util_ts

    for util in (native_util_cpp, native_util_ts):
        why = util.missing_toolchain()
        if why:
            pytest.fail(f"the native readers are needed: {why}")
    native_util_cpp.build()
    native_util_ts.build()
    consumers = ["cpp_dump", "ts_dump"]
    rows = C.run(fields=("size",), depths=C.SAMPLE["depths"], consumers=consumers)
    _check(rows, consumers)
