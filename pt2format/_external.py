"""External data: storages that live in an existing raw file next to the main file (first use: safetensors).

A package can point at the weights of a safetensors file instead of copying
them. The program records the file (`Package.external_files`: name, size,
CRC-32 of the whole file) and, per storage, the byte range of the tensor in
it. Reading maps the file and checks its size when it is first needed; the
checksum is verified on demand (`verify_data`), like DATA sections.

The safetensors header is parsed here with `json` only (no code runs), under
the same bounds safetensors itself uses, and every range is checked against
the file size before it is used.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from dataclasses import dataclass, field

from pt2format._container.crc import crc32, crc32_combine
from pt2format._container.header import ChecksumKind, SectionEncoding, SectionEntry, SectionKind
from pt2format._generated import model as m
from pt2format._source import open_regular, read_regular, unreadable
from pt2format._validate import check_shard_name
from pt2format.errors import HeaderError, LimitError, SegmentError

# safetensors refuses headers above 100 MB; so do we.
MAX_SAFETENSORS_HEADER = 100_000_000

# safetensors dtype names -> pt2format ScalarType names.
SAFETENSORS_DTYPES = {
    "BOOL": "BOOL", "U8": "UINT8", "I8": "INT8", "I16": "INT16", "I32": "INT32", "I64": "INT64",
    "F16": "FLOAT16", "BF16": "BFLOAT16", "F32": "FLOAT32", "F64": "FLOAT64", "C64": "COMPLEX64",
    "F8_E4M3": "FLOAT8_E4M3FN", "F8_E5M2": "FLOAT8_E5M2", "U16": "UINT16", "U32": "UINT32", "U64": "UINT64",
}
SAFETENSORS_DTYPES = {k: v for k, v in SAFETENSORS_DTYPES.items() if v in m.ScalarType.__members__}


@dataclass(frozen=True)
class SafetensorsEntry:
    """One tensor of a safetensors file: dtype as a ScalarType name (None if unknown), shape, absolute byte range."""
    name: str
    dtype: str | None
    shape: tuple
    begin: int
    end: int


def read_safetensors_header(path) -> tuple:
    """(entries by name, metadata dict, data start) of the safetensors file at `path`; FormatError when malformed."""
    path = os.fspath(path)
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) < 8:
            raise HeaderError("not a safetensors file: shorter than 8 bytes", file=path, offset=0, got=len(head))
        (n,) = struct.unpack("<Q", head)
        if n > MAX_SAFETENSORS_HEADER:
            raise LimitError("safetensors header too large", file=path, offset=0,
                             expected=f"<= {MAX_SAFETENSORS_HEADER}", got=n)
        if n > size - 8:
            raise HeaderError("safetensors header runs past the end of the file", file=path, offset=0,
                              expected=f"<= {size - 8}", got=n)
        raw = f.read(n)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise HeaderError(f"safetensors header is not JSON: {e}", file=path, offset=8) from None
    if not isinstance(doc, dict):
        raise HeaderError("safetensors header is not a JSON object", file=path, offset=8)
    start = 8 + n
    entries = {}
    metadata = {}
    for name, info in doc.items():
        if name == "__metadata__":
            metadata = info if isinstance(info, dict) else {}
            continue
        try:
            dtype, shape, (b, e) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
            ok = isinstance(dtype, str) and all(isinstance(x, int) and x >= 0 for x in (*shape, b, e)) and b <= e
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok or start + e > size:
            raise HeaderError("bad safetensors tensor entry", file=path, offset=8, path=repr(name),
                              expected=f"dtype, shape and data_offsets within {size - start} bytes", got=repr(info))
        entries[name] = SafetensorsEntry(name, SAFETENSORS_DTYPES.get(dtype), shape, start + b, start + e)
    return entries, metadata, start


class RawFile:
    """An external raw file, mapped, presenting itself as a container with one DATA section (the whole file)."""

    def __init__(self, path: str, entry, *, copy_on_write: bool = False, use_mmap: bool = True):
        """Map the file (`use_mmap=False`: read it into memory, as `read(..., mmap=False)` does)."""
        self.path = path
        self._mm = None
        if not use_mmap:
            buf, st = read_regular(path)  # never a FIFO, device or directory; a file that shrinks: FormatError
            size = st.st_size
            self._check_size(size, entry)
            self._view = memoryview(buf) if copy_on_write else memoryview(buf).toreadonly()
        else:
            with open_regular(path) as f:  # never a FIFO, device or directory (SPEC.md §5)
                size = os.fstat(f.fileno()).st_size
                self._check_size(size, entry)
                if size:
                    self._mm = mmap.mmap(f.fileno(), 0,
                                         access=mmap.ACCESS_COPY if copy_on_write else mmap.ACCESS_READ)
            self._view = memoryview(self._mm) if self._mm is not None else memoryview(b"")
        kind = ChecksumKind.CRC32 if entry.checksum_kind == m.ChecksumKind.CRC32 else ChecksumKind.NONE
        self.header = _RawHeader((SectionEntry(SectionKind.DATA, SectionEncoding.RAW, 1, 0, size, kind,
                                               entry.checksum if kind else 0),))

    def _check_size(self, size: int, entry) -> None:
        if size != entry.size:
            raise SegmentError("external file size differs from external_files entry", file=self.path,
                               expected=entry.size, got=size)

    @property
    def size(self) -> int:
        return self.header.sections[0].length

    @property
    def closed(self) -> bool:
        return self._view is None

    def section_view(self, index: int) -> memoryview:
        if self._view is None:
            raise ValueError(f"{self.path}: file is closed")
        return self._view

    def close(self) -> None:
        view, self._view = self._view, None
        mm, self._mm = self._mm, None
        if view is not None:
            view.release()
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass


@dataclass(frozen=True)
class _RawHeader:
    sections: tuple


def open_external(package, index: int, main_path: str, *, copy_on_write: bool = False,
                  use_mmap: bool = True) -> RawFile:
    """Map (or read) `package.external_files[index]`, which lives next to `main_path`, checking its name and size."""
    entry = package.external_files[index]
    check_shard_name(entry.name)  # validated on read; re-checked because this opens a path
    path = os.path.join(os.path.dirname(os.path.abspath(main_path)), entry.name)
    try:
        return RawFile(path, entry, copy_on_write=copy_on_write, use_mmap=use_mmap)
    except OSError as e:  # a symlink loop, no permission, too many open files, an I/O error, ...
        raise unreadable(e, path, what="external data file", where=f"external_files[{index}]") from e


@dataclass
class ExternalPlan:
    """What `write_package(external=...)` needs: the files and, per storage index, (file index, offset, CRC)."""
    files: list = field(default_factory=list)
    placements: dict = field(default_factory=dict)


def plan_safetensors(package, payloads, main_path: str, sources) -> ExternalPlan:
    """Point every storage that equals a tensor of one of the safetensors files `sources` at that tensor's bytes.

    A storage qualifies when a program state entry of the same name uses it
    whole (contiguous, offset 0) with the same dtype and shape, and its bytes
    equal the file's (compared by CRC-32). Files must be in the directory of
    `main_path`, since the program names them by plain file name. Storages
    that match nothing are stored in the package as usual.
    """
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    main_dir = os.path.dirname(os.path.abspath(main_path))
    by_name = {}
    for prog in package.programs:
        for entry in prog.state:
            by_name.setdefault(entry.name, entry.tensor)
    for ws in package.weight_sets:
        for entry in ws.entries:
            by_name.setdefault(entry.name, entry.tensor)
    plan = ExternalPlan()
    for source in sources:
        source = os.path.abspath(os.fspath(source))
        if os.path.dirname(source) != main_dir:
            raise ValueError(f"external data file {source!r} must be in the directory of {main_path!r}, "
                             "since the file names it by plain file name")
        entries, _, _ = read_safetensors_header(source)
        ranges = {}  # (begin, end) -> CRC of the file's bytes there
        file_index = len(plan.files)
        with open_regular(source) as f:
            size = os.fstat(f.fileno()).st_size
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else _Empty()
        with mm as mapped:
            view = memoryview(mapped)
            try:
                for name, st_entry in entries.items():
                    idx = by_name.get(name)
                    if idx is None:
                        continue
                    t = package.tensors[idx]
                    sidx = t.storage
                    nbytes = memoryview(payloads[sidx]).nbytes
                    if sidx in plan.placements or not _whole_storage(t, nbytes, st_entry):
                        continue
                    key = (st_entry.begin, st_entry.end)
                    if key not in ranges:
                        ranges[key] = crc32(view[st_entry.begin:st_entry.end])
                    if crc32(payloads[sidx]) != ranges[key]:
                        continue  # same name and layout, other values: keep the package's own copy
                    plan.placements[sidx] = (file_index, st_entry.begin, ranges[key])
                checksum = _whole_file_crc(view, ranges)
            finally:
                view.release()
        plan.files.append(m.ExternalFile(name=os.path.basename(source), size=size,
                                         format=m.ExternalFormat.SAFETENSORS,
                                         checksum_kind=m.ChecksumKind.CRC32, checksum=checksum))
    used = {e for e, _, _ in plan.placements.values()}
    if len(used) != len(plan.files):  # drop files nothing points at, renumbering the rest
        keep = sorted(used)
        remap = {old: new for new, old in enumerate(keep)}
        plan.files = [plan.files[i] for i in keep]
        plan.placements = {s: (remap[e], o, c) for s, (e, o, c) in plan.placements.items()}
    return plan


class _Empty:
    def __enter__(self):
        return b""

    def __exit__(self, *exc):
        return None


def _whole_storage(t, storage_size: int, entry: SafetensorsEntry) -> bool:
    if entry.dtype is None or m.ScalarType[entry.dtype] != t.dtype or tuple(t.sizes) != entry.shape:
        return False
    expected = 1
    for size, stride in zip(reversed(t.sizes), reversed(t.strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return t.storage_offset == 0 and storage_size == entry.end - entry.begin


def _whole_file_crc(view, ranges: dict) -> int:
    """CRC-32 of the whole file, reusing the CRCs of the ranges already summed (each byte read once more at most)."""
    crc = 0
    cursor = 0
    for (b, e), rcrc in sorted(ranges.items()):
        if b >= cursor:
            crc = crc32(view[cursor:b], crc)
            crc = crc32_combine(crc, rcrc, e - b)
            cursor = e
        elif e > cursor:
            crc = crc32(view[cursor:e], crc)
            cursor = e
    return crc32(view[cursor:], crc)


__all__ = ["read_safetensors_header", "plan_safetensors", "open_external", "RawFile", "ExternalPlan"]
