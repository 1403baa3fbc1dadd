"""Swap two names atomically (Linux `renameat2(RENAME_EXCHANGE)`), so a save replaces a file without waiting.

Why not `os.replace`: on ext4 (default `auto_da_alloc`), renaming over an
existing file first starts the writeback of the whole new file, inside the
rename; for 500 MB that is 0.1-0.3 s, as long as writing the bytes. An
exchange is not a rename over a file, so it returns at once: the new file
takes the name, the temporary name now holds the old file, which the writer
unlinks in the background. Readers see the old file or the new one, never
neither, as with `os.replace`.

What the exchange gives up is ext4's implicit flush, a heuristic for programs
that never fsync; `fsync=True` (the default) flushes before the swap anyway,
so only `fsync=False` saves are affected, and they promise nothing about a
crash (a crash soon after one may leave the new file incomplete, as with any
unsynced write).

`swap(a, b)` returns False where there is no such call (not Linux, a libc
without `renameat2`, a filesystem that refuses the flag): the caller then
uses `os.replace`.
"""

from __future__ import annotations

import errno
import os
import sys

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
#: errnos after which `os.replace` is the right call: no exchange here (old kernel, a filesystem without the
#: flag, a sandbox refusing the call), or `b` vanished meanwhile (then a plain rename creates it). A real
#: problem (a permission, `a` missing) makes `os.replace` raise it in turn.
_FALL_BACK = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM, errno.EXDEV, errno.ENOENT}

_renameat2 = None  # resolved on first use: ctypes is not imported by a program that never saves
_resolved = False


def _function():
    global _renameat2, _resolved
    if not _resolved:
        _resolved = True
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).renameat2
                fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
                fn.restype = ctypes.c_int
                _renameat2 = (fn, ctypes)
            except (OSError, AttributeError, ImportError):  # no libc symbol (old glibc, other libc)
                _renameat2 = None
    return _renameat2


def swap(a: str, b: str) -> bool:
    """Exchange the directory entries `a` and `b` (both must exist); False if this system cannot.

    Errors after which `os.replace` cannot do better (say EACCES) raise OSError naming `b`.
    """
    found = _function()
    if found is None:
        return False
    fn, ctypes = found
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _FALL_BACK:
        return False
    raise OSError(err, os.strerror(err), b)
