"""Where `read`, `load` and `open` take a file from: a path, bytes, or a binary file object.

A path is mapped (mmap, zero-copy). Bytes and file objects cannot be mapped:
a bytes-like object is read in place (or copied once when the caller needs
writable views), and a file object is read to its end into one private
buffer, so its data costs memory once and no mmap is involved. The name a
source gets in errors is the user's: the path as given, the file object's
`name` when it has a string one, else `<bytes>` / `<stream>`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pt2format.errors import LimitError

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


__all__ = ["Source", "resolve_source", "is_pathlike", "is_buffer", "is_stream"]
