"""Where and how `save` writes: through symlinks, keeping the file's mode, to paths or file objects.

A path is written atomically by the container writer (temp file, fsync,
rename). Around it this module does what a careful tool does:

- a symlink (say a Hugging Face cache entry) is written through to its final
  target, so the link survives and points at the new content;
- an existing file keeps its permission bits (the new file gets them right
  after the rename; a fresh file gets the umask's, as for any new file);
- a target that exists and is not a regular file (a directory, FIFO or
  device, say a link to `/dev/zero`) is refused with a FormatError before
  anything is written, as every reader refuses one;
- an OSError names the user's path, never the hidden temporary file.

A binary file object (or anything with `write`) receives exactly the bytes a
file would hold, in order, from its current position; it is flushed, and
fsynced when it has a file descriptor and `fsync` is on. Writing to a stream
cannot be atomic: on an error, part of the file may have reached it.
"""

from __future__ import annotations

import os
import stat

from pt2format._container.header import Header, SectionKind, pack_header
from pt2format._container.writer import DataLayout, byte_view, write_container, write_container_data_first
from pt2format._source import check_output_target

_CHUNK = 64 << 20  # one write call at most this big, as the container writer does


def is_stream_target(target) -> bool:
    return hasattr(target, "write") and not isinstance(target, (str, bytes, os.PathLike))


def resolve_path(path) -> str:
    """The file a save to `path` must replace: `path` itself, or the final target of a symlink chain."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if os.path.islink(path):
        return os.path.realpath(path)
    return path


def write_target(target, header: Header, program, data_views=(), data_layout: DataLayout | None = None, *,
                 fsync: bool, progress_callback) -> None:
    """Write the container to `target` (a path or a writable binary file object)."""
    if is_stream_target(target):
        _write_stream(target, header, program, data_views, data_layout, fsync=fsync,
                      progress_callback=progress_callback)
        return
    if not isinstance(target, (str, bytes, os.PathLike)):
        raise TypeError(f"expected a path (str or os.PathLike) or a binary file object with write(); "
                        f"got {type(target).__name__}")
    _at_path(target, lambda real: write_container(real, header, program, data_views, data_layout, fsync=fsync,
                                                  progress_callback=progress_callback))


def write_path_data_first(target, data_offset: int, data_views, data_layout: DataLayout, finish, *,
                          fsync: bool, progress_callback) -> None:
    """writer.write_container_data_first to a path, with write_target's handling of links, modes and errors."""
    _at_path(target, lambda real: write_container_data_first(real, data_offset, data_views, data_layout, finish,
                                                             fsync=fsync, progress_callback=progress_callback))


def _at_path(target, write) -> None:
    """Run `write(real_path)` for the file `target` names: through symlinks, keeping its mode, errors naming it."""
    user_path = os.fsdecode(os.fspath(target))
    real = resolve_path(user_path)
    check_output_target(real)  # never replace a device (a link to /dev/zero), FIFO or directory
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise _renamed(e, user_path) from None
    try:
        write(real)
        if mode is not None:
            os.chmod(real, mode)
    except OSError as e:
        raise _renamed(e, user_path) from None


def _renamed(err: OSError, user_path: str) -> OSError:
    """The same OSError (type, errno, message), naming the user's path instead of our temp file."""
    new = type(err)(err.errno, err.strerror, user_path) if err.errno is not None else type(err)(
        f"{user_path}: {err}")
    new.__cause__ = err.__cause__
    return new


def _write_stream(stream, header: Header, program, data_views, data_layout, *, fsync: bool,
                  progress_callback) -> None:
    """Emit header, program and data in file order; the bytes equal what write_container puts in a file."""
    pos = 0

    def put(view) -> None:
        nonlocal pos
        view = memoryview(view)
        done = 0
        while done < len(view):
            n = stream.write(view[done:done + _CHUNK])
            done += len(view[done:done + _CHUNK]) if n is None else n
            if progress_callback is not None:
                progress_callback(pos + done)
        pos += len(view)

    def zeros(n: int) -> None:
        if n < 0:
            raise AssertionError("sections out of order")
        while n:
            k = min(n, _CHUNK)
            put(bytes(k))
            n -= k

    put(pack_header(header))
    for entry in header.sections:
        zeros(entry.offset - pos)
        if entry.kind == SectionKind.PROGRAM:
            put(byte_view(program))
            continue
        base = pos
        for view, offset, size in zip(data_views, data_layout.offsets, data_layout.sizes):
            zeros(base + offset - pos)
            if len(view) != size:
                raise ValueError(f"payload changed size while writing: expected {size} bytes, got {len(view)}")
            put(view)
    if pos != header.file_length:
        raise AssertionError(f"wrote {pos} bytes, header says {header.file_length}")
    flush = getattr(stream, "flush", None)
    if flush is not None:
        flush()
    if fsync:
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            return  # in-memory streams (BytesIO) have no descriptor: nothing to make durable
        os.fsync(fd)
