"""Background threads of the loaders, ended before the interpreter finalizes.

A daemon thread still running when the interpreter finalizes is killed the
next time it takes the GIL, by a forced unwind of its stack. If it is then
inside torch's C++ code (a garbage collection it started frees a tensor,
and `THPVariable_clear` releases the GIL), the unwind meets a noexcept frame
and the process aborts: "terminate called without an active exception",
exit status 134, after a script that did nothing wrong. So every thread
started here is asked to stop and joined at exit: prefetching stops at its
next slice, code generation finishes (it cannot be interrupted; torch would
have generated the code before the first output anyway).
"""

from __future__ import annotations

import atexit
import threading
import weakref

_threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_lock = threading.Lock()
_stopping = threading.Event()


def start(target, args: tuple, name: str) -> threading.Thread:
    """Start `target(*args)` in a daemon thread that the interpreter's exit waits for."""
    t = threading.Thread(target=target, args=args, name=name, daemon=True)
    with _lock:
        _threads.add(t)
    t.start()
    return t


def stopping() -> bool:
    """True once the interpreter is exiting: a long task should return at its next step."""
    return _stopping.is_set()


@atexit.register
def _join_at_exit() -> None:
    _stopping.set()
    with _lock:
        threads = list(_threads)
    for t in threads:
        if t is not threading.current_thread():
            t.join()
