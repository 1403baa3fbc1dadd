"""Packs and unpacks the 64-byte header and the 48-byte section entries (SPEC.md §2-3).

The only code that knows the byte layout of the container. `unpack_header`
performs every check of SPEC §2 and §3 in the documented order, so a reader
never touches a byte of a section before its bounds are known to be sane.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

from pt2format.errors import EncodingError, HeaderError, SegmentError, UnsupportedFeatureError, VersionError
from pt2format._container.align import DATA_ALIGNMENT, PROGRAM_ALIGNMENT, is_power_of_two

MAGIC = b"\x89PT2F\r\n\x1a"
HEADER_VERSION = 1
HEADER_SIZE = 64
SECTION_ENTRY_SIZE = 48
# The schema major version this reader understands (FORMAT_VERSION[0]).
from pt2format._generated.minors import SCHEMA_VERSION as _SCHEMA_VERSION  # noqa: E402

READER_MAJOR = _SCHEMA_VERSION[0]
# Bits of `required_features` this reader implements and the section kinds it knows: generated from
# schema/container.toml, the one place they are written (SPEC.md §8.3-8.4).
from pt2format._generated.container import (  # noqa: E402
    FEATURE_COMPOSITE_TENSORS, FEATURE_EXTERNAL_FILES, FEATURE_META_STORAGES, FEATURE_SHARD_FILES, KNOWN_FEATURES,
    SECTION_KINDS,
)
# Bytes of the file identity in the header: the main file and its shards carry the same id.
PACKAGE_ID_SIZE = 16
NO_PACKAGE_ID = bytes(PACKAGE_ID_SIZE)

# Section-entry flags. OPTIONAL: a reader that does not know the section's kind skips the
# section (it still checks its bounds, alignment and padding); without it an unknown kind
# is an error. Other bits are for later minors; a reader ignores bits it does not know.
SECTION_OPTIONAL = 1 << 0

_HEADER = struct.Struct("<8sHHIHHIQQI16s4s")
_ENTRY = struct.Struct("<HHIQQIII12s")
_CHECKSUM_AT = 40
assert _HEADER.size == HEADER_SIZE and _ENTRY.size == SECTION_ENTRY_SIZE


SectionKind = IntEnum("SectionKind", SECTION_KINDS, module=__name__)
SectionKind.__doc__ = "What a section holds (schema/container.toml)."


class SectionEncoding(IntEnum):
    """How a section's payload is encoded: the program codecs, or raw data bytes."""
    RAW = 0
    FLATBUFFERS = 1
    MSGPACK = 2
    JSON = 3


class ChecksumKind(IntEnum):
    """Checksum algorithm of a section."""
    NONE = 0
    CRC32 = 1


def enum_name(enum_cls, value: int) -> str:
    """The member name of `value`, or `?<value>` for one a later minor defined (an OPTIONAL section's kind)."""
    try:
        return enum_cls(value).name
    except ValueError:
        return f"?{value}"


# Codec names as `pt2format._codecs` spells them, by program-section encoding.
ENCODING_NAMES = {SectionEncoding.FLATBUFFERS: "flatbuffers", SectionEncoding.MSGPACK: "msgpack",
                  SectionEncoding.JSON: "json"}
ENCODING_BY_NAME = {name: enc for enc, name in ENCODING_NAMES.items()}
from pt2format._generated.container import SECTION_MIN_ALIGNMENT as _MIN_ALIGNMENT  # noqa: E402
assert (_MIN_ALIGNMENT[SectionKind.PROGRAM], _MIN_ALIGNMENT[SectionKind.DATA]) == (PROGRAM_ALIGNMENT, DATA_ALIGNMENT)


@dataclass(frozen=True)
class SectionEntry:
    """One row of the section table."""
    kind: int
    encoding: int
    alignment: int
    offset: int
    length: int
    checksum_kind: int = ChecksumKind.CRC32
    checksum: int = 0
    flags: int = 0

    @property
    def known(self) -> bool:
        """Whether this reader knows the kind (an unknown one is OPTIONAL and skipped)."""
        return self.kind in (SectionKind.PROGRAM, SectionKind.DATA)

    @property
    def end(self) -> int:
        return self.offset + self.length

    def label(self, index: int) -> str:
        """`'1 (DATA)'`: how errors name this section."""
        try:
            return f"{index} ({SectionKind(self.kind).name})"
        except ValueError:
            return f"{index} (kind {self.kind})"


