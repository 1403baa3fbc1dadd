"""Sharded files written by the Python writer, and a stale shard from another save, for every reader's tests."""

from __future__ import annotations

import shutil

from pt2format import _api
from pt2format._generated import model as m

STALE_SHARD = "model-00002-of-00003.pt2shard"


def _package(n: int):
    return m.Package(format_version=m.FormatVersion(1, 0), producer=m.Producer(name="test"),
                     programs=[m.Program(name="forward", graph=m.Graph(), signature=m.GraphSignature())],
                     tensors=[m.Tensor(storage=i, dtype=m.ScalarType.UINT8, sizes=[100], strides=[1]) for i in range(n)],
                     storages=[m.Storage() for _ in range(n)])


def write_sharded(directory, *, seed: int = 0, n: int = 5):
    """`directory/model.pt2f` plus 3 shard files (about 250 data bytes each); returns the main path."""
    payloads = [bytes((seed + i * 7 + j) % 251 for j in range(100)) for i in range(n)]
    path = directory / "model.pt2f"
    _api.write_package(path, _package(n), payloads, fsync=False, max_shard_size=250)
    return path


def write_with_stale_shard(tmp_path):
    """A sharded file whose second shard was replaced by the same-named, same-sized shard of another save."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    path = write_sharded(ours)
    write_sharded(theirs, seed=3)
    shutil.copyfile(theirs / STALE_SHARD, ours / STALE_SHARD)
    return path
