"""Damaged and hostile files: each kind of damage raises its exact typed error; no byte flip escapes.

Header edits are re-sealed (header checksum recomputed) so each test reaches
the check it is named for rather than stopping at the checksum.
"""

import struct
import sys
from pathlib import Path

import pytest


from pt2f_samples import (  # noqa: E402
    ENCODINGS, entry_offset, float_payloads, meta, patch, reseal, reseal_sections, tiny_package, write_raw,
)

from pt2format import _api  # noqa: E402
from pt2format._dump import dump_text  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format.errors import (  # noqa: E402
    ChecksumError, EncodingError, HeaderError, LimitError, Pt2FormatError, SegmentError,
    UnsupportedFeatureError, ValidationError, VersionError,
)

SIZES = (40, 4)  # storage 0 is 160 bytes, so the DATA section spans several 64-byte blocks


@pytest.fixture(params=ENCODINGS)
def good(tmp_path, request):
    path = tmp_path / "good.pt2f"
    _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES), encoding=request.param, fsync=False)
    return bytearray(path.read_bytes())


def read_back(tmp_path, data, **kw):
    path = tmp_path / "damaged.pt2f"
    path.write_bytes(bytes(data))
    _api.read(path, **kw).close()


def raises_exactly(exc, tmp_path, data, **kw):
    with pytest.raises(Pt2FormatError) as e:
        read_back(tmp_path, data, **kw)
    assert type(e.value) is exc, f"{type(e.value).__name__}: {e.value}"
    return e.value


def sections(data):
    count = struct.unpack_from("<H", data, 10)[0]
    return [struct.unpack_from("<HHIQQII", data, entry_offset(i)) for i in range(count)]


def test_good_file_reads(tmp_path, good):
    read_back(tmp_path, good, verify_data=True)


def test_bad_magic(tmp_path, good):
    good[3] = ord("X")
    err = raises_exactly(HeaderError, tmp_path, good)
    assert err.offset == 0 and err.file.endswith("damaged.pt2f")


def test_empty_file(tmp_path):
    raises_exactly(HeaderError, tmp_path, b"")


def test_truncated_at_every_boundary(tmp_path, good):
    (_, _, _, p_off, p_len, _, _), (_, _, _, d_off, d_len, _, _) = sections(good)
    cuts = {1, 8, 32, 63, 64, 65, 111, 112, 159, p_off, p_off + p_len // 2, p_off + p_len, d_off - 1, d_off,
            d_off + 64, d_off + d_len - 1}
    for cut in sorted(cuts):
        err = raises_exactly(HeaderError, tmp_path, good[:cut])
        assert err.got == cut, (cut, str(err))  # every message reports the real file size


def test_trailing_garbage(tmp_path, good):
    raises_exactly(HeaderError, tmp_path, good + b"\0")


def test_header_length_wrong(tmp_path, good):
    raises_exactly(HeaderError, tmp_path, patch(good, 12, "<I", 64 + 48 * 3))


def test_header_checksum_wrong(tmp_path, good):
    raises_exactly(HeaderError, tmp_path, patch(good, 40, "<I", 0x12345678, seal=False))


def test_section_out_of_bounds(tmp_path, good):
    raises_exactly(SegmentError, tmp_path, patch(good, entry_offset(1) + 16, "<Q", 2**63))


def test_section_offset_overflow_rejected(tmp_path, good):
    raises_exactly(SegmentError, tmp_path, patch(good, entry_offset(1) + 8, "<Q", 2**64 - 64))


def test_overlapping_sections(tmp_path, good):
    err = raises_exactly(SegmentError, tmp_path, patch(good, entry_offset(1) + 8, "<Q", 192))
    assert "overlaps" in str(err) and err.section == "1 (DATA)"


def test_misaligned_section(tmp_path, good):
    _, _, _, d_off, _, _, _ = sections(good)[1]
    raises_exactly(SegmentError, tmp_path, patch(good, entry_offset(1) + 8, "<Q", d_off + 8))


