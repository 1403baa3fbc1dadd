"""The file cost test's CI sample (tests/security/file_cost.py): every consumer's work, counted in operations,
on files of growing size whose every use is free, or over the file's budget (SPEC.md §11.6).

The full run (n up to 128 and the files that spend the whole allowance) is `python -m tests.security.file_cost`.
"""

from __future__ import annotations

from tests.security import file_cost as C


def test_consumers_are_linear_in_the_file():
    variants = ("plain", "free", "over")
    rows = C.run(ns=(16, 32), variants=variants)
    assert not C.problems(rows), "\n".join(C.problems(rows)) + "\n" + C.table(rows)
    got = {(r["n"], r["variant"], r["consumer"]) for r in rows}
    assert got == {(n, v, c) for n in (16, 32) for v in variants for c in C.CONSUMERS}
    # Without the budget, the `over` files load: each use is a 4093-node tree for torch (what this guards).
    assert all(r["outcome"].startswith("typed: LimitError") for r in rows
               if r["variant"] == "over" and r["consumer"] in C.READERS)
