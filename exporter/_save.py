"""save_programs: convert ExportedProgram(s) and write one .pt2f file atomically, with a progress bar."""

from __future__ import annotations

import contextlib
import os
import threading
import time

import torch

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
                  example_inputs: bool = True, max_shard_size=None, external_data=None,
                  weight_sets: dict | None = None) -> None:
    """Save one ExportedProgram (as program "forward") or a dict name -> ExportedProgram to `path`.

    Programs share deduplicated storages. The file is written to a temporary
    name and renamed into place, so an existing file is replaced only by a
    complete one. `max_shard_size` spreads the data over shard files next to
    `path`; `external_data` (safetensors file(s) in the same directory) makes
    storages whose bytes the file already holds point there instead of being
    copied; `weight_sets` adds named alternative weights.
    """
    path = os.fspath(path)
    with _progress(progress) as bar:
        package, payloads = export_package(programs, example_inputs=example_inputs, weight_sets=weight_sets)
        _write(path, package, payloads, bar, encoding=encoding, fsync=fsync, max_shard_size=max_shard_size,
               external_data=external_data)


def save_weights(weights, path, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool = True,
                 max_shard_size=None, external_data=None, name: str = "default") -> None:
    """Write a weights-only file: no program, one weight set `name` (or several, when `weights` is a dict of sets).

    `weights` is an ExportedProgram (its state), a dict name -> tensor, or a
    dict set name -> either of those (several sets in one file).
    """
    from ._weights import export_weights

    if isinstance(weights, dict) and weights and all(not isinstance(v, torch.Tensor) for v in weights.values()):
        sets = weights
    else:
        sets = {name: weights}
    path = os.fspath(path)
    with _progress(progress) as bar:
        package, payloads = export_weights(sets)
        _write(path, package, payloads, bar, encoding=encoding, fsync=fsync, max_shard_size=max_shard_size,
               external_data=external_data)


def _write(path, package, payloads, bar, *, encoding, fsync, max_shard_size, external_data) -> None:
    from pt2format import _api

    external = None
    if external_data is not None:
        from pt2format._external import plan_safetensors

        external = plan_safetensors(package, payloads, path, external_data)
    if bar is not None:
        bar.total = sum(p.nbytes for p in payloads) or 1
        bar.set_postfix_str("writing", refresh=False)
    _api.write_package(path, package, payloads, encoding=encoding, fsync=fsync, max_shard_size=max_shard_size,
                       external=external)
    if bar is not None:
        bar.update(bar.total - bar.n)
