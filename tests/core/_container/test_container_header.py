"""Header and section-table packing (exact bytes) and every check of SPEC §2-3, in order."""

import struct
import sys
import zlib
from pathlib import Path

import pytest


from pt2f_samples import entry_offset, patch  # noqa: E402

from pt2format._container.header import (  # noqa: E402
    Header, SectionEntry, pack_header, unpack_header,
)
from pt2format.errors import (  # noqa: E402
    EncodingError, HeaderError, SegmentError, UnsupportedFeatureError, VersionError,
)


def build(sections, *, major=1, minor=0, features=0, trailing=b""):
    """A whole file: header, then each (kind, encoding, alignment, payload[, flags]) at its next aligned offset."""
    count = len(sections)
    cursor = 64 + 48 * count
    entries, body = [], bytearray()
    for kind, enc, align, payload, *flags in sections:
        start = (cursor + align - 1) // align * align
        body += bytes(start - cursor) + payload
        entries.append(SectionEntry(kind, enc, align, start, len(payload), 1, zlib.crc32(payload), *flags))
        cursor = start + len(payload)
    head = pack_header(Header(major, minor, features, cursor + len(trailing), tuple(entries)))
    return bytearray(head + body + trailing)


PROGRAM = (1, 1, 8, b"P" * 20)
DATA = (2, 0, 64, b"D" * 10)


def test_pack_header_exact_bytes():
    entries = (SectionEntry(1, 2, 8, 160, 5, 1, 0x11223344), SectionEntry(2, 0, 64, 192, 0, 0, 0))
    out = pack_header(Header(1, 0, 0, 192, entries))
    expected = bytearray(
        b"\x89PT2F\r\n\x1a" + struct.pack("<HHI", 1, 2, 160) + struct.pack("<HHI", 1, 0, 0)
        + struct.pack("<QQ", 0, 192) + b"\0" * 4 + b"\0" * 20
        + struct.pack("<HHIQQII", 1, 2, 8, 160, 5, 1, 0x11223344) + b"\0" * 16
        + struct.pack("<HHIQQII", 2, 0, 64, 192, 0, 0, 0) + b"\0" * 16)
    struct.pack_into("<I", expected, 40, zlib.crc32(bytes(expected)))
    assert out == bytes(expected)
    assert len(out) == 64 + 48 * 2


def test_roundtrip_fields():
    buf = build([PROGRAM, DATA], minor=3, features=1)
    h = unpack_header(buf)
    assert (h.format_major, h.format_minor, h.required_features, h.file_length) == (1, 3, 1, len(buf))
    assert [(s.kind, s.encoding, s.alignment, s.length) for s in h.sections] == [(1, 1, 8, 20), (2, 0, 64, 10)]
    assert h.sections[0].offset == 160 and h.sections[1].offset == 192
    assert h.sections[1].checksum == zlib.crc32(b"D" * 10)


@pytest.mark.parametrize("size", [0, 1, 63])
def test_too_short_for_header(size):
    with pytest.raises(HeaderError) as e:
        unpack_header(build([PROGRAM])[:size])
    if size == 0:  # nothing to tell it from another kind of file: not a pt2format file
        assert "magic" in str(e.value)
    else:  # starts with the magic: a pt2format file cut short
        assert e.value.expected == ">= 64 bytes" and e.value.got == size


def test_bad_magic_reported_before_anything_else():
    buf = patch(build([PROGRAM]), 8, "<H", 7)  # also a bad header_version
    buf[1] = ord("X")
    with pytest.raises(HeaderError, match="magic") as e:
        unpack_header(buf)
    assert e.value.offset == 0


def test_newer_header_version_is_version_error():
    with pytest.raises(VersionError):
        unpack_header(patch(build([PROGRAM]), 8, "<H", 2))
    with pytest.raises(HeaderError):
        unpack_header(patch(build([PROGRAM]), 8, "<H", 0))


def test_zero_sections_rejected():
    with pytest.raises(HeaderError, match="section_count"):
        unpack_header(patch(build([PROGRAM]), 10, "<H", 0))


