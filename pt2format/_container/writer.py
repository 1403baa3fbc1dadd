"""Lays out sections and writes a `.pt2f` file atomically (temp file, fsync, rename).

Data payloads are streamed from their buffers straight to the file (no
concatenation in memory). On any failure the temp file is removed and a file
already at the destination is left untouched; `fsync=False` skips the fsyncs,
never the rename. Output bytes depend only on the inputs.

Replacing a large file: `os.replace` over it would free the old file's blocks
and (ext4) start the writeback of the new one inside that call, 0.1-0.4 s for
500 MB. The writer swaps the two names instead (`exchange.swap`, Linux) or
keeps a second link to the old file across the rename, and unlinks the old
file afterwards in a background thread, so the save returns as soon as the
new file is in place (see `atomic_write`).

A save whose weights dominate goes through `write_container_data_first`:
the data section is written first, at the offset a provisional program
encoding fixes, by a writer thread, while the caller's thread computes every
payload's CRC-32 from the same buffers (ISA-L's CRC and pwrite both release
the GIL). The program (which holds the storages' checksums) is encoded once
the checksums are known, while the writer finishes, and goes in with the
header by positional writes before the fsync and rename. The bytes are the
same as `write_container`'s.
"""

from __future__ import annotations

import os
import secrets
import stat
import threading
from dataclasses import dataclass

from pt2format._container import exchange
from pt2format._container.page_cache import release_cache_of_replaced
from pt2format._container.align import DATA_ALIGNMENT, PROGRAM_ALIGNMENT, align_up
from pt2format._container.crc import crc32, crc32_combine, crc32_zeros
from pt2format._container.header import (
    NO_PACKAGE_ID, ChecksumKind, Header, SectionEntry, SectionEncoding, SectionKind, header_length, pack_header,
)

_WRITE_CHUNK = 64 << 20  # one os.write call at most this big, so partial writes stay cheap to retry


@dataclass(frozen=True)
class DataLayout:
    """Where each payload sits inside one DATA section (offsets relative to the section start)."""
    offsets: tuple
    sizes: tuple
    length: int


def byte_view(payload) -> memoryview:
    """A flat unsigned-byte view of any C-contiguous buffer, without copying."""
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def layout_payloads(sizes, alignment: int = DATA_ALIGNMENT) -> DataLayout:
    """Back-to-back placement, each payload at the next multiple of `alignment`; no trailing padding."""
    offsets = []
    cursor = 0
    for size in sizes:
        if size < 0:
            raise ValueError(f"payload size must be non-negative, got {size}")
        start = align_up(cursor, alignment)
        offsets.append(start)
        cursor = start + size
    return DataLayout(tuple(offsets), tuple(sizes), cursor)


def payload_checksums(views, layout: DataLayout) -> tuple:
    """(CRC-32 of each payload, CRC-32 of the whole DATA section with its zero padding), one pass."""
    crcs = []
    section = 0
    cursor = 0
    for view, offset, size in zip(views, layout.offsets, layout.sizes):
        crc = crc32(view)
        crcs.append(crc)
        section = crc32_combine(crc32_zeros(offset - cursor, section), crc, size)
        cursor = offset + size
    return crcs, section


def build_header(*, format_version, required_features: int, program_length: int, program_crc: int,
                 encoding: int, data_layout: DataLayout | None, data_crc: int | None,
                 package_id: bytes = NO_PACKAGE_ID) -> Header:
    """The header for a main file: PROGRAM at entry 0, then (if any storages) one DATA section."""
    count = 1 if data_layout is None else 2
    program_offset = align_up(header_length(count), PROGRAM_ALIGNMENT)
    sections = [SectionEntry(SectionKind.PROGRAM, encoding, PROGRAM_ALIGNMENT, program_offset, program_length,
                             ChecksumKind.CRC32, program_crc)]
    end = program_offset + program_length
    if data_layout is not None:
        data_offset = align_up(end, DATA_ALIGNMENT)
        kind = ChecksumKind.NONE if data_crc is None else ChecksumKind.CRC32
        sections.append(SectionEntry(SectionKind.DATA, SectionEncoding.RAW, DATA_ALIGNMENT, data_offset,
                                     data_layout.length, kind, data_crc or 0))
        end = data_offset + data_layout.length
    major, minor = format_version
    return Header(major, minor, required_features, end, tuple(sections), package_id=package_id)