@dataclass(frozen=True)
class Header:
    """The fixed header plus its section table."""
    format_major: int
    format_minor: int
    required_features: int
    file_length: int
    sections: tuple
    header_version: int = HEADER_VERSION
    flags: int = 0
    header_checksum: int = 0
    # Identity of the save: the main file and every shard it wrote share it (SPEC.md §2).
    package_id: bytes = NO_PACKAGE_ID

    @property
    def header_length(self) -> int:
        return header_length(len(self.sections))

    @property
    def format_version(self) -> tuple:
        return (self.format_major, self.format_minor)


def header_length(section_count: int) -> int:
    """Bytes taken by the header and a table of `section_count` entries."""
    return HEADER_SIZE + SECTION_ENTRY_SIZE * section_count


def pack_header(header: Header) -> bytes:
    """The header and section table as bytes, with `header_checksum` computed."""
    count = len(header.sections)
    out = bytearray(_HEADER.pack(MAGIC, header.header_version, count, header_length(count), header.format_major,
                                 header.format_minor, header.flags, header.required_features, header.file_length, 0,
                                 bytes(header.package_id), bytes(4)))
    for s in header.sections:
        out += _ENTRY.pack(s.kind, s.encoding, s.alignment, s.offset, s.length, s.checksum_kind, s.checksum, s.flags,
                           bytes(12))
    struct.pack_into("<I", out, _CHECKSUM_AT, zlib.crc32(out))
    return bytes(out)


def _header_crc(buf, length: int) -> int:
    view = memoryview(buf)
    crc = zlib.crc32(view[:_CHECKSUM_AT])
    crc = zlib.crc32(b"\0\0\0\0", crc)
    return zlib.crc32(view[_CHECKSUM_AT + 4:length], crc)


def unpack_header(buf, *, file=None, shard: bool = False, reader_major: int = READER_MAJOR,
                  known_features: int = KNOWN_FEATURES) -> Header:
    """Parse and check the header and section table of a whole file held in `buf`.

    `buf` is the entire file (an mmap or bytes), so `len(buf)` is the file size
    every length is checked against. A main file has the PROGRAM section as
    entry 0; a shard file (`shard=True`) has DATA sections only.
    """
    size = len(buf)
    if size < HEADER_SIZE:
        start = bytes(buf[:min(size, len(MAGIC))])
        if start != MAGIC[:len(start)] or not start:  # a short file of another kind (text, ...): say that first
            raise HeaderError("not a pt2format file: bad magic", file=file, section="header", offset=0,
                              expected=MAGIC.hex(" "),
                              got=f"{start.hex(' ')} ({size} bytes in all)" if start else "an empty file")
        raise HeaderError("file too short for a header", file=file, section="header", offset=0,
                          expected=f">= {HEADER_SIZE} bytes", got=size)
    (magic, version, count, length, major, minor, flags, features, file_length, checksum, package_id,
     reserved) = _HEADER.unpack_from(buf, 0)
    if magic != MAGIC:
        raise HeaderError("not a pt2format file: bad magic", file=file, section="header", offset=0,
                          expected=MAGIC.hex(" "), got=bytes(magic).hex(" "))
    if version != HEADER_VERSION:
        err = VersionError if version > HEADER_VERSION else HeaderError
        raise err("unsupported header_version", file=file, section="header", offset=8, expected=HEADER_VERSION,
                  got=version)
    if count < 1:
        raise HeaderError("section_count must be at least 1", file=file, section="header", offset=10,
                          expected=">= 1", got=count)
    if length != header_length(count):
        raise HeaderError("header_length does not match section_count", file=file, section="header", offset=12,
                          expected=header_length(count), got=length)
    if length > size:
        raise HeaderError("file truncated inside the section table", file=file, section="header", offset=size,
                          expected=f">= {length} bytes", got=size)
    actual = _header_crc(buf, length)
    if actual != checksum:
        raise HeaderError("header checksum mismatch", file=file, section="header", offset=_CHECKSUM_AT,
                          expected=f"0x{actual:08x}", got=f"0x{checksum:08x}")
    if file_length != size:
        what = "truncated" if size < file_length else "longer than recorded"
        raise HeaderError(f"file {what}: file_length does not match the file size", file=file, section="header",
                          offset=32, expected=file_length, got=size)
    if major > reader_major or major == 0:
        raise VersionError(f"format version {major}.{minor} is not readable by this reader (reads {reader_major}.x)",
                           file=file, section="header", offset=16, expected=f"major {reader_major}", got=major)
    unknown = features & ~known_features
    if unknown:
        raise UnsupportedFeatureError(f"file requires unknown features 0x{unknown:x}", file=file, section="header",
                                      offset=24, expected=f"bits within 0x{known_features:x}", got=f"0x{features:x}")
    # `flags` and the reserved bytes: writers write zero, readers ignore them (SPEC.md section 8). A later
    # minor may give them a meaning a reader can ignore; anything a reader must understand is a
    # required_features bit. The header checksum still covers them, so damage is caught.
    sections = tuple(_unpack_entry(buf, i, file) for i in range(count))
    _check_layout(buf, sections, length, file, shard)
    return Header(major, minor, features, file_length, sections, version, flags, checksum, bytes(package_id))


