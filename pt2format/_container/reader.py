"""Opens a `.pt2f` (or shard) file by mmap, checks its header, and hands out zero-copy section views.

With `mmap=False` the file is read into memory instead (for files another
process may truncate: a mapped file that shrinks kills the reader with
SIGBUS on the next access, an in-memory copy cannot), through the same
regular-file check (pt2format._source).

Ownership of the map: every view handed out is a slice of one memoryview over
the mmap. `close()` unmaps at once when no view is alive; otherwise the map
stays valid until the last view (or the numpy array / tensor built on it) is
garbage-collected, and is then unmapped by Python. After `close()` no new
view can be made. Views never dangle.
"""

from __future__ import annotations

import mmap as _mmap
import os

from pt2format._options import READ
from pt2format._source import open_regular, read_regular
from pt2format.errors import ChecksumError, HeaderError, LimitError
from pt2format._container.crc import crc32
from pt2format._container.header import ChecksumKind, SectionKind, unpack_header


class ContainerFile:
    """A checked, mapped container. Main files verify the PROGRAM checksum on open."""

    @READ.lends("copy_on_write", "mmap")
    def __init__(self, path, *, shard: bool = False, max_program_bytes: int | None = None, copy_on_write: bool,
                 data=None, mmap: bool):
        """Map the file at `path` (`mmap=False`: read it into memory); or, with `data`, use that buffer in place.

        With `data` (the whole file as a buffer), `path` is only the name
        errors use (no file is opened); views are slices of `data`, writable
        exactly when `data` is. `stat` is the opened file's os.stat_result
        (None with `data`).
        """
        self.path = os.fspath(path)
        self._mm = None
        self._view = None
        self.stat = None
        if data is None and not mmap:
            buf, self.stat = read_regular(self.path)
            data = buf if copy_on_write else memoryview(buf).toreadonly()
        elif data is None:
            with open_regular(self.path) as f:
                self.stat = os.fstat(f.fileno())
                if self.stat.st_size:
                    # ACCESS_COPY maps privately: views are writable and writes never reach the file.
                    access = _mmap.ACCESS_COPY if copy_on_write else _mmap.ACCESS_READ
                    self._mm = _mmap.mmap(f.fileno(), 0, access=access)
        try:
            if data is not None:
                self._view = memoryview(data)
            else:
                self._view = memoryview(self._mm) if self._mm is not None else memoryview(b"")
            try:
                self.header = unpack_header(self._view, file=self.path, shard=shard)
            except HeaderError as e:
                if not shard:
                    explain_foreign(e, self._view)
                raise
            if not shard:
                program = self.header.sections[0]
                if max_program_bytes is not None and program.length > max_program_bytes:
                    raise LimitError("program section larger than max_program_bytes", file=self.path,
                                     section=program.label(0), offset=program.offset,
                                     expected=f"<= {max_program_bytes} bytes", got=program.length)
                self.verify_section(0)
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        return self.header.file_length

    @property
    def closed(self) -> bool:
        return self._view is None

    def section_view(self, index: int) -> memoryview:
        """The payload of section `index` (padding excluded), as a view into the map."""
        if self._view is None:
            raise ValueError(f"{self.path}: file is closed")
        entry = self.header.sections[index]
        return self._view[entry.offset:entry.end]

    def data_section_lengths(self) -> dict:
        """Section index -> payload length, for every DATA section."""
        return {i: s.length for i, s in enumerate(self.header.sections) if s.kind == SectionKind.DATA}

    def verify_section(self, index: int) -> None:
        """Raise ChecksumError when section `index` has a CRC-32 that does not match its bytes."""
        entry = self.header.sections[index]
        if entry.checksum_kind != ChecksumKind.CRC32:
            return
        actual = crc32(self.section_view(index))
        if actual != entry.checksum:
            raise ChecksumError("section checksum mismatch", file=self.path, section=entry.label(index),
                                offset=entry.offset, expected=f"0x{entry.checksum:08x}", got=f"0x{actual:08x}")

    def close(self) -> None:
        """Unmap now if no view is alive, else as soon as the last one is released."""
        view, self._view = self._view, None
        mm, self._mm = self._mm, None
        if view is not None:
            view.release()
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass  # views are alive; they keep `mm` referenced and it unmaps when they go

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def explain_foreign(err: HeaderError, view) -> None:
    """Name a torch.export archive in a bad-magic error, with how to convert it on purpose.

    Only the zip directory in the bytes already read or mapped is looked at;
    nothing is parsed, unpickled or handed to torch (SECURITY.md: torch's
    loader runs only when the user asks for it by name).
    """
    if not str(err.detail).startswith("not a pt2format file"):
        return
    from pt2format._torch_archive import FOREIGN_ARCHIVE_HINT, is_torch_archive

    if is_torch_archive(view):
        # The hint's lines stay whole: the magic bytes (a zip's) are said by its first line, not appended.
        err.detail, err.expected, err.got = FOREIGN_ARCHIVE_HINT, None, None
        err.args = (err._render(),)