def test_header_length_mismatch():
    with pytest.raises(HeaderError, match="header_length") as e:
        unpack_header(patch(build([PROGRAM]), 12, "<I", 200))
    assert e.value.expected == 112 and e.value.got == 200 and e.value.offset == 12


def test_section_table_past_end_of_file():
    buf = patch(build([PROGRAM]), 10, "<H", 1000)
    struct.pack_into("<I", buf, 12, 64 + 48 * 1000)
    with pytest.raises(HeaderError, match="truncated"):
        unpack_header(buf)


def test_header_checksum():
    buf = build([PROGRAM])
    buf[100] ^= 1  # inside the section table
    with pytest.raises(HeaderError, match="checksum"):
        unpack_header(buf)


@pytest.mark.parametrize("delta", [-1, 1])
def test_file_length_mismatch(delta):
    buf = build([PROGRAM])
    buf = patch(buf, 32, "<Q", len(buf) + delta)
    with pytest.raises(HeaderError, match="file_length"):
        unpack_header(buf)


def test_newer_major_version():
    with pytest.raises(VersionError) as e:
        unpack_header(build([PROGRAM], major=2))
    assert e.value.got == 2
    unpack_header(build([PROGRAM], minor=99))  # newer minor: readable


def test_major_zero_rejected():
    with pytest.raises(VersionError):
        unpack_header(build([PROGRAM], major=0))


def test_unknown_required_feature():
    with pytest.raises(UnsupportedFeatureError) as e:
        unpack_header(build([PROGRAM], features=1 | 1 << 7))
    assert "0x80" in str(e.value)


def test_flags_and_reserved_bytes_are_ignored():
    """Writers write zero; readers ignore them, so a later minor can use them (SPEC.md section 8)."""
    for at, fmt in ((20, "<I"), (61, "<B"), (entry_offset(0) + 32, "<I"), (entry_offset(0) + 40, "<B")):
        h = unpack_header(patch(build([PROGRAM, DATA]), at, fmt, 0x80))
        assert [s.kind for s in h.sections] == [1, 2]
    assert unpack_header(patch(build([PROGRAM]), entry_offset(0) + 32, "<I", 6)).sections[0].flags == 6


def test_unknown_section_kind():
    with pytest.raises(HeaderError, match="kind") as e:
        unpack_header(patch(build([PROGRAM, DATA]), entry_offset(1), "<H", 9))
    assert e.value.section == "1 (kind 9)"


def test_unknown_optional_section_kind_is_kept_and_skipped():
    h = unpack_header(build([PROGRAM, (9, 5, 16, b"X" * 7, 1), DATA]))
    assert [(s.kind, s.known, s.flags) for s in h.sections] == [(1, True, 0), (9, False, 1), (2, True, 0)]
    assert h.sections[1].label(1) == "1 (kind 9)"


@pytest.mark.parametrize("patch_at, fmt, value, err", [
    (4, "<I", 12, SegmentError),  # alignment not a power of two
    (4, "<I", 4, SegmentError),  # alignment below 8
    (24, "<I", 2, HeaderError),  # unknown checksum kind
])
def test_unknown_optional_section_still_checked(patch_at, fmt, value, err):
    data = build([PROGRAM, (9, 5, 16, b"X" * 7, 1)])
    with pytest.raises(err):
        unpack_header(patch(data, entry_offset(1) + patch_at, fmt, value))


@pytest.mark.parametrize("index, value", [(0, 0), (0, 4), (1, 1)])
def test_unknown_encoding(index, value):
    with pytest.raises(EncodingError):
        unpack_header(patch(build([PROGRAM, DATA]), entry_offset(index) + 2, "<H", value))


@pytest.mark.parametrize("index, alignment", [(0, 4), (0, 12), (1, 32), (1, 96), (1, 0)])
def test_bad_alignment(index, alignment):
    with pytest.raises(SegmentError, match="alignment"):
        unpack_header(patch(build([PROGRAM, DATA]), entry_offset(index) + 4, "<I", alignment))


def test_misaligned_offset():
    buf = build([PROGRAM, DATA])
    with pytest.raises(SegmentError, match="multiple") as e:
        unpack_header(patch(buf, entry_offset(1) + 8, "<Q", 192 + 8))
    assert e.value.section == "1 (DATA)"


