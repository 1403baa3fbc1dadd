"""Byte-level tools for the invalid corpus: golden files in, one sealed change out (see make_invalid.py)."""

from __future__ import annotations

import copy
import struct
import zlib
from pathlib import Path

from pt2format import _codecs
from pt2format._container.align import DATA_ALIGNMENT
from pt2format._container.header import ENCODING_NAMES, pack_header, unpack_header
from pt2format._container.reader import ContainerFile
from pt2format._container.writer import build_header, layout_payloads, payload_checksums


ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "conformance" / "golden" / "1.0"
OUT = ROOT / "conformance" / "invalid"
ENCODINGS = ("flatbuffers", "msgpack", "json")
ENCODING_IDS = {"flatbuffers": 1, "msgpack": 2, "json": 3}

# Header field offsets (SPEC.md §2) and section entry field offsets (§3).
H_VERSION, H_COUNT, H_LENGTH, H_MAJOR, H_MINOR, H_FEATURES, H_FILE_LENGTH, H_CRC = 8, 10, 12, 16, 18, 24, 32, 40
E_KIND, E_ENCODING, E_ALIGN, E_OFFSET, E_LENGTH, E_CK_KIND, E_CK, E_FLAGS = 0, 2, 4, 8, 16, 24, 28, 32
ENTRY0, ENTRY_SIZE = 64, 48

# A marker placed in a string so the encoded bytes can be patched afterwards (same length).
MARK = "ZQXJMARKZQXJ"


# ---------------------------------------------------------------------------
# Bases and assembly

def golden(case: str, encoding: str = "flatbuffers") -> Path:
    return GOLDEN / f"{case}-{encoding}" / "program.pt2f"


def decode(case: str):
    """(package tree, storage payloads) of a golden case (its FlatBuffers file: the tree is the same in all)."""
    container = ContainerFile(golden(case))
    try:
        package = _codecs.decode(container.section_view(0), ENCODING_NAMES[container.header.sections[0].encoding])
        payloads = []
        for st in package.storages:
            view = container.section_view(package.segments[st.segment].section)
            payloads.append(bytes(view[st.offset:st.offset + st.size]))
        package_id = container.header.package_id
        return package, payloads, package_id
    finally:
        container.close()


def assemble(program: bytes, payloads, encoding: str, *, fmt=(1, 0), features: int = 0,
             package_id: bytes = bytes(16)) -> bytes:
    """A well-formed container (the reference writer's layout) holding exactly `program` and `payloads`."""
    layout = layout_payloads([len(p) for p in payloads], DATA_ALIGNMENT) if payloads else None
    data_crc = payload_checksums([memoryview(p) for p in payloads], layout)[1] if layout else None
    header = build_header(format_version=fmt, required_features=features, program_length=len(program),
                          program_crc=zlib.crc32(program), encoding=ENCODING_IDS[encoding], data_layout=layout,
                          data_crc=data_crc, package_id=package_id)
    out = bytearray(pack_header(header))
    for entry in header.sections:
        out += bytes(entry.offset - len(out))
        if entry.kind == 1:
            out += program
        else:
            base = len(out)
            for p, off in zip(payloads, layout.offsets):
                out += bytes(base + off - len(out))
                out += p
    assert len(out) == header.file_length
    return bytes(out)


def tree_file(case: str, encoding: str, mutate, *, features=None, fmt=None, patch=None) -> bytes:
    """Golden `case` with `mutate(package)` applied, encoded in `encoding`; header version/features from the tree.

    `patch(program_bytes) -> bytes` edits the encoded program (for what the model cannot express).
    """
    package, payloads, package_id = decode(case)
    package = copy.deepcopy(package)
    mutate(package)
    program = _codecs.encode(package, encoding)
    if patch is not None:
        program = patch(program)
    fv = package.format_version
    return assemble(program, payloads, encoding,
                    fmt=fmt or (fv.major, fv.minor),
                    features=package.required_features if features is None else features,
                    package_id=package_id)


def reseal(buf: bytearray) -> bytes:
    """Recompute the header checksum of `buf` (the header as edited stays otherwise unchanged)."""
    length = struct.unpack_from("<I", buf, H_LENGTH)[0]
    length = min(length, len(buf))
    struct.pack_into("<I", buf, H_CRC, 0)
    struct.pack_into("<I", buf, H_CRC, zlib.crc32(bytes(buf[:length])))
    return bytes(buf)


def header_edit(src: bytes, fmt: str, offset: int, value, *, seal: bool = True) -> bytes:
    buf = bytearray(src)
    struct.pack_into(fmt, buf, offset, value)
    return reseal(buf) if seal else bytes(buf)


def entry_edit(src: bytes, index: int, fmt: str, field: int, value) -> bytes:
    return header_edit(src, fmt, ENTRY0 + ENTRY_SIZE * index + field, value)


def entry(src: bytes, index: int):
    """(kind, encoding, alignment, offset, length, checksum_kind, checksum, flags) of section `index`."""
    return struct.unpack_from("<HHIQQIII", src, ENTRY0 + ENTRY_SIZE * index)


def decode_bytes(src: bytes):
    h = unpack_header(src)
    p0 = h.sections[0]
    package = _codecs.decode(memoryview(src)[p0.offset:p0.offset + p0.length], ENCODING_NAMES[p0.encoding])
    payloads = []
    for st in package.storages:
        s = h.sections[package.segments[st.segment].section]
        payloads.append(src[s.offset + st.offset:s.offset + st.offset + st.size])
    return package, payloads, h.package_id


def patch_mark(replacement: bytes):
    """A program patch replacing the encoded bytes of MARK by `replacement` (same length in every encoding)."""
    def patch(program: bytes) -> bytes:
        raw = MARK.encode()
        assert program.count(raw) == 1, "marker must occur exactly once"
        assert len(replacement) == len(raw)
        return program.replace(raw, replacement)
    return patch
