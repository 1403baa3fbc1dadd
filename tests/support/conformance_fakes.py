"""Deliberately wrong writers for the conformance runner's negative controls (tests/conformance).

They follow the writer interface of conformance/adapters.py and are named on
the runner's target list as `conformance_fakes:NAME`, so they must be
importable by the loader process too (the test puts tests/support on its
PYTHONPATH).
"""

from __future__ import annotations

import torch


class MutatingWriter:
    """Saves correctly, then changes one weight of the program it was given."""

    label = "mutating"
    multi_program = True

    def save(self, obj, path) -> None:
        import pt2format

        pt2format.save(obj, path, fsync=False, progress=False)
        with torch.no_grad():
            next(iter(obj.state_dict.values())).add_(1)


mutating_writer = MutatingWriter()