def write_container(path, header: Header, program, data_views=(), data_layout: DataLayout | None = None, *,
                    fsync: bool, progress_callback) -> None:
    """Write header, program and data payloads to `path` atomically, as laid out in `header`.

    `progress_callback`, if not None, is called as
    `progress_callback(bytes_written_so_far)` after each write of at most
    64 MiB, so a bar can follow the write itself. `fsync` and the callback
    come from the caller (`pt2format.save`'s options reach here through
    `_api.write_package`): no layer under the public functions has defaults
    of its own.
    """
    head = pack_header(header)

    def _write_all(fd: int, view, pos: int) -> int:
        return _write_all_reporting(fd, view, pos, progress_callback)

    def _write_zeros(fd: int, n: int, pos: int) -> int:
        if n < 0:
            raise AssertionError("sections out of order")
        return _write_all(fd, bytes(n), pos) if n else pos

    def fill(fd: int) -> None:
        pos = _write_all(fd, head, 0)
        for entry_index, entry in enumerate(header.sections):
            pos = _write_zeros(fd, entry.offset - pos, pos)
            if entry.kind == SectionKind.PROGRAM:
                pos = _write_all(fd, byte_view(program), pos)
                continue
            assert data_layout is not None  # one DATA section: entry 1 of a main file, entry 0 of a shard
            base = pos
            for view, offset, size in zip(data_views, data_layout.offsets, data_layout.sizes):
                pos = _write_zeros(fd, base + offset - pos, pos)
                if len(view) != size:
                    raise ValueError(f"payload changed size while writing: expected {size} bytes, got {len(view)}")
                pos = _write_all(fd, view, pos)
        if pos != header.file_length:
            raise AssertionError(f"wrote {pos} bytes, header says {header.file_length}")

    atomic_write(path, fill, fsync=fsync)


def _write_all(fd: int, view, pos: int) -> int:
    return _write_all_reporting(fd, view, pos, None)


class LayoutChanged(Exception):
    """The final program encoding is not as long as the provisional one: the data section sits elsewhere."""


_PASS_CHUNK = 64 << 20  # bytes per pwrite of the one-pass data write: few calls, few waits for the GIL


def _pwrite_all(fd: int, view, pos: int) -> None:
    done, n = 0, len(view)
    while done < n:
        done += os.pwrite(fd, view[done:done + _WRITE_CHUNK], pos + done)


def write_data_checksummed(fd: int, base: int, views, layout: DataLayout, progress_callback):
    """Write each payload at `base` + its offset and return (payload CRCs, section CRC, join).

    A writer thread puts the payloads in the file (pwrite of at most
    `_PASS_CHUNK` bytes, from the caller's buffers, no copy) while the
    caller's thread checksums them: the two do not wait for each other, as
    the CRC reads the same memory the writer copies (ISA-L's CRC takes a
    third of the write's time and releases the GIL, like pwrite). Padding is
    left as a hole (zeros). The returned `join()` waits for the writer and
    re-raises its error, so the caller can encode the program meanwhile
    (`join(abandon=True)` stops it instead, for a caller that failed); on an
    error here the writer is stopped and joined before it propagates.
    """
    for view, size in zip(views, layout.sizes):
        if len(view) != size:
            raise ValueError(f"payload changed size while writing: expected {size} bytes, got {len(view)}")
    failure: list = []
    stop = threading.Event()
    pieces = [(view, base + offset) for view, offset in zip(views, layout.offsets) if len(view)]

    def writer():
        written = 0
        try:
            for view, pos in pieces:
                for start in range(0, len(view), _PASS_CHUNK):
                    if stop.is_set():
                        return
                    chunk = view[start:start + _PASS_CHUNK]
                    _pwrite_all(fd, chunk, pos + start)
                    written += len(chunk)
                    if progress_callback is not None:
                        progress_callback(written)
        except BaseException as e:  # noqa: BLE001 - handed to the caller by join()
            failure.append(e)

    t = threading.Thread(target=writer, name="pt2format-data-writer", daemon=True)
    t.start()

    def join(abandon: bool = False):
        if abandon:  # the caller failed: stop writing a file that will be deleted
            stop.set()
        t.join()
        if failure and not abandon:
            raise failure[0]

    try:
        crcs, section, cursor = [], 0, 0
        for view, offset, size in zip(views, layout.offsets, layout.sizes):
            if failure:
                break  # join() below raises it
            crc = crc32(view)
            crcs.append(crc)
            section = crc32_combine(crc32_zeros(offset - cursor, section), crc, size)
            cursor = offset + size
        if failure:
            join()
    except BaseException:
        stop.set()
        t.join()  # never leave a thread writing to a descriptor the caller is about to close
        raise
    return crcs, section, join


def write_container_data_first(path, data_offset: int, data_views, data_layout: DataLayout, finish, *,
                               fsync: bool, progress_callback) -> None:
    """Atomically write a file whose data section starts at `data_offset`, data first.

    `finish(crcs, section_crc)` returns (header, program) once the payload
    checksums are known; raises LayoutChanged (nothing is renamed into place)
    when the header does not put the data section at `data_offset`.
    """
    def fill(fd: int) -> None:
        crcs, section, join = write_data_checksummed(fd, data_offset, data_views, data_layout, progress_callback)
        try:
            header, program = finish(crcs, section)
        except BaseException:
            join(abandon=True)  # the error of `finish` is the one to report
            raise
        join()
        entries = header.sections
        if len(entries) != 2 or entries[1].offset != data_offset or entries[1].length != data_layout.length:
            raise LayoutChanged("the program's final encoding moved the data section")
        _pwrite_all(fd, byte_view(program), entries[0].offset)
        _pwrite_all(fd, memoryview(pack_header(header)), 0)
        if os.fstat(fd).st_size != header.file_length:
            os.ftruncate(fd, header.file_length)  # a payload ending in a hole (never: data ends the file)

    atomic_write(path, fill, fsync=fsync)


