"""Hostile FlatBuffers buffers: each attack raises the exact typed error, with offset and field path."""

from __future__ import annotations

import struct

import pytest

from pt2format import _codecs as C
from pt2format._generated import model as M
from pt2format.errors import EncodingError, LimitError, VersionError

import codec_strategies as S
from fb_builder import Builder


small_package = S.small_package


# ---------------------------------------------------------------------------
# FlatBuffers decoder
# ---------------------------------------------------------------------------

def fb(pkg=None) -> bytes:
    return C.encode(pkg or small_package(), "flatbuffers")


@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_fb_shorter_than_8_bytes_rejected(n):
    with pytest.raises(EncodingError, match="shorter than 8 bytes"):
        C.decode(fb()[:n], "flatbuffers")


def test_fb_wrong_file_identifier_rejected():
    data = bytearray(fb())
    data[4:8] = b"XXXX"
    with pytest.raises(EncodingError, match="file identifier") as e:
        C.decode(bytes(data), "flatbuffers")
    assert e.value.offset == 4


def test_fb_every_truncation_rejected():
    data = fb(S.exhaustive_package())
    step = max(1, len(data) // 300)
    for n in range(8, len(data), step):
        with pytest.raises((EncodingError, LimitError)):
            C.decode(data[:n], "flatbuffers")


def test_fb_root_offset_out_of_range():
    data = bytearray(fb())
    data[0:4] = struct.pack("<I", len(data) + 100)
    with pytest.raises(EncodingError, match="table offset out of range") as e:
        C.decode(bytes(data), "flatbuffers")
    assert e.value.offset == len(data) + 100


def test_fb_vtable_offset_out_of_range():
    data = bytearray(fb())
    root = struct.unpack_from("<I", data, 0)[0]
    data[root:root + 4] = struct.pack("<i", -(1 << 30))
    with pytest.raises(EncodingError, match="vtable offset out of range"):
        C.decode(bytes(data), "flatbuffers")


def _build(fn) -> bytes:
    """A hand-laid-out buffer: fn(builder) returns the root table's distance."""
    b = Builder()
    return b.finish(fn(b))


def _package_with(b, programs_vec=None, version=True):
    fields = []
    if version:
        fields.append((0, 4, 4, None, b.add_table([(0, 4, 4, "I", 1)])))
    if programs_vec is not None:
        fields.append((3, 4, 4, None, programs_vec))
    return b.add_table(fields)


def test_fb_vector_length_exceeding_buffer_rejected():
    def make(b):
        vec = b.add_vector(b"", 0xFFFFFFF0, 4)  # claims 4 billion offsets, has none
        return _package_with(b, vec)

    with pytest.raises(EncodingError, match="vector runs past the buffer end") as e:
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs"


def test_fb_string_length_exceeding_buffer_rejected():
    def make(b):
        s = b.add_vector(b"abc\0", 1 << 31, 4)  # a string header claiming 2 GiB
        prog = b.add_table([(0, 4, 4, None, s)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="string runs past the buffer end") as e:
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs[0].name"


def test_fb_invalid_utf8_rejected():
    def make(b):
        s = b.add_vector(b"ab\xff\xfe\0", 4, 4)
        prog = b.add_table([(0, 4, 4, None, s)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="not valid UTF-8") as e:
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs[0].name"


def test_fb_string_without_nul_rejected():
    def make(b):
        s = b.add_vector(b"abcX", 3, 4)
        prog = b.add_table([(0, 4, 4, None, s)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="NUL-terminated"):
        C.decode(_build(make), "flatbuffers")


def test_fb_missing_required_field_rejected():
    with pytest.raises(EncodingError, match="required field") as e:
        C.decode(_build(lambda b: _package_with(b, version=False)), "flatbuffers")
    assert e.value.path == "format_version"


def test_fb_union_type_beyond_union_is_a_newer_minor():
    def make(b):
        member = b.add_table([])
        arg = b.add_table([(0, 1, 1, "B", 200), (1, 4, 4, None, member)])  # Argument.value_type = 200
        graph = b.add_table([(1, 4, 4, None, b.add_offset_vector([arg]))])  # Graph.outputs
        prog = b.add_table([(1, 4, 4, None, graph)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(VersionError, match="newer minor") as e:  # SPEC.md section 8
        C.decode(_build(make), "flatbuffers")
    assert e.value.path == "programs[0].graph.outputs[0].value_type"


def test_fb_union_type_without_member_rejected():
    def make(b):
        arg = b.add_table([(0, 1, 1, "B", 2)])
        graph = b.add_table([(1, 4, 4, None, b.add_offset_vector([arg]))])
        prog = b.add_table([(1, 4, 4, None, graph)])
        return _package_with(b, b.add_offset_vector([prog]))

    with pytest.raises(EncodingError, match="union type without a member"):
        C.decode(_build(make), "flatbuffers")


def test_fb_field_outside_its_table_rejected():
    data = bytearray(fb())
    root = struct.unpack_from("<I", data, 0)[0]
    vt = root - struct.unpack_from("<i", data, root)[0]
    osize = struct.unpack_from("<H", data, vt + 2)[0]
    data[vt + 4:vt + 6] = struct.pack("<H", osize)  # format_version's offset now points past the table
    with pytest.raises(EncodingError, match="field outside its table") as e:
        C.decode(bytes(data), "flatbuffers")
    assert e.value.path == "format_version"


def test_fb_depth_bomb_rejected():
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(example_inputs=S.deep_value(300))])
    data = fb(pkg)
    with pytest.raises(LimitError, match="max_depth"):
        C.decode(data, "flatbuffers")
    v, levels = C.decode(data, "flatbuffers", max_depth=700).programs[0].example_inputs, 0
    while isinstance(v.value, M.ListValue):  # (== on a 600-table chain would exhaust Python's stack)
        v, levels = v.value.items[0], levels + 1
    assert levels == 300 and v.value == M.IntValue(7)


def test_fb_shared_offset_bomb_rejected():
    """Every level's list holds the previous level twice: 2**60 values from a few KiB."""

    def make(b):
        leaf = b.add_table([(0, 1, 1, "B", 3), (1, 4, 4, None, b.add_table([(0, 8, 8, "q", 7)]))])  # Value(IntValue)
        v = leaf
        for _ in range(60):
            lst = b.add_table([(0, 4, 4, None, b.add_offset_vector([v, v]))])  # ListValue(items=[v, v])
            v = b.add_table([(0, 1, 1, "B", 7), (1, 4, 4, None, lst)])  # Value(ListValue)
        prog = b.add_table([(12, 4, 4, None, v)])  # Program.example_inputs
        return _package_with(b, b.add_offset_vector([prog]))

    data = _build(make)
    assert len(data) < 8192
    with pytest.raises(LimitError, match="more objects than its size"):
        C.decode(data, "flatbuffers")


def test_fb_memoryview_not_copied_and_decodes():
    data = fb()
    view = memoryview(bytearray(data))
    assert C.decode(view, "flatbuffers") == small_package()


