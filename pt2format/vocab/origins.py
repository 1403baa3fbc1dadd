"""Where loaded tensors came from (file, tensor row, storage), so re-saving finds the file's sharing again.

Programs of one file loaded by separate `load` calls get separate maps of
the file, hence separate tensor objects and storages for the weights they
share. The loader records each tensor's origin here; the exporter then
writes one row and one storage again for tensors of the same origin, after
checking that the geometry and the bytes still agree (maps are
copy-on-write, so a program may have changed its copy). Entries are weak:
they vanish with the tensors.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import torch
from torch.utils.weak import WeakIdKeyDictionary


class Origin(NamedTuple):
    file: tuple          # identity of the file: (st_dev, st_ino, st_size, st_mtime_ns)
    row: int             # index in Package.tensors
    storage: int         # index in Package.storages
    data_ptr: int        # the storage's address when loaded: a later set_()/.data swap voids the origin


_origins = WeakIdKeyDictionary()
_lock = threading.Lock()


def remember(t: torch.Tensor, file: tuple, row: int, storage: int) -> None:
    """Record that `t` is row `row` (on storage `storage`) of the file identified by `file`."""
    o = Origin(file, row, storage, t.untyped_storage().data_ptr())
    with _lock:
        _origins[t] = o


def origin_of(t: torch.Tensor) -> Origin | None:
    """The recorded origin of `t`, or None (not loaded, or its storage was replaced since)."""
    with _lock:
        o = _origins.get(t)
    if o is None or t.untyped_storage().data_ptr() != o.data_ptr:
        return None
    return o
