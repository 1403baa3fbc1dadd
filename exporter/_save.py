"""save_programs: convert ExportedProgram(s) and write one .pt2f file atomically, with a progress bar."""

from __future__ import annotations

import contextlib
import os

from ._program import export_package


@contextlib.contextmanager
def _progress(enabled: bool, total: int):
    """A tqdm bar that only appears when the save takes more than a second."""
    if not enabled:
        yield None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a declared dependency
        yield None
        return
    bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, delay=1.0, desc="pt2format save",
               leave=False)
    try:
        yield bar
    finally:
        bar.close()


def save_programs(programs, path, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool = True,
                  example_inputs: bool = True) -> None:
    """Save one ExportedProgram (as program "forward") or a dict name -> ExportedProgram to `path`.

    Programs share deduplicated storages. The file is written to a temporary
    name and renamed into place, so an existing file is replaced only by a
    complete one.
    """
    from pt2format._api import write_package

    path = os.fspath(path)
    with _progress(progress, 2) as bar:
        package, payloads = export_package(programs, example_inputs=example_inputs)
        if bar is not None:
            bar.total = sum(p.nbytes for p in payloads) + 1
            bar.set_postfix_str("writing")
            bar.update(1)
        write_package(path, package, payloads, encoding=encoding, fsync=fsync)
        if bar is not None:
            bar.update(bar.total - bar.n)
