"""save_programs: convert ExportedProgram(s) and write one .pt2f file atomically, with a progress bar."""

from __future__ import annotations

import contextlib
import os
import threading
import time

from pt2format.errors import ExportError, StringClassError

from ._program import export_package


@contextlib.contextmanager
def _progress(enabled: bool):
    """A tqdm bar that appears only when the save takes more than a second.

    The container writer has no progress callback, so while it writes, a
    ticker thread refreshes the bar (elapsed time, bytes to write); the bar
    completes when the write does.
    """
    if not enabled:
        yield None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a declared dependency
        yield None
        return
    bar = tqdm(total=1, unit="B", unit_scale=True, unit_divisor=1024, delay=1.0, desc="pt2format save", leave=False)
    stop = threading.Event()

    start = time.monotonic()

    def tick():
        while not stop.wait(0.25):
            if time.monotonic() - start >= 1.0:
                bar.refresh()
    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield bar
    finally:
        stop.set()
        ticker.join()
        bar.close()


def save_programs(programs, path, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool = True,
                  example_inputs: bool = True) -> None:
    """Save one ExportedProgram (as program "forward") or a dict name -> ExportedProgram to `path`.

    Programs share deduplicated storages. The file is written to a temporary
    name and renamed into place, so an existing file is replaced only by a
    complete one.
    """
    from pt2format import _api

    path = os.fspath(path)
    with _progress(progress) as bar:
        package, payloads = export_package(programs, example_inputs=example_inputs)
        if bar is not None:
            bar.total = sum(p.nbytes for p in payloads) or 1
            bar.set_postfix_str("writing", refresh=False)
        try:
            _api.write_package(path, package, payloads, encoding=encoding, fsync=fsync)
        except StringClassError as e:
            # A name torch accepted but readers refuse (SPEC.md §8): say so before anything is written.
            raise ExportError(f"the program has a name pt2format cannot store safely: {e.detail}", path=e.path,
                              expected=e.expected, got=e.got) from e
        if bar is not None:
            bar.update(bar.total - bar.n)