def test_program_checksum_mismatch(tmp_path, good):
    _, _, _, p_off, p_len, _, _ = sections(good)[0]
    good[p_off + p_len // 2] ^= 0x01
    err = raises_exactly(ChecksumError, tmp_path, good)
    assert err.section == "0 (PROGRAM)"


def test_data_checksum_mismatch_with_verify(tmp_path, good):
    _, _, _, d_off, _, _, _ = sections(good)[1]
    good[d_off + 70] ^= 0x01  # inside storage 0
    read_back(tmp_path, good)  # not verified by default
    err = raises_exactly(ChecksumError, tmp_path, good, verify_data=True)
    assert err.path == "storages[0]"


def test_unknown_encoding(tmp_path, good):
    raises_exactly(EncodingError, tmp_path, patch(good, entry_offset(0) + 2, "<H", 9))


def test_unknown_section_kind(tmp_path, good):
    raises_exactly(HeaderError, tmp_path, patch(good, entry_offset(1), "<H", 7))


def test_newer_major_version(tmp_path, good):
    raises_exactly(VersionError, tmp_path, patch(good, 16, "<H", 2))


def test_newer_header_version(tmp_path, good):
    raises_exactly(VersionError, tmp_path, patch(good, 8, "<H", 2))


def test_unknown_required_feature(tmp_path, good):
    raises_exactly(UnsupportedFeatureError, tmp_path, patch(good, 24, "<Q", 1 << 40))


def test_program_too_large_for_limit(tmp_path, good):
    raises_exactly(LimitError, tmp_path, good, max_program_bytes=64)


SCHEMA_INVALID = {
    "flatbuffers": [b"\x00" * 3, b"\x10\x00\x00\x00P2FP" + b"\xff" * 24, b"\x08\x00\x00\x00XXXX\x00\x00\x00\x00"],
    "msgpack": [b"", b"\xc1", b"\x92\xa1x\xa1y", b"\x91\x93\x01", b"\xdd\xff\xff\xff\xff"],
    "json": [b"", b"\xff\xfe", b"[1, 2]", b'{"format_version": {"major": 1}, "programs": 5}',
             b'{"programs": [{"name": 7}]',
             # (an unknown key is a newer minor's field and is ignored, SPEC.md section 8.2)
             b'{"format_version": {"major": "1"}, "nonexistent_field": 1}'],
}


@pytest.mark.parametrize("encoding, program", [(e, p) for e, ps in SCHEMA_INVALID.items() for p in ps])
def test_schema_invalid_program(tmp_path, encoding, program):
    write_raw(tmp_path / "bad.pt2f", m.Package(format_version=m.FormatVersion(1, 0)), encoding=encoding,
              program_bytes=program)
    with pytest.raises(Pt2FormatError) as e:
        _api.read(tmp_path / "bad.pt2f")
    assert type(e.value) in (EncodingError, LimitError), f"{type(e.value).__name__}: {e.value}"
    assert e.value.section == "0 (PROGRAM)"


def _empty_flatbuffers_package() -> bytes:
    import flatbuffers

    b = flatbuffers.Builder(0)
    b.StartObject(1)
    b.Finish(b.EndObject(), file_identifier=b"P2FP")
    return bytes(b.Output())


@pytest.mark.parametrize("encoding, program", [("msgpack", b"\x91\xc0"), ("json", b"{}"), ("flatbuffers", None)])
def test_missing_required_format_version(tmp_path, encoding, program):
    program = program if program is not None else _empty_flatbuffers_package()
    write_raw(tmp_path / "bad.pt2f", m.Package(format_version=m.FormatVersion(1, 0)), encoding=encoding,
              program_bytes=program)
    with pytest.raises((ValidationError, EncodingError)) as e:
        _api.read(tmp_path / "bad.pt2f")
    assert "format_version" in str(e.value)


def _raw_with(tmp_path, mutate, encoding="flatbuffers"):
    pkg = tiny_package(SIZES)
    for i, st in enumerate(pkg.storages):
        st.segment, st.offset, st.size = 0, 192 * i, 4 * SIZES[i]
    pkg.segments = [m.Segment(0, 1)]
    mutate(pkg)
    write_raw(tmp_path / "bad.pt2f", pkg, float_payloads(SIZES), encoding=encoding)
    return tmp_path / "bad.pt2f"


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_dangling_references(tmp_path, encoding):
    def dangling_storage(pkg):
        pkg.tensors[1].storage = 7

    def dangling_name(pkg):
        pkg.programs[0].graph.nodes[1].inputs[0].value = m.TensorArgument("ghost")

    def dangling_state(pkg):
        pkg.programs[0].state[0].tensor = 99

    for mutate, path in ((dangling_storage, "tensors[1].storage"),
                         (dangling_name, "programs[0].graph.nodes[1].inputs[0].value.name"),
                         (dangling_state, "programs[0].state[0].tensor")):
        with pytest.raises(ValidationError) as e:
            _api.read(_raw_with(tmp_path, mutate, encoding))
        assert e.value.path == path and e.value.section == "0 (PROGRAM)"


def test_storage_outside_data_section(tmp_path):
    def far(pkg):
        pkg.storages[1].offset = 1 << 20

    with pytest.raises(SegmentError, match="past its segment"):
        _api.read(_raw_with(tmp_path, far))


def test_absurd_storage_and_tensor_sizes(tmp_path):
    def huge_storage(pkg):
        pkg.storages[0].size = 2**63

    def huge_tensor(pkg):
        pkg.tensors[0].sizes = [2**62]

    with pytest.raises(SegmentError):
        _api.read(_raw_with(tmp_path, huge_storage))
    with pytest.raises(ValidationError):
        _api.read(_raw_with(tmp_path, huge_tensor))


def test_shard_path_traversal_rejected(tmp_path):
    def evil(pkg):
        pkg.required_features = 1
        pkg.shard_files = [m.ShardFile("../../etc/passwd", 100)]
        pkg.segments.append(m.Segment(1, 0))

    with pytest.raises(ValidationError, match="not a valid file_name"):
        _api.read(_raw_with(tmp_path, evil))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_deep_nesting(tmp_path, encoding):
    value = m.Value(m.NullValue())
    for _ in range(100):  # 200 nested tables, past the default max_depth of 128
        value = m.Value(m.ListValue([value]))

    def deep(pkg):
        pkg.programs[0].example_inputs = value

    with pytest.raises(LimitError):
        _api.read(_raw_with(tmp_path, deep, encoding))


# -- every byte of header and program, flipped ------------------------------------

def _flip_sample():
    x = m.TensorValue("x", meta(2))
    graph = m.Graph(inputs=[m.Argument(m.TensorArgument("x"))], outputs=[m.Argument(m.TensorArgument("x"))],
                    tensor_values=[x])
    sig = m.GraphSignature([m.InputSpec(m.UserInputSpec(m.Argument(m.TensorArgument("x"))))],
                           [m.OutputSpec(m.UserOutputSpec(m.Argument(m.TensorArgument("x"))))])
    program = m.Program(name="f", graph=graph, signature=sig, state=[m.StateEntry("w", m.StateKind.PARAMETER, 0)],
                        example_inputs=m.Value(m.ListValue([m.Value(m.FloatValue(-0.0)),
                                                            m.Value(m.TensorRefValue(0))])))
    return m.Package(format_version=m.FormatVersion(1, 0), programs=[program],
                     tensors=[m.Tensor(0, m.ScalarType.FLOAT32, [2], [1])], storages=[m.Storage()])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_flipped_byte_is_caught_or_harmless(tmp_path, encoding):
    """Unsealed flips must always fail (CRCs see every single-byte change); re-sealed flips reach the
    header checks and the decoder and must give a typed error or a usable tree, nothing else."""
    path = tmp_path / "f.pt2f"
    _api.write_package(path, _flip_sample(), float_payloads((2,)), encoding=encoding, fsync=False)
    good = bytes(path.read_bytes())
    _, _, _, p_off, p_len, _, _ = sections(good)[0]
    for at in range(p_off + p_len):
        for mask in (0x01, 0x80):
            data = bytearray(good)
            data[at] ^= mask
            path.write_bytes(data)
            with pytest.raises(Pt2FormatError):
                _api.read(path).close()
            path.write_bytes(reseal_sections(data))
            try:
                with _api.read(path) as f:
                    dump_text(f.package, [0] * len(f.package.storages))
            except Pt2FormatError:
                pass
