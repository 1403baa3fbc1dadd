"""Largest expanded size (SPEC.md §11.6) of any expression over the conformance corpus: the figures the bounds are set from.

    python -m tests.security.sym_census [--tags transformers] [--names a,b]

Exports every selected case in this process (model code runs: corpus only),
turns each program into schema objects and prints, per case, the pool size
and the largest expanded size, then the maximum over all; and per file what
the file's budget counts (every pool node and every use of one): their
number, the sum of their expanded sizes, the largest, and what the file
spends of MAX_SYM_FILE_EXCESS. Cases that fail to export are listed, not
counted.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tags", default="", help="comma-separated corpus tags (all cases when empty)")
    ap.add_argument("--names", default="", help="comma-separated case names")
    a = ap.parse_args(argv)
    import torch

    from conformance.corpus import select
    from pt2format._symeval import MAX_SYM_FILE_EXCESS, SYM_FREE_SIZE, expanded_sizes
    from pt2format.exporter import export_package

    torch.set_num_threads(1)
    cases = select(tags=a.tags.split(",") if a.tags else None, names=a.names.split(",") if a.names else None)
    best, best_case, total_nodes, failed = 0, None, 0, []
    worst_spent, worst_mean = 0, 0.0
    for c in cases:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                built = c.build()
                progs = built if isinstance(built, dict) else {"forward": built}
                eps = {k: p.export() for k, p in progs.items()}
                pkg, _ = export_package(eps)
        except Exception as e:  # noqa: BLE001 - a census, not a test: report and go on
            failed.append((c.name, f"{type(e).__name__}: {str(e)[:120]}"))
            print(f"{c.name}: FAILED {type(e).__name__}", flush=True)
            continue
        n, total, spent, largest = file_budget(pkg)
        worst_spent = max(worst_spent, spent)
        worst_mean = max(worst_mean, total / n if n else 0)
        print(f"{c.name}: file budget: {n} nodes and uses, expanded sizes sum {total} (mean "
              f"{total / n if n else 0:.2f}, largest {largest}), spent {spent} of {MAX_SYM_FILE_EXCESS}", flush=True)
        for prog in pkg.programs:
            sizes = expanded_sizes(prog.sym_exprs or [], cap=1 << 62)
            m = max(sizes, default=0)
            total_nodes += len(sizes)
            print(f"{c.name}/{prog.name}: pool {len(sizes)} nodes, largest expanded size {m}, "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
            if m > best:
                best, best_case = m, f"{c.name}/{prog.name}"
    print(f"cases {len(cases)}, failed {len(failed)}, pool nodes {total_nodes}, largest expanded size {best} "
          f"({best_case})")
    print(f"file budget: largest mean expanded size per node and use {worst_mean:.2f} (free: {SYM_FREE_SIZE}), "
          f"largest spent {worst_spent} of {MAX_SYM_FILE_EXCESS}")
    for name, why in failed:
        print(f"  failed: {name}: {why}")
    return 0


def file_budget(pkg) -> tuple[int, int, int, int]:
    """(nodes and uses, sum of their expanded sizes, what the file spends of its budget, largest size) of a
    package, counted by the validator's own accounting (SPEC.md §11.6)."""
    from unittest import mock

    from pt2format import _validate
    from pt2format._symeval import SYM_FREE_SIZE, SymBudget

    sizes: list[int] = []

    class Keep(SymBudget):
        def charge(self, size, path):
            sizes.append(size)

    # With nothing free, the validator charges every node and use of the file.
    with mock.patch.object(_validate, "SYM_FREE_SIZE", 0):
        budget = Keep()
        for prog in pkg.programs:
            _validate._Program(prog, len(pkg.tensors), 128, pkg.tensors, budget).check()
    spent = sum(s - SYM_FREE_SIZE for s in sizes if s > SYM_FREE_SIZE)
    return len(sizes), sum(sizes), spent, max(sizes, default=0)


if __name__ == "__main__":
    sys.exit(main())