def _write_all_reporting(fd: int, view, pos: int, progress_callback) -> int:
    view = memoryview(view)
    n = len(view)
    done = 0
    while done < n:
        done += os.write(fd, view[done:done + _WRITE_CHUNK])
        if progress_callback is not None:
            progress_callback(pos + done)
    return pos + n


def _write_zeros(fd: int, n: int, pos: int) -> int:
    if n < 0:
        raise AssertionError("sections out of order")
    return _write_all(fd, bytes(n), pos) if n else pos


def atomic_write(path, fill, *, fsync: bool, release_old_in_background: bool = True) -> None:
    """Call `fill(fd)` on a new temp file next to `path`, fsync it, then put it in place of `path`.

    With `release_old_in_background`, the file it replaces is dropped from the
    page cache first and unlinked afterwards in the background (`put_in_place`).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    stem = f".{os.path.basename(path)}.{secrets.token_hex(6)}"
    tmp = os.path.join(directory, stem + ".tmp")
    if release_old_in_background:
        release_cache_of_replaced(path)  # the write then reuses the memory the old file's cache held
    # Mode 0o666 lets the umask decide permissions, as for any newly created file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        try:
            fill(fd)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_leftover(tmp)
        raise
    put_in_place(tmp, path, os.path.join(directory, stem + ".old"), fsync=fsync,
                 release_old_in_background=release_old_in_background)


def put_in_place(tmp: str, path: str, old_link: str, *, fsync: bool, release_old_in_background: bool = True) -> None:
    """Rename the complete file `tmp` to `path`; the file it replaces is unlinked by a background thread.

    A regular file already at `path` is swapped with `tmp` (`exchange.swap`:
    no writeback forced by the rename, see that module), so neither the rename
    nor freeing the old file's blocks is on the caller's time. Where the swap
    is unavailable, the old file keeps a second link, `old_link`, across
    `os.replace`. The thread is not a daemon: the interpreter waits for it at
    exit. A crash between the swap (or rename) and the removal leaves the old
    file behind under the temp name (or `old_link`). On failure `tmp` is
    removed and `path` is as it was. `fsync` makes the rename durable.
    """
    old = None
    try:
        if release_old_in_background and _swap_with_regular_file(tmp, path):
            old, tmp = tmp, None  # the temp name now holds the old file
        else:
            if release_old_in_background:
                old = _keep_old_link(path, old_link)
            os.replace(tmp, path)
    except BaseException:
        for leftover in (tmp, old):
            if leftover is not None:
                _unlink_leftover(leftover)
        raise
    if fsync:
        _fsync_directory(os.path.dirname(os.path.abspath(path)))
    if old is not None:
        t = threading.Thread(target=_unlink_quietly, args=(old,), name="pt2format-release-old")
        with _pending_lock:
            _pending.add(t)
        t.start()


def _unlink_leftover(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _swap_with_regular_file(tmp: str, path: str) -> bool:
    """Exchange `tmp` and `path` if `path` is a regular file (never a symlink, directory or device).

    Should another process put something else at `path` between the check
    and the swap, the swap is undone and False sends the caller to
    `os.replace`, which treats it as a rename always has.
    """
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
    except OSError:
        return False
    if not exchange.swap(tmp, path):
        return False
    if stat.S_ISREG(os.lstat(tmp).st_mode):
        return True
    exchange.swap(tmp, path)  # a race replaced `path` with something else: put it back
    return False


_pending: set = set()
_pending_lock = threading.Lock()


def wait_for_released() -> None:
    """Block until every old file replaced so far has been unlinked (for callers that list the directory)."""
    with _pending_lock:
        threads = list(_pending)
    for t in threads:
        t.join()


def _keep_old_link(path: str, link: str) -> str | None:
    """A second hard link to the regular file at `path` (None if there is none or links are unsupported)."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return None
        os.link(path, link, follow_symlinks=False)
    except (OSError, NotImplementedError):
        return None
    return link


def _unlink_quietly(path: str) -> None:
    """The background thread's work: unlink the replaced file, then leave `_pending`."""
    try:
        _unlink_leftover(path)
    finally:
        with _pending_lock:
            _pending.discard(threading.current_thread())


def _fsync_directory(directory: str) -> None:
    """Make the rename durable; some filesystems refuse fsync on a directory, which is harmless."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
