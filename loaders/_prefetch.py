"""Prefetching weight pages, so the first call of a loaded module does not stall on page faults.

Tensors are views of a map of the file: their pages arrive on first touch,
from the page cache (a minor fault per fault-around block) or from disk (a
major fault, one synchronous read each). `prefetch` starts the disk reads
for the whole file at once (`posix_fadvise(WILLNEED)`, asynchronous, in the
kernel) and touches one byte per page of every storage in a background
thread, so the page tables are filled while the graph is being built. The
thread only reads; at exit it stops at its next slice (`_background`).
"""

from __future__ import annotations

import os
import threading

from ._background import start as start_thread, stopping

_PAGE = 4096
_SLICE = 16 << 20  # bytes touched per step, so the GIL is passed on between steps


def prefetch(path: str, views) -> threading.Thread:
    """Ask the kernel to read `path` ahead and fault in the pages of `views` in a daemon thread."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        from pt2format._source import open_regular
        from pt2format.errors import FormatError

        try:
            with open_regular(path) as f:  # never blocks on a FIFO swapped in since the file was read
                advise(f.fileno(), 0, 0, os.POSIX_FADV_WILLNEED)
        except (OSError, FormatError):
            pass
    return start_thread(_touch, (list(views),), "pt2format-prefetch")


def _touch(views) -> None:
    for view in views:
        try:
            n = len(view)
            for start in range(0, n, _SLICE):
                if stopping():  # the interpreter is exiting and waits for this thread
                    return
                bytes(view[start:min(n, start + _SLICE):_PAGE])  # one byte per page: the fault is the point
        except (ValueError, TypeError):  # a released view (file closed): nothing left to warm
            return
