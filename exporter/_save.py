"""save_programs: convert ExportedProgram(s) and write one .pt2f file atomically, with a progress bar."""

from __future__ import annotations

import contextlib
import sys

from pt2format._options import SAVE, SAVE_WEIGHTS
from pt2format.errors import ExportError, StringClassError

import torch

from ._program import export_package


def _want_bar(progress) -> bool:
    """`progress=None` means: show a bar only when stderr is a terminal (never in logs or CI)."""
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # closed stream
            return False
    return bool(progress)


@contextlib.contextmanager
def _progress(enabled: bool):
    """A tqdm bar in bytes that follows the writer (shown only when the save takes over a second).

    Yields a callback `update(bytes_written_so_far)` for the container writer,
    or None when no bar is wanted.
    """
    if not enabled:
        yield None, None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a declared dependency
        yield None, None
        return
    bar = tqdm(total=1, unit="B", unit_scale=True, unit_divisor=1024, delay=1.0, desc="pt2format save", leave=False)

    def update(written: int) -> None:
        if written > bar.n:
            bar.update(min(written, bar.total) - bar.n)
    try:
        yield bar, update
    finally:
        bar.close()


@SAVE.implements
def save_programs(programs, path, *, encoding, fsync, progress, example_inputs, extra_files, metadata,
                  max_shard_size, external_data, weight_sets) -> None:
    """Save one ExportedProgram (as program "forward") or a dict name -> ExportedProgram to `path`.

    Programs share deduplicated storages. A path is written to a temporary
    name and renamed into place, so an existing file is replaced only by a
    complete one (through symlinks, keeping its mode: see
    `pt2format._target`); a binary file object receives the same bytes.
    `max_shard_size` spreads the data over shard files next to `path`;
    `external_data` (safetensors file(s) in the same directory) makes storages
    whose bytes the file already holds point there instead of being copied;
    `weight_sets` adds named alternative weights.
    """
    from pt2format import _extras
    from pt2format._nogc import no_gc

    with _progress(_want_bar(progress)) as (bar, update), no_gc():
        package, payloads = export_package(programs, example_inputs=example_inputs, weight_sets=weight_sets)
        payloads = _extras.attach(package, payloads, extra_files=extra_files, metadata=metadata)
        _write(path, package, payloads, bar, update, encoding=encoding, fsync=fsync, max_shard_size=max_shard_size,
               external_data=external_data)
        # Freed here by reference counting (the tree has no cycles), not left for the collection that turning
        # the collector back on starts: it would traverse a million live objects of a large graph first.
        del package, payloads


@SAVE_WEIGHTS.implements
def save_weights(weights, path, *, encoding, fsync, progress, max_shard_size, external_data, name) -> None:
    """Write a weights-only file: no program, one weight set `name` (or several, when `weights` is a dict of sets).

    `weights` is an ExportedProgram (its state), a dict name -> tensor, or a
    dict set name -> either of those (several sets in one file).
    """
    from ._weights import export_weights

    if isinstance(weights, dict) and weights and all(not isinstance(v, torch.Tensor) for v in weights.values()):
        sets = weights
    else:
        sets = {name: weights}
    from pt2format._nogc import no_gc

    with _progress(_want_bar(progress)) as (bar, update), no_gc():
        package, payloads = export_weights(sets)
        _write(path, package, payloads, bar, update, encoding=encoding, fsync=fsync, max_shard_size=max_shard_size,
               external_data=external_data)


def _write(path, package, payloads, bar, update, *, encoding, fsync, max_shard_size, external_data) -> None:
    from pt2format import _api

    external = None
    if external_data is not None:
        import os

        from pt2format._external import plan_safetensors

        external = plan_safetensors(package, payloads, os.fspath(path), external_data)
    if bar is not None:
        bar.total = sum(memoryview(p).nbytes for p in payloads) or 1
    try:
        _api.write_package(path, package, payloads, encoding=encoding, fsync=fsync, progress_callback=update,
                           max_shard_size=max_shard_size, external=external)
    except StringClassError as e:
        # A name torch accepted but readers refuse (SPEC.md §9): say so before anything is written.
        raise ExportError(f"the program has a name pt2format cannot store safely: {e.detail}", path=e.path,
                          expected=e.expected, got=e.got) from e
    if bar is not None:
        bar.update(bar.total - bar.n)
