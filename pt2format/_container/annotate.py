"""Prints an annotated hexdump of a container: each header and section-table field, then the payloads.

Used by `pt2format inspect --hexdump` and to keep the example in SPEC.md §2-3
honest (a test regenerates it from the writer and compares).
"""

from __future__ import annotations

import struct

from pt2format._container.header import (
    HEADER_SIZE, SECTION_ENTRY_SIZE, ChecksumKind, SectionEncoding, SectionKind, enum_name, unpack_header,
)

# (offset, size, struct format, field name) of the header and of one section entry.
_HEADER_FIELDS = (
    (0, 8, None, "magic"), (8, 2, "<H", "header_version"), (10, 2, "<H", "section_count"),
    (12, 4, "<I", "header_length"), (16, 2, "<H", "format_major"), (18, 2, "<H", "format_minor"),
    (20, 4, "<I", "flags"), (24, 8, "<Q", "required_features"), (32, 8, "<Q", "file_length"),
    (40, 4, "<I", "header_checksum"), (44, 16, None, "package_id"), (60, 4, None, "reserved"),
)
_ENTRY_FIELDS = (
    (0, 2, "<H", "kind"), (2, 2, "<H", "encoding"), (4, 4, "<I", "alignment"), (8, 8, "<Q", "offset"),
    (16, 8, "<Q", "length"), (24, 4, "<I", "checksum_kind"), (28, 4, "<I", "checksum"), (32, 4, "<I", "flags"),
    (36, 12, None, "reserved"),
)
_HEX_WIDTH = 16 * 3


def _row(offset: int, chunk: bytes, note: str) -> str:
    return f"{offset:08x}  {chunk.hex(' '):<{_HEX_WIDTH}} {note}".rstrip()


def _value_note(name: str, value: int, kind: int | None) -> str:
    if name == "kind":
        return f"{name} = {value} ({enum_name(SectionKind, value)})"
    if name == "encoding":
        return f"{name} = {value} ({enum_name(SectionEncoding, value)})"
    if name == "checksum_kind":
        return f"{name} = {value} ({enum_name(ChecksumKind, value)})"
    if name in ("header_checksum", "checksum", "required_features", "flags"):
        return f"{name} = 0x{value:x}"
    return f"{name} = {value}"


def _fields(buf, base: int, fields, prefix: str, kind: int | None = None) -> list:
    lines = []
    for off, size, fmt, name in fields:
        chunk = bytes(buf[base + off:base + off + size])
        if fmt is None:
            note = f"{prefix}{name}" + (" (zero)" if not any(chunk) else "")
            if name == "package_id":
                note = f"{prefix}package_id" + (" (none)" if not any(chunk) else " (identity of this save)")
            if name == "magic":
                note = f'{prefix}magic "\\x89PT2F\\r\\n\\x1a"'
            for i in range(0, size, 16):
                lines.append(_row(base + off + i, chunk[i:i + 16], note if i == 0 else ""))
        else:
            value = struct.unpack(fmt, chunk)[0]
            lines.append(_row(base + off, chunk, prefix + _value_note(name, value, kind)))
    return lines


def _payload(buf, start: int, end: int, note: str) -> list:
    lines = []
    for i, at in enumerate(range(start, end, 16)):
        lines.append(_row(at, bytes(buf[at:min(at + 16, end)]), note if i == 0 else ""))
    return lines


def annotate(buf) -> str:
    """The annotated hexdump of a whole, valid container held in `buf` (bytes or mmap)."""
    first_kind = struct.unpack_from("<H", buf, HEADER_SIZE)[0] if len(buf) >= HEADER_SIZE + 2 else None
    header = unpack_header(buf, shard=first_kind == SectionKind.DATA)
    lines = ["offset    bytes" + " " * (_HEX_WIDTH - 5) + " meaning", "-- header --"]
    lines += _fields(buf, 0, _HEADER_FIELDS, "")
    for i, entry in enumerate(header.sections):
        lines.append(f"-- section table entry {i} --")
        lines += _fields(buf, HEADER_SIZE + SECTION_ENTRY_SIZE * i, _ENTRY_FIELDS, "", entry.kind)
    cursor = header.header_length
    for i, entry in enumerate(header.sections):
        if entry.offset > cursor:
            lines += _payload(buf, cursor, entry.offset, f"zero padding to alignment {entry.alignment}")
        kind = enum_name(SectionKind, entry.kind)
        enc = enum_name(SectionEncoding, entry.encoding)
        lines.append(f"-- section {i}: {kind} ({enc}), {entry.length} bytes --")
        note = ""
        if entry.kind == SectionKind.PROGRAM and entry.encoding == SectionEncoding.FLATBUFFERS and entry.length >= 8:
            root = struct.unpack_from("<I", buf, entry.offset)[0]
            ident = bytes(buf[entry.offset + 4:entry.offset + 8]).decode("latin-1")
            note = f'root table at +{root}, file identifier "{ident}"'
        lines += _payload(buf, entry.offset, entry.end, note)
        cursor = entry.end
    return "\n".join(lines) + "\n"
