"""Where `read`, `load` and `open` take a file from: a path, bytes, or a binary file object.

A path is mapped (mmap, zero-copy). Bytes and file objects cannot be mapped:
a bytes-like object is read in place (or copied once when the caller needs
writable views), and a file object is read to its end into one private
buffer, so its data costs memory once and no mmap is involved. The name a
source gets in errors is the user's: the path as given, the file object's
`name` when it has a string one, else `<bytes>` / `<stream>`.

Every path a user gives (a file to read, its shard and external files, a
safetensors file, a torch archive, a file to hexdump or view, an output to
write) is opened here and nowhere else (tests/core/test_one_opener.py
enforces it): `open_regular` refuses what is not a regular file (a
directory, FIFO, device or socket, or a symlink to one, such as
`/dev/zero`) with a FormatError, without blocking; `read_regular` reads
such a file into memory and turns a file that shrinks meanwhile into a
FormatError; `open_output` does the same checks for a file to write.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from pt2format.errors import FormatError, LimitError, SegmentError

#: A file object is read in pieces of this size, so a pipe or socket never needs one huge read.
_READ_CHUNK = 16 << 20


@dataclass(frozen=True)
class Source:
    """A resolved input: either `path` (mapped) or `data` (in memory), and the name errors use."""
    name: str
    path: str | None = None
    data: object = None  # a buffer (bytes, bytearray, memoryview) when path is None

    @property
    def is_path(self) -> bool:
        return self.path is not None


def is_pathlike(obj) -> bool:
    return isinstance(obj, (str, os.PathLike))


def is_buffer(obj) -> bool:
    return isinstance(obj, (bytes, bytearray, memoryview))


def is_stream(obj) -> bool:
    return hasattr(obj, "read") and not is_pathlike(obj) and not is_buffer(obj)


def resolve_source(src, *, writable: bool = False, max_bytes: int | None = None) -> Source:
    """Classify `src` (path, bytes-like or binary file object) and, for a file object, read it.

    `writable=True` returns a private, writable buffer for in-memory sources
    (a copy of immutable bytes), as a copy-on-write map would be for a path.
    `max_bytes` bounds what a file object may deliver (LimitError beyond it).
    """
    if is_pathlike(src):
        path = os.fspath(src)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return Source(name=path, path=path)
    if is_buffer(src):
        view = memoryview(src)
        if view.ndim != 1 or view.format not in ("B", "b", "c"):
            view = view.cast("B")
        if writable and view.readonly:
            view = memoryview(bytearray(view))
        return Source(name="<bytes>", data=view)
    if is_stream(src):
        name = getattr(src, "name", None)
        name = name if isinstance(name, str) else "<stream>"
        return Source(name=name, data=memoryview(_read_all(src, name, max_bytes)))
    raise TypeError(f"expected a path (str or os.PathLike), bytes, or a binary file object opened for reading; "
                    f"got {type(src).__name__}")


def _read_all(stream, name: str, max_bytes: int | None) -> bytearray:
    """Read a binary file object from its current position to its end, into one buffer."""
    out = bytearray()
    readinto = getattr(stream, "readinto", None)
    while True:
        if readinto is not None:
            start = len(out)
            out.extend(bytes(_READ_CHUNK))
            n = readinto(memoryview(out)[start:])
            n = 0 if n is None else n
            del out[start + n:]
        else:
            chunk = stream.read(_READ_CHUNK)
            if isinstance(chunk, str):
                raise TypeError(f"{name}: file object is in text mode; open it with 'rb'")
            n = len(chunk) if chunk else 0
            out += chunk or b""
        if max_bytes is not None and len(out) > max_bytes:
            raise LimitError("file object holds more bytes than allowed", file=name,
                             expected=f"<= {max_bytes} bytes", got=f"> {max_bytes}")
        if n == 0:
            return out


def _refuse_irregular(fd: int, path: str) -> None:
    """Close `fd` and raise FormatError unless it is a regular file (checked on the descriptor, not the name)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FormatError("not a regular file", file=path, expected="a regular file", got=_kind(st.st_mode))


def _kind(mode: int) -> str:
    """What a file that is not regular is, in words ("a directory", "a FIFO", ...)."""
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return f"a file of type {stat.filemode(mode)[0]!r}"


