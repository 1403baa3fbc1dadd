"""Invalid files made below the schema tree: bytes of the program encoding, or of the container, edited."""

from __future__ import annotations

import copy
import struct
import zlib

from pt2format import _codecs
from pt2format._generated import model as m

from conformance._invalid_bytes import (
    ENCODINGS,
    ENTRY0,
    ENTRY_SIZE,
    E_ALIGN,
    E_CK,
    E_CK_KIND,
    E_ENCODING,
    E_KIND,
    E_LENGTH,
    E_OFFSET,
    H_COUNT,
    H_CRC,
    H_FEATURES,
    H_FILE_LENGTH,
    H_LENGTH,
    H_MAJOR,
    H_VERSION,
    MARK,
    assemble,
    decode,
    entry,
    entry_edit,
    golden,
    header_edit,
    reseal,
)
from conformance._invalid_trees import (
    _free_text,
    prog,
)


# ---------------------------------------------------------------------------
# Encoding-specific mutations of the program bytes

def _msgpack_int(value: int) -> bytes:
    if value < 0:
        return b"\xd3" + struct.pack(">q", value)
    return b"\xcf" + struct.pack(">Q", value)


def _encoding_cases():
    """(name, rule, encoding, error, description, bytes) of files broken inside the program encoding."""
    out = []
    mlp_pkg, mlp_payloads, mlp_id = decode("mlp")

    def program_of(encoding, mutate=None):
        p = copy.deepcopy(mlp_pkg)
        if mutate:
            mutate(p)
        return _codecs.encode(p, encoding)

    def wrap(encoding, program, features=0):
        return assemble(program, mlp_payloads, encoding, package_id=mlp_id, features=features)

    # Undecodable bytes.
    fb = program_of("flatbuffers")
    out.append(("fb_bad_identifier", "§4", "flatbuffers", "EncodingError", "file identifier is not P2FP",
                wrap("flatbuffers", fb[:4] + b"XXXX" + fb[8:])))
    out.append(("fb_root_offset", "§4", "flatbuffers", "EncodingError", "root offset points past the buffer",
                wrap("flatbuffers", struct.pack("<I", len(fb) + 100) + fb[4:])))
    out.append(("fb_truncated", "§4", "flatbuffers", "EncodingError", "the buffer cut in half (verifier)",
                wrap("flatbuffers", fb[:len(fb) // 2])))
    mp = program_of("msgpack")
    out.append(("msgpack_truncated", "§4", "msgpack", "EncodingError", "MessagePack cut short",
                wrap("msgpack", mp[:len(mp) // 2])))
    out.append(("msgpack_trailing", "§4", "msgpack", "EncodingError", "bytes after the root object",
                wrap("msgpack", mp + b"\xc0")))
    out.append(("msgpack_not_array", "§4", "msgpack", "EncodingError", "the root is a map, not a table array",
                wrap("msgpack", b"\x80")))
    out.append(("msgpack_reserved_byte", "§4", "msgpack", "EncodingError", "the never-used byte 0xc1",
                wrap("msgpack", b"\xc1")))
    js = program_of("json")
    out.append(("json_truncated", "§4", "json", "EncodingError", "JSON cut short",
                wrap("json", js[:len(js) // 2])))
    out.append(("json_trailing", "§4", "json", "EncodingError", "text after the root object",
                wrap("json", js + b" x")))
    out.append(("json_not_object", "§4", "json", "EncodingError", "the root is an array",
                wrap("json", b"[]")))
    out.append(("json_bom", "§4", "json", "EncodingError", "a UTF-8 byte order mark before the document",
                wrap("json", b"\xef\xbb\xbf" + js)))
    # Integers (§10).
    big = "1" + "0" * 5000
    out.append(("json_int_5000_digits", "§10", "json", "LimitError", "an integer of 5001 digits",
                wrap("json", js.replace(
                    b"{", b'{"required_features":' + big.encode() + b",", 1))))
    out.append(("json_int_out_of_range", "§10", "json", "EncodingError", "2**64 in a uint64 field",
                wrap("json", js.replace(b"{", b'{"required_features":18446744073709551616,', 1))))
    out.append(("json_negative_unsigned", "§10", "json", "EncodingError", "-1 in a uint64 field",
                wrap("json", js.replace(b"{", b'{"required_features":-1,', 1))))
    out.append(("json_float_for_int", "§4", "json", "EncodingError", "1.5 in an integer field",
                wrap("json", js.replace(b"{", b'{"required_features":1.5,', 1))))
    out.append(("json_string_for_int", "§4", "json", "EncodingError", "a string in an integer field",
                wrap("json", js.replace(b"{", b'{"required_features":"1",', 1))))
    out.append(("json_bad_float_string", "§4", "json", "EncodingError", "a float written as the string \"bogus\"",
                wrap("json", _json_float_field(js, b'"bogus"'))))
    # NaN spellings (§4): "nan:0x" + 16 lowercase hex digits of a NaN other than the canonical one.
    for name, spelling, what in (
            ("json_nan_canonical_long", b'"nan:0x7ff8000000000000"', "the canonical NaN spelled long (it is \"nan\")"),
            ("json_nan_not_a_nan", b'"nan:0x7ff0000000000000"', "\"nan:0x\" bits of +inf, not a NaN"),
            ("json_nan_uppercase", b'"nan:0x7FF8000000000001"', "uppercase hex digits"),
            ("json_nan_short", b'"nan:0x7ff800000001"', "fewer than 16 hex digits"),
            ("json_nan_prefix", b'"NaN:0x7ff8000000000001"', "\"NaN:\" instead of \"nan:\"")):
        out.append((name, "§4", "json", "EncodingError", f"a float written as {what}",
                    wrap("json", _json_float_field(js, spelling))))
    # Unknown enum value name / union member (§8.2).
    out.append(("json_enum_name_unknown", "§8.2", "json", "VersionError", "an enum value name the reader does not know",
                wrap("json", js.replace(b'"dtype": "FLOAT32"', b'"dtype": "FLOAT99"', 1))))
    out.append(("json_union_name_unknown", "§8.2", "json", "VersionError", "a union member name the reader does not know",
                wrap("json", js.replace(b'"value_type": "TensorArgument"', b'"value_type": "FutureArgument"', 1))))
    out.append(("json_union_index_unknown", "§8.2", "json", "VersionError", "a union member index 200",
                wrap("json", js.replace(b'"value_type": "TensorArgument"', b'"value_type": 200', 1))))
    # Lone surrogate escapes (§9).
    p = copy.deepcopy(mlp_pkg)
    _free_text(p)
    js_mark = _codecs.encode(p, "json")
    out.append(("json_lone_surrogate", "§9", "json", "EncodingError", "a \\ud800 escape without its pair",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\\ud800cd", 1))))
    out.append(("json_lone_low_surrogate", "§9", "json", "EncodingError", "a \\udc00 escape without its pair",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\\udc00cd", 1))))
    out.append(("json_raw_control", "§4", "json", "EncodingError", "a raw control character inside a string",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\x01cd", 1))))
    out.append(("json_bad_escape", "§4", "json", "EncodingError", "the escape \\q",
                wrap("json", js_mark.replace(MARK.encode(), b"ab\\qcd", 1))))
    # JSON syntax and types Python's json module and the decoder refuse (§4, §7).
    def js_sub(old, new):
        assert js.count(old) >= 1, old
        return wrap("json", js.replace(old, new, 1))

    out.append(("json_duplicate_key", "§4", "json", "EncodingError", "a key twice in one object",
                js_sub(b'"producer": {"name": "pt2format",', b'"producer": {"name": "pt2format", "name": "pt2format",')))
    out.append(("json_bare_nan", "§4", "json", "EncodingError", "the bare constant NaN under an unknown key",
                js_sub(b"{", b'{"zz_unknown": NaN,')))
    out.append(("json_struct_missing_field", "§4", "json", "EncodingError", "a SymInt struct without its value",
                js_sub(b'{"expr": -1,\n"value": 16}', b'{"expr": -1}')))
    out.append(("json_struct_extra_field", "§4", "json", "EncodingError", "a SymInt struct with a third key",
                js_sub(b'{"expr": -1,\n"value": 16}', b'{"expr": -1,\n"value": 16, "x": 1}')))
    out.append(("json_bool_for_int", "§4", "json", "EncodingError", "true in the uint64 required_features",
                js_sub(b"{", b'{"required_features": true,')))
    out.append(("json_union_member_without_type", "§4", "json", "EncodingError",
                "a union member without its _type key", js_sub(b'"value_type": "TensorArgument",\n', b"")))
    out.append(("json_unknown_key_too_deep", "§10", "json", "LimitError",
                "2000 nested arrays under a key the schema does not define",
                js_sub(b"{", b'{"zz_unknown": ' + b"[" * 2000 + b"]" * 2000 + b",")))
    # MessagePack integers out of a field's type (§10).
    mp_list = _codecs.encode(mlp_pkg, "msgpack")
    out.append(("msgpack_negative_unsigned", "§10", "msgpack", "EncodingError", "-1 in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, _msgpack_int(-1)))))
    out.append(("msgpack_string_for_int", "§4", "msgpack", "EncodingError", "a string in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, b"\xa1x"))))
    out.append(("msgpack_bool_for_int", "§4", "msgpack", "EncodingError", "true in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, b"\xc3"))))
    out.append(("msgpack_ext_for_int", "§4", "msgpack", "EncodingError", "an ext value in the uint64 required_features",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 2, b"\xd4\x01\x00"))))
    out.append(("msgpack_map_for_table", "§4", "msgpack", "EncodingError", "a map where the Producer table belongs",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 1, b"\x80"))))
    out.append(("msgpack_too_deep", "§10", "msgpack", "LimitError",
                "2000 nested arrays in a position the schema does not define",
                wrap("msgpack", _msgpack_set_package_field(mp_list, 40, b"\x91" * 2000 + b"\xc0"))))
    out.append(("msgpack_union_type_without_member", "§4", "msgpack", "EncodingError",
                "a union type index with a nil member", wrap("msgpack", _msgpack_first_union(mp_list, 2, member=None))))
    # FlatBuffers union member unknown to the reader: IntValue(x) and FloatValue(bits of x) encode to the
    # same bytes but for the union type byte; that byte, set to 200, is a newer minor's member (§8.2).
    bits = 0x4000000000000000

    def with_example(value):
        def mutate(p):
            prog(p).example_inputs = m.Value(value)
        return mutate

    fb_int = program_of("flatbuffers", with_example(m.IntValue(bits)))
    fb_float = program_of("flatbuffers", with_example(m.FloatValue(struct.unpack("<d", struct.pack("<Q", bits))[0])))
    diff = [i for i, (a, b) in enumerate(zip(fb_int, fb_float)) if a != b]
    assert len(fb_int) == len(fb_float) and len(diff) == 1 and fb_int[diff[0]] == 3, diff
    out.append(("fb_union_index_unknown", "§8.2", "flatbuffers", "VersionError", "a union type index 200",
                wrap("flatbuffers", fb_int[:diff[0]] + bytes([200]) + fb_int[diff[0] + 1:])))
    # Union members (§8.2): an index past the reader's members.
    out.append(("msgpack_union_index_unknown", "§8.2", "msgpack", "VersionError", "a union type index 200",
                wrap("msgpack", _msgpack_first_union(mp_list, 200))))
    return out


def _json_float_field(js: bytes, replacement: bytes) -> bytes:
    """Add a float symbol to programs[0] (mlp has no float field) whose hint is `replacement`."""
    needle = b'"programs": [{"name": "forward"'
    assert js.count(needle) == 1
    return js.replace(needle, needle + b',"symbols":[{"name":"s0","kind":"FLOAT","float_hint":' + replacement + b"}]")


def _msgpack_set_package_field(program: bytes, field_id: int, value: bytes) -> bytes:
    """Re-encode the root array with position `field_id` replaced by the raw msgpack `value`."""
    items, end = _msgpack_array_items(program, 0)
    assert end == len(program)
    while len(items) <= field_id:
        items.append(b"\xc0")
    items[field_id] = value
    return _msgpack_array_header(len(items)) + b"".join(items)


def _msgpack_array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + struct.pack(">H", n)
    return b"\xdd" + struct.pack(">I", n)


def _msgpack_array_items(buf: bytes, pos: int):
    """Raw bytes of each element of the array at `pos`, and the end position."""
    b = buf[pos]
    if 0x90 <= b <= 0x9f:
        n, pos = b & 15, pos + 1
    elif b == 0xdc:
        n, pos = struct.unpack_from(">H", buf, pos + 1)[0], pos + 3
    elif b == 0xdd:
        n, pos = struct.unpack_from(">I", buf, pos + 1)[0], pos + 5
    else:
        raise ValueError("not an array")
    items = []
    for _ in range(n):
        end = _msgpack_skip(buf, pos)
        items.append(buf[pos:end])
        pos = end
    return items, pos


def _msgpack_skip(buf: bytes, pos: int) -> int:
    import msgpack

    unpacker = msgpack.Unpacker(raw=True, strict_map_key=False)
    unpacker.feed(buf[pos:])
    unpacker.skip()
    return pos + unpacker.tell()


def _msgpack_first_union(program: bytes, index: int, member=...) -> bytes:
    """The first node input's union type index (Argument: [type, member]) set to `index` (and member to `member`)."""
    import msgpack

    tree = msgpack.unpackb(program, raw=False, strict_map_key=False)
    # The first [type, member] pair of an Argument whose member is a TensorArgument (type index 2).
    done = []

    def walk(x):
        if done:
            return x
        if isinstance(x, list):
            if len(x) == 2 and x[0] == 2 and isinstance(x[1], list) and len(x[1]) >= 1 and isinstance(x[1][0], str):
                done.append(True)
                return [index, x[1] if member is ... else member]
            return [walk(e) for e in x]
        return x

    out = msgpack.packb(walk(tree), use_bin_type=True)
    assert done
    return out


# ---------------------------------------------------------------------------
# Container mutations (§2, §3): byte edits of the golden mlp file, header resealed

def _container_cases():
    src = golden("mlp").read_bytes()
    k0 = entry(src, 0)
    k1 = entry(src, 1)
    size = len(src)
    out = []

    def add(name, rule, error, description, data):
        out.append((name, rule, "flatbuffers", error, description, data))

    add("short_file", "§2.1", "HeaderError", "a file of 40 bytes", src[:40])
    add("bad_magic", "§2.2", "HeaderError", "magic byte 1 changed", reseal(bytearray(src[:1] + b"Q" + src[2:])))
    add("header_version_0", "§2.3", "HeaderError", "header_version 0", header_edit(src, "<H", H_VERSION, 0))
    add("header_version_2", "§2.3", "VersionError", "header_version 2", header_edit(src, "<H", H_VERSION, 2))
    add("section_count_0", "§2.4", "HeaderError", "section_count 0 (header_length 64)",
        header_edit(header_edit(src, "<H", H_COUNT, 0), "<I", H_LENGTH, 64))
    add("header_length_wrong", "§2.4", "HeaderError", "header_length not 64 + 48 * count",
        header_edit(src, "<I", H_LENGTH, 64 + 48 * 2 + 8))
    add("header_past_file", "§2.5", "HeaderError", "section_count 200: the table runs past the file",
        header_edit(header_edit(src, "<H", H_COUNT, 200), "<I", H_LENGTH, 64 + 48 * 200))
    add("header_checksum", "§2.6", "HeaderError", "header checksum off by one",
        header_edit(src, "<I", H_CRC, (struct.unpack_from("<I", src, H_CRC)[0] + 1) & 0xFFFFFFFF, seal=False))
    add("file_length_short", "§2.7", "HeaderError", "file_length one less than the file",
        header_edit(src, "<Q", H_FILE_LENGTH, size - 1))
    add("file_extended", "§2.7", "HeaderError", "64 bytes appended, file_length unchanged", src + bytes(64))
    add("format_major_2", "§2.8", "VersionError", "format_major 2", header_edit(src, "<H", H_MAJOR, 2))
    add("format_major_0", "§2.8", "VersionError", "format_major 0", header_edit(src, "<H", H_MAJOR, 0))
    add("header_unknown_feature", "§2.9", "UnsupportedFeatureError", "required_features bit 40 in the header",
        header_edit(src, "<Q", H_FEATURES, 1 << 40))
    add("section_kind_unknown", "§3", "HeaderError", "DATA entry turned into kind 9 without OPTIONAL",
        entry_edit(src, 1, "<H", E_KIND, 9))
    add("program_encoding_unknown", "§3", "EncodingError", "PROGRAM encoding 9",
        entry_edit(src, 0, "<H", E_ENCODING, 9))
    add("data_encoding_not_raw", "§3", "EncodingError", "DATA encoding 1",
        entry_edit(src, 1, "<H", E_ENCODING, 1))
    add("alignment_not_power", "§3", "SegmentError", "PROGRAM alignment 24", entry_edit(src, 0, "<I", E_ALIGN, 24))
    add("program_alignment_small", "§3", "SegmentError", "PROGRAM alignment 4", entry_edit(src, 0, "<I", E_ALIGN, 4))
    add("data_alignment_small", "§3", "SegmentError", "DATA alignment 32", entry_edit(src, 1, "<I", E_ALIGN, 32))
    bad_align = 1 << 20
    add("offset_misaligned", "§3", "SegmentError", "DATA alignment 2**20: its offset is not a multiple",
        entry_edit(src, 1, "<I", E_ALIGN, bad_align))
    add("checksum_kind_unknown", "§3", "HeaderError", "DATA checksum_kind 2", entry_edit(src, 1, "<I", E_CK_KIND, 2))
    add("program_checksum_none", "§3", "HeaderError", "PROGRAM checksum_kind 0",
        entry_edit(entry_edit(src, 0, "<I", E_CK, 0), 0, "<I", E_CK_KIND, 0))
    add("checksum_without_kind", "§3", "HeaderError", "DATA checksum_kind 0 with a non-zero checksum",
        entry_edit(src, 1, "<I", E_CK_KIND, 0))
    add("two_programs", "§3", "HeaderError", "the DATA entry marked PROGRAM",
        entry_edit(entry_edit(src, 1, "<H", E_KIND, 1), 1, "<H", E_ENCODING, 1))
    # Swap the entries: DATA first, PROGRAM second (offsets then out of order as well, but the
    # PROGRAM-is-entry-0 rule is checked first, with the entries).
    buf = bytearray(src)
    e0 = bytes(buf[ENTRY0:ENTRY0 + ENTRY_SIZE])
    e1 = bytes(buf[ENTRY0 + ENTRY_SIZE:ENTRY0 + 2 * ENTRY_SIZE])
    buf[ENTRY0:ENTRY0 + ENTRY_SIZE] = e1
    buf[ENTRY0 + ENTRY_SIZE:ENTRY0 + 2 * ENTRY_SIZE] = e0
    add("program_not_first", "§3", "HeaderError", "DATA entry before the PROGRAM entry", reseal(buf))
    add("sections_overlap", "§3", "SegmentError", "DATA section starts inside the PROGRAM section",
        entry_edit(src, 1, "<Q", E_OFFSET, k1[3] - 64))
    add("section_before_table", "§3", "SegmentError", "PROGRAM offset 64: inside the section table",
        entry_edit(src, 0, "<Q", E_OFFSET, 64))
    # Non-zero padding between PROGRAM and DATA.
    pad_at = k0[3] + k0[4]
    assert pad_at < k1[3], "mlp golden file needs padding before its DATA section"
    add("padding_nonzero", "§3", "SegmentError", "a non-zero byte in the padding before DATA",
        reseal(bytearray(src[:pad_at] + b"\x01" + src[pad_at + 1:])))
    # A hole: DATA moved 64 bytes later (file grown, file_length updated).
    grown = src[:k1[3]] + bytes(64) + src[k1[3]:]
    grown = header_edit(header_edit(grown, "<Q", H_FILE_LENGTH, size + 64), "<Q", ENTRY0 + ENTRY_SIZE + E_OFFSET,
                        k1[3] + 64)
    add("padding_too_long", "§3", "SegmentError", "64 zero bytes of padding before a 64-aligned DATA section",
        grown)
    add("section_past_end", "§3", "SegmentError", "DATA length 64 bytes past the end of the file",
        entry_edit(src, 1, "<Q", E_LENGTH, k1[4] + 64))
    add("trailing_bytes", "§3", "SegmentError", "64 bytes after the last section (file_length updated)",
        header_edit(src + bytes(64), "<Q", H_FILE_LENGTH, size + 64))
    # Checksums (§3).
    for enc in ENCODINGS:
        s = golden("mlp", enc).read_bytes()
        e = entry(s, 0)
        flip = e[3] + e[4] // 2
        out.append((f"program_checksum-{enc}", "§3", enc, "ChecksumError", "one program byte flipped",
                    s[:flip] + bytes([s[flip] ^ 0x20]) + s[flip + 1:]))
    d = k1[3] + 3
    add("data_checksum", "§3", "ChecksumError", "one data byte flipped (DATA section CRC)",
        src[:d] + bytes([src[d] ^ 1]) + src[d + 1:])
    # Storage checksum: flip a data byte and reseal the section CRC, so only Storage.checksum catches it.
    buf = bytearray(src)
    buf[d] ^= 1
    struct.pack_into("<I", buf, ENTRY0 + ENTRY_SIZE + E_CK, zlib.crc32(bytes(buf[k1[3]:k1[3] + k1[4]])))
    add("storage_checksum", "§5", "ChecksumError", "one storage byte flipped, DATA section CRC updated", reseal(buf))
    return out
