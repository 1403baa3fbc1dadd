"""Drop the cached pages of a file a save is about to replace, before the new bytes are written.

Why: the old file's page cache becomes garbage the moment the new file takes
its name, but the kernel frees it only at the unlink, after the write. The
write meanwhile needs as much memory again, which it takes from free memory
(or, under memory pressure, from other files' cached pages while the doomed
ones stay). Freed first, those pages are what the write gets. On a VM whose
balloon reports free memory to the host (virtio `REPORTING`, as on the
project machine), pages free for more than about two seconds are handed back
to the host and cost a host fault each when reused: a 475 MB buffered write
there took 0.41-1.25 s from such memory and 0.15 s right after the old
file's cache was dropped (benchmarks/README, "The save and the page cache").

`POSIX_FADV_DONTNEED` never changes the file: it drops clean pages that are
not mapped and starts the writeback of dirty ones. So it is done only where
it is cheap and harmless:

* Linux with `posix_fadvise`, a regular file of at least `MIN_BYTES`;
* at most `MAX_DIRTY_BYTES` dirty in the whole system (`/proc/meminfo`): the
  old file cannot then have more, so the call cannot start a large writeback
  on the caller's time (nor write out a file about to be unlinked);
* the file not mapped by this process (`/proc/self/maps`): a program saving
  over the file its weights are mapped from would read them from disk again.

Everything here is advice: any error leaves the save as it was.
"""

from __future__ import annotations

import os
import stat

#: Smaller files gain too little to pay for the checks (two small /proc reads).
MIN_BYTES = 32 << 20
#: The most dirty page cache in the system (bytes) for which the old file's writeback cost stays small.
MAX_DIRTY_BYTES = 16 << 20


def release_cache_of_replaced(path: str) -> bool:
    """Drop the page cache of the regular file at `path` if that is cheap and harmless (see the module).

    Returns whether the advice was given (for tests; callers ignore it).
    """
    if not hasattr(os, "posix_fadvise"):
        return False
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size < MIN_BYTES:
            return False
        dirty = _system_dirty_bytes()
        if dirty is None or dirty > MAX_DIRTY_BYTES or _mapped_here(path, st):
            return False
        # No follow, no blocking on a FIFO raced into place; the descriptor must be the file lstat saw.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
        try:
            same = os.fstat(fd)
            if (same.st_dev, same.st_ino) != (st.st_dev, st.st_ino):
                return False  # replaced meanwhile: leave whatever is there alone
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _system_dirty_bytes() -> int | None:
    """`Dirty` + `Writeback` of /proc/meminfo in bytes; None where there is no such file."""
    try:
        with open("/proc/meminfo", "rb") as f:
            text = f.read()
    except OSError:
        return None
    total, seen = 0, 0
    for line in text.splitlines():
        if line.startswith((b"Dirty:", b"Writeback:")):
            parts = line.split()
            if len(parts) < 2 or not parts[1].isdigit():
                return None
            total += int(parts[1]) * 1024
            seen += 1
    return total if seen == 2 else None


def _mapped_here(path: str, st: os.stat_result) -> bool:
    """Whether /proc/self/maps lists the file; True where that cannot be told.

    A line matches by inode alone (an overlay filesystem may show another
    device there) or by path: a false match only skips the advice.
    """
    try:
        with open("/proc/self/maps", "rb") as f:
            text = f.read()
    except OSError:
        return True
    inode = str(st.st_ino).encode()
    real = os.fsencode(os.path.realpath(path))
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) >= 5 and (fields[4] == inode or (len(fields) == 6 and fields[5] == real)):
            return True
    return False