def open_regular(path):
    """Open `path` for binary reading only if it is a regular file (SPEC.md §5); the one way to open one.

    Symlinks are followed (the Hugging Face cache links blobs), but what they
    end at must be a regular file: a directory, FIFO, device or socket is
    refused with a FormatError. O_NONBLOCK keeps a FIFO from blocking the open
    itself; the check then runs on the opened descriptor, so nothing can swap
    the file between check and use.
    """
    path = fs_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise FormatError("not a regular file (a directory)", file=path, expected="a regular file",
                          got="d (directory)") from None
    _refuse_irregular(fd, path)
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def unreadable(err: OSError, path: str, *, what: str, where: str) -> SegmentError:
    """The typed error for a file the format names (a shard or external file) that cannot be opened or read.

    Whatever the OS said (ELOOP, EACCES, ENOTDIR, ENAMETOOLONG, EMFILE, EIO,
    ...), the caller learns which file the program's `where` entry names and
    why, as a SegmentError: the data that segment promises cannot be reached.
    The OSError stays attached as `__cause__` (raise it `from err`).
    """
    code = errno.errorcode.get(err.errno, str(err.errno))
    reason = "is missing" if isinstance(err, FileNotFoundError) else "cannot be opened or read"
    return SegmentError(f"{what} {reason}", file=path, path=where, got=f"{code}: {err.strerror or err}")


def fs_path(path) -> str:
    """A str path from a str, bytes or os.PathLike one."""
    path = os.fspath(path)
    return os.fsdecode(path) if isinstance(path, bytes) else path


def read_regular(path, *, max_bytes: int | None = None) -> tuple:
    """(bytearray of the whole file, its os.stat_result) for the regular file at `path`, read into memory.

    The file's size is taken from the opened descriptor; a file that holds
    fewer bytes when read (truncated by another process meanwhile) is a
    FormatError, never a short buffer. `max_bytes` bounds the size
    (LimitError beyond it).
    """
    path = fs_path(path)
    with open_regular(path) as f:
        st = os.fstat(f.fileno())
        size = st.st_size
        if max_bytes is not None and size > max_bytes:
            raise LimitError("file larger than allowed", file=path, expected=f"<= {max_bytes} bytes", got=size)
        buf = bytearray(size)
        view = memoryview(buf)
        done = 0
        while done < size:
            n = _read_into(f, view[done:done + _READ_CHUNK])
            if not n:
                raise FormatError("file shrank while it was being read (changed by another process?)", file=path,
                                  offset=done, expected=f"{size} bytes", got=f"{done} bytes")
            done += n
        view.release()
    return buf, st


def _read_into(f, view) -> int:
    """One unbuffered read into `view` (a hook: tests truncate the file between two reads)."""
    return f.raw.readinto(view) or 0


def open_output(path, mode: str = "w", **kw):
    """Open `path` for writing (truncating it) only if it is a new or regular file; FormatError otherwise.

    A FIFO (which would block until a reader comes), a device (a symlink to
    `/dev/null`) or a directory is refused before any byte is written; as
    for `open_regular`, the check runs on the opened descriptor.
    """
    path = fs_path(path)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except IsADirectoryError:
        raise FormatError("not a regular file (a directory)", file=path, expected="a regular file",
                          got="d (directory)") from None
    except OSError as e:
        if e.errno == errno.ENXIO:  # a FIFO nobody reads: O_NONBLOCK refuses it
            raise FormatError("not a regular file", file=path, expected="a regular file",
                              got="p (FIFO)") from None
        raise
    _refuse_irregular(fd, path)
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    os.ftruncate(fd, 0)
    return os.fdopen(fd, mode, **kw)


def check_output_target(path) -> None:
    """Refuse an existing `path` (after symlinks) that is not a regular file, before a save replaces it.

    A save writes a temporary file next to its target and renames it over
    the target: over a device (a symlink to `/dev/zero`) or a FIFO that would
    replace a special file, so it is refused with FormatError.
    """
    path = fs_path(path)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(st.st_mode):
        raise FormatError("not a regular file", file=path, expected="a regular file or a new path",
                          got=stat.filemode(st.st_mode)[0] + " (directory, FIFO, device or socket)")


__all__ = ["Source", "resolve_source", "is_pathlike", "is_buffer", "is_stream", "open_regular", "read_regular",
           "open_output", "check_output_target", "fs_path", "unreadable"]
