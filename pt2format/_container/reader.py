"""Opens a `.pt2f` (or shard) file by mmap, checks its header, and hands out zero-copy section views.

Ownership of the map: every view handed out is a slice of one memoryview over
the mmap. `close()` unmaps at once when no view is alive; otherwise the map
stays valid until the last view (or the numpy array / tensor built on it) is
garbage-collected, and is then unmapped by Python. After `close()` no new
view can be made. Views never dangle.
"""

from __future__ import annotations

import mmap
import os
import stat

from pt2format.errors import ChecksumError, FormatError, HeaderError, LimitError
from pt2format._container.crc import crc32
from pt2format._container.header import ChecksumKind, SectionKind, unpack_header


def open_regular_file(path: str):
    """Open `path` for reading only if it is a regular file (SPEC.md §5).

    Symlinks are followed (the Hugging Face cache links blobs), but what they
    end at must be a regular file: a directory, FIFO, device or socket is
    refused with a FormatError. O_NONBLOCK keeps a FIFO from blocking the open
    itself; the check then runs on the opened descriptor, so nothing can swap
    the file between check and use.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise FormatError("not a regular file (a directory)", file=path) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FormatError("not a regular file", file=path, expected="a regular file",
                          got=stat.filemode(st.st_mode)[0] + " (directory, FIFO, device or socket)")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


class ContainerFile:
    """A checked, mapped container. Main files verify the PROGRAM checksum on open."""

    def __init__(self, path, *, shard: bool = False, max_program_bytes: int | None = None,
                 copy_on_write: bool = False, data=None):
        """Map the file at `path`; or, with `data` (the whole file as a buffer), use it in place.

        With `data`, `path` is only the name errors use (no file is opened);
        views are slices of `data`, writable exactly when `data` is.
        """
        self.path = os.fspath(path)
        self._mm = None
        self._view = None
        if data is None:
            with open_regular_file(self.path) as f:
                size = os.fstat(f.fileno()).st_size
                if size:
                    # ACCESS_COPY maps privately: views are writable and writes never reach the file.
                    access = mmap.ACCESS_COPY if copy_on_write else mmap.ACCESS_READ
                    self._mm = mmap.mmap(f.fileno(), 0, access=access)
        try:
            if data is not None:
                self._view = memoryview(data)
            else:
                self._view = memoryview(self._mm) if self._mm is not None else memoryview(b"")
            try:
                self.header = unpack_header(self._view, file=self.path, shard=shard)
            except HeaderError as e:
                if not shard:
                    _explain_foreign(e, self._view, None if data is not None else self.path)
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


def _explain_foreign(err: HeaderError, view, path) -> None:
    """Name a torch.export archive in a bad-magic error, with the command that converts it."""
    if not str(err.detail).startswith("not a pt2format file"):
        return
    from pt2format._torch_archive import is_torch_archive

    if is_torch_archive(view, path):
        err.detail = ("this is a torch.export archive (.pt2, written by torch.export.save), not a .pt2f file; "
                      "convert it with `pt2format convert model.pt2 model.pt2f` or pt2format.from_torch()")
        err.args = (err._render(),)
