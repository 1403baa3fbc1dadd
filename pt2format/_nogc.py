"""no_gc: the collector off while a program is built or exported (millions of new objects, none of them garbage).

Two refinements for loads, whose objects outlive the block (`no_gc(lasting=True)` and `young_only`).
Both use `gc.freeze()` / `gc.unfreeze()`, which only splice the collector's lists, and both stand aside
when the application has frozen objects of its own (a pre-fork server), since `unfreeze` would thaw them.
(Finding out walks the frozen list, `gc.get_freeze_count()`: nothing when the list is empty, a few
milliseconds a load for an application that froze a million objects.)

Objects that reach the oldest generation this way skip the count by which CPython decides that a full
collection is due (objects promoted into it since the last one). A loop that loads program after program
would then never collect the programs it drops (they are reference cycles). `_owed_full_collection` keeps
that count's place: a lasting block that starts when the heap has doubled since the last full collection
runs one first.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading

_gc_lock = threading.Lock()
_gc_users = 0  # blocks inside no_gc, over all threads
_lasting = False  # a block that ended while others ran asked for its objects to be aged
_local = threading.local()  # this thread's no_gc depth
_young_window = False  # inside young_only, with the rest of the heap frozen
# Allocated memory blocks (sys.getallocatedblocks: small objects, cheap to count) after the last full
# collection that saw every object, or when this module was imported.
_blocks_after_full = sys.getallocatedblocks()


def _note_full_collection(phase: str, info: dict) -> None:
    # Not gc.get_freeze_count(): it walks the frozen list (half a million objects inside young_only).
    # An application's own frozen objects make the count approximate, but then nothing is aged.
    global _blocks_after_full
    if phase == "stop" and info["generation"] == 2 and not _young_window:
        _blocks_after_full = sys.getallocatedblocks()


gc.callbacks.append(_note_full_collection)


def _owed_full_collection() -> bool:
    """Whether the heap has doubled since the last full collection (CPython's own rule: a quarter more
    long-lived objects, counted only as they are promoted, which aged objects are not)."""
    return sys.getallocatedblocks() > 2 * _blocks_after_full


def _depth() -> int:
    return getattr(_local, "depth", 0)


@contextlib.contextmanager
def no_gc(*, lasting: bool = False):
    """gc.disable() for the build, reference-counted so concurrent loads do not re-enable it early.

    `lasting=True`: what the block makes is kept (a loaded program). When the
    collector comes back on, the objects made meanwhile go straight to the oldest
    generation instead of being traversed by the young collection that
    re-enabling starts. That collection finds nothing to free in a loaded program
    (its garbage is collected by `young_only`) and took 0.15-0.2 s of a cold
    20,000-node load; the objects would reach the oldest generation after two
    such traversals anyway. The full collection they are owed runs at the start
    of a later lasting block (see the module docstring).
    """
    global _gc_users, _lasting
    if lasting and _gc_users == 0 and gc.isenabled() and gc.get_freeze_count() == 0 and _owed_full_collection():
        gc.collect()  # outside the lock: finalizers run here, and may load
    with _gc_lock:
        if _gc_users == 0:
            no_gc.was_enabled = gc.isenabled()
            _lasting = False
        gc.disable()  # also when another thread's `young_only` has it on: this block's objects are not garbage
        _gc_users += 1
        _local.depth = _depth() + 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            _local.depth -= 1
            _lasting = _lasting or lasting
            if _gc_users == 0 and no_gc.was_enabled:
                if _lasting and gc.get_freeze_count() == 0:
                    gc.freeze()  # every tracked object to the permanent generation...
                    gc.unfreeze()  # ...and from there to the oldest one
                gc.enable()


no_gc.was_enabled = True


@contextlib.contextmanager
def young_only():
    """Inside `no_gc`: the collector on for the block, over the objects the block makes only.

    torch's verifier leaves about six objects of reference cycles (closures) per
    node, 120,000 on a 20,000-node program, 8 MB that would otherwise wait for the
    collection after the load. Freezing what exists first keeps each young
    collection as small as the garbage: the loaded program is not traversed.
    Stands aside (the collector stays off) when another thread is inside
    `no_gc`, when the application turned the collector off, or has frozen objects.
    """
    global _young_window
    with _gc_lock:
        on = _gc_users == _depth() > 0 and no_gc.was_enabled and gc.get_freeze_count() == 0
        if on:
            _young_window = True
            gc.freeze()
            gc.enable()
    try:
        yield
    finally:
        if on:
            # The block's last cycles (fewer than a young collection's threshold, and their parents); outside
            # the lock, as finalizers run here.
            gc.collect(1)
            with _gc_lock:
                gc.disable()
                gc.unfreeze()  # into the oldest generation: they are the program being loaded
                _young_window = False