def _unpack_entry(buf, i: int, file) -> SectionEntry:
    at = HEADER_SIZE + SECTION_ENTRY_SIZE * i
    kind, encoding, alignment, offset, length, ck_kind, ck, flags, _reserved = _ENTRY.unpack_from(buf, at)
    entry = SectionEntry(kind, encoding, alignment, offset, length, ck_kind, ck, flags)
    label = entry.label(i)
    if not entry.known and not flags & SECTION_OPTIONAL:
        raise HeaderError("unknown section kind, not marked OPTIONAL", file=file, section=label, offset=at,
                          expected="1 (PROGRAM), 2 (DATA), or flags bit 0 (OPTIONAL) set", got=kind)
    if kind == SectionKind.PROGRAM and encoding not in ENCODING_NAMES:
        raise EncodingError("unknown program encoding", file=file, section=label, offset=at + 2,
                            expected="1 (FLATBUFFERS), 2 (MSGPACK) or 3 (JSON)", got=encoding)
    if kind == SectionKind.DATA and encoding != SectionEncoding.RAW:
        raise EncodingError("unknown data encoding", file=file, section=label, offset=at + 2, expected="0 (RAW)",
                            got=encoding)
    minimum = _MIN_ALIGNMENT.get(kind, PROGRAM_ALIGNMENT)
    if not is_power_of_two(alignment) or alignment < minimum:
        raise SegmentError("alignment must be a power of two", file=file, section=label, offset=at + 4,
                           expected=f"power of two >= {minimum}", got=alignment)
    if offset % alignment:
        raise SegmentError(f"offset is not a multiple of alignment {alignment}", file=file, section=label,
                           offset=at + 8, expected=f"multiple of {alignment}", got=offset)
    if ck_kind not in (ChecksumKind.NONE, ChecksumKind.CRC32) or (
            kind == SectionKind.PROGRAM and ck_kind != ChecksumKind.CRC32):
        expected = "1 (CRC32)" if kind == SectionKind.PROGRAM else "0 (NONE) or 1 (CRC32)"
        raise HeaderError("bad checksum_kind", file=file, section=label, offset=at + 24, expected=expected,
                          got=ck_kind)
    if ck_kind == ChecksumKind.NONE and ck != 0:
        raise HeaderError("checksum must be 0 when checksum_kind is NONE", file=file, section=label,
                          offset=at + 28, expected=0, got=ck)
    return entry


def _check_layout(buf, sections, start: int, file, shard: bool) -> None:
    """Program first (main files only), sections sorted, in bounds, no holes except zero padding."""
    programs = [i for i, s in enumerate(sections) if s.kind == SectionKind.PROGRAM]
    if shard and programs:
        raise HeaderError("a shard file has no PROGRAM section", file=file, section=sections[programs[0]].label(
            programs[0]), expected="DATA sections only", got=f"{len(programs)} PROGRAM")
    if not shard and programs != [0]:
        raise HeaderError("a file has exactly one PROGRAM section, as entry 0", file=file, section="header",
                          expected="PROGRAM at entry 0 only", got=f"PROGRAM at entries {programs}")
    size = len(buf)
    view = memoryview(buf)
    cursor = start
    for i, s in enumerate(sections):
        label = s.label(i)
        if s.offset < cursor:
            what = "the section table" if i == 0 else f"section {sections[i - 1].label(i - 1)}"
            raise SegmentError(f"section overlaps {what}", file=file, section=label, offset=s.offset,
                               expected=f"offset >= {cursor}", got=s.offset)
        if s.offset - cursor >= s.alignment:
            raise SegmentError("gap before section is longer than its alignment padding", file=file, section=label,
                               offset=cursor, expected=f"< {s.alignment} bytes", got=s.offset - cursor)
        if s.length > size - s.offset:
            raise SegmentError("section ends past the end of the file", file=file, section=label, offset=s.offset,
                               expected=f"length <= {max(size - s.offset, 0)}", got=s.length)
        if any(view[cursor:s.offset]):
            raise SegmentError("padding before section is not zero", file=file, section=label, offset=cursor)
        cursor = s.end
    if cursor != size:
        raise SegmentError("bytes after the last section", file=file, section=sections[-1].label(len(sections) - 1),
                           offset=cursor, expected=f"file ends at {cursor}", got=size)