def test_checksum_kind_rules():
    with pytest.raises(HeaderError, match="checksum_kind"):
        unpack_header(patch(build([PROGRAM]), entry_offset(0) + 24, "<I", 0))  # PROGRAM always CRC32
    with pytest.raises(HeaderError, match="checksum_kind"):
        unpack_header(patch(build([PROGRAM, DATA]), entry_offset(1) + 24, "<I", 2))
    with pytest.raises(HeaderError, match="checksum must be 0"):
        unpack_header(patch(build([PROGRAM, DATA]), entry_offset(1) + 24, "<I", 0))
    buf = patch(build([PROGRAM, DATA]), entry_offset(1) + 24, "<I", 0, seal=False)
    unpack_header(patch(buf, entry_offset(1) + 28, "<I", 0))  # NONE with checksum 0 is fine


def test_program_must_be_entry_zero_and_unique():
    with pytest.raises(HeaderError, match="PROGRAM"):
        unpack_header(build([DATA, PROGRAM]))
    with pytest.raises(HeaderError, match="PROGRAM"):
        unpack_header(build([PROGRAM, PROGRAM]))
    with pytest.raises(HeaderError, match="PROGRAM"):
        unpack_header(build([DATA]))


def test_shard_has_no_program():
    unpack_header(build([DATA, DATA]), shard=True)
    with pytest.raises(HeaderError, match="shard"):
        unpack_header(build([PROGRAM, DATA]), shard=True)


def test_overlapping_sections():
    buf = build([(1, 1, 8, b"P" * 100), DATA])  # program 160..260, data at 320
    with pytest.raises(SegmentError, match="overlaps"):
        unpack_header(patch(buf, entry_offset(1) + 8, "<Q", 256))


def test_section_overlapping_the_table():
    buf = build([PROGRAM])
    with pytest.raises(SegmentError, match="overlaps the section table"):
        unpack_header(patch(buf, entry_offset(0) + 8, "<Q", 104))


@pytest.mark.parametrize("length", [21, 2**32, 2**63, 2**64 - 1])
def test_section_past_end_of_file(length):
    buf = build([PROGRAM])
    with pytest.raises(SegmentError, match="past the end"):
        unpack_header(patch(buf, entry_offset(0) + 16, "<Q", length))


def test_section_offset_absurd():
    buf = build([PROGRAM, DATA])
    with pytest.raises(SegmentError):
        unpack_header(patch(buf, entry_offset(1) + 8, "<Q", 2**63))


def test_nonzero_padding():
    buf = build([PROGRAM, DATA])
    buf[185] = 1  # between program end (180) and data (192)
    with pytest.raises(SegmentError, match="padding"):
        unpack_header(buf)


def test_gap_longer_than_alignment():
    buf = build([PROGRAM, DATA])  # data at 192; moving it to 256 leaves a 76-byte zero hole
    buf = patch(buf, entry_offset(1) + 8, "<Q", 256, seal=False)
    buf = bytearray(buf[:192]) + bytes(64) + buf[192:]
    buf = patch(buf, 32, "<Q", len(buf))
    with pytest.raises(SegmentError, match="gap"):
        unpack_header(buf)


def test_trailing_bytes_after_last_section():
    with pytest.raises(SegmentError, match="after the last section"):
        unpack_header(build([PROGRAM, DATA], trailing=b"\0"))


def test_zero_length_sections_are_fine():
    h = unpack_header(build([(1, 1, 8, b""), (2, 0, 64, b""), (2, 0, 64, b"")]))
    assert [s.length for s in h.sections] == [0, 0, 0]
    assert [s.offset for s in h.sections] == [208, 256, 256]  # header is 64 + 3 * 48 = 208 bytes


def test_package_id_round_trips_at_offset_44():
    pid = bytes(range(1, 17))
    head = pack_header(Header(1, 0, 0, 64 + 48, (SectionEntry(1, 1, 8, 112, 0, 1, zlib.crc32(b"")),), package_id=pid))
    assert head[44:60] == pid and head[60:64] == bytes(4)
    assert unpack_header(head).package_id == pid
