"""no_gc: the collector off while a program is built or exported (millions of new objects, none of them garbage)."""

from __future__ import annotations

import contextlib
import gc
import threading

_gc_lock = threading.Lock()
_gc_users = 0


@contextlib.contextmanager
def no_gc():
    """gc.disable() for the build, reference-counted so concurrent loads do not re-enable it early."""
    global _gc_users
    with _gc_lock:
        if _gc_users == 0:
            was_enabled = gc.isenabled()
            gc.disable()
            no_gc.was_enabled = was_enabled
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and no_gc.was_enabled:
                gc.enable()


no_gc.was_enabled = True
