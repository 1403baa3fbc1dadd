"""read / write_package / validate / convert: round trips, zero-copy data, checksums, shard files."""

import mmap
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest


from pt2f_samples import (  # noqa: E402
    ENCODINGS, entry_offset, float_payloads, patch, reseal, tiny_package, write_raw, write_shard,
)

from pt2format import _api  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format.errors import ChecksumError, HeaderError, SegmentError, StringClassError, ValidationError  # noqa: E402


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_roundtrip(tmp_path, encoding):
    sizes = (3, 16, 17)
    pkg = tiny_package(sizes)
    payloads = float_payloads(sizes)
    _api.write_package(tmp_path / "m.pt2f", pkg, payloads, encoding=encoding)
    with _api.read(tmp_path / "m.pt2f", verify_data=True) as f:
        assert f.package == pkg
        assert f.header.format_version == (1, 0)
        for i, p in enumerate(payloads):
            assert bytes(f.storage_view(i)) == p
            assert f.package.storages[i].checksum == zlib.crc32(p)
        assert np.frombuffer(f.storage_view(1), np.float32).tolist() == [100.0 + k for k in range(16)]


def test_storage_view_is_zero_copy_and_read_only(tmp_path):
    _api.write_package(tmp_path / "m", tiny_package((4,)), float_payloads((4,)))
    with _api.read(tmp_path / "m") as f:
        view = f.storage_view(0)
        assert isinstance(view.obj, mmap.mmap)
        assert view.readonly
        with pytest.raises(TypeError):
            view[0] = 1
        del view


def test_copy_on_write_view_is_writable_and_private(tmp_path):
    path = tmp_path / "m"
    _api.write_package(path, tiny_package((4,)), float_payloads((4,)))
    before = path.read_bytes()
    with _api.read(path, copy_on_write=True) as f:
        arr = np.frombuffer(f.storage_view(0), np.float32)
        arr[0] = 42.0
        assert np.frombuffer(f.storage_view(0), np.float32)[0] == 42.0
        del arr
    assert path.read_bytes() == before


def test_view_outlives_close(tmp_path):
    _api.write_package(tmp_path / "m", tiny_package((4,)), float_payloads((4,)))
    f = _api.read(tmp_path / "m")
    arr = np.frombuffer(f.storage_view(0), np.float32)
    f.close()
    assert f.closed
    assert arr.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError):
        f.storage_view(0)


def test_corrupt_storage_detected_only_on_request(tmp_path):
    path = tmp_path / "m"
    _api.write_package(path, tiny_package((4, 4)), float_payloads((4, 4)))
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x10  # last byte of storage 1
    path.write_bytes(data)
    _api.read(path).close()
    with pytest.raises(ChecksumError) as e:
        _api.read(path, verify_data=True)
    assert e.value.path == "storages[1]"
    with pytest.raises(ChecksumError):
        _api.validate(path)


def test_corrupt_padding_inside_data_section_fails_section_checksum(tmp_path):
    path = tmp_path / "m"
    _api.write_package(path, tiny_package((4, 4)), float_payloads((4, 4)))
    data = bytearray(path.read_bytes())
    data_off = struct.unpack_from("<Q", data, entry_offset(1) + 8)[0]
    data[data_off + 20] = 1  # padding after storage 0 (16 bytes), before storage 1 at 64
    path.write_bytes(data)
    with pytest.raises(ChecksumError, match="section checksum"):
        _api.validate(path)


def test_without_data_checksums_nothing_to_verify(tmp_path):
    path = tmp_path / "m"
    _api.write_package(path, tiny_package((4,)), float_payloads((4,)), data_checksums=False)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(data)
    _api.validate(path)


def test_overlapping_storages_refused(tmp_path):
    """Storages never overlap (SPEC.md §5), even with valid checksums: aliasing tensors share one storage."""
    payload = bytes(range(128))
    pkg = tiny_package((32, 8))
    pkg.storages = [m.Storage(0, 0, 128, 1, zlib.crc32(payload)), m.Storage(0, 64, 32, 1, zlib.crc32(payload[64:96]))]
    pkg.segments = [m.Segment(0, 1)]
    write_raw(tmp_path / "m", pkg, [payload])
    with pytest.raises(SegmentError, match="overlap") as e:
        _api.read(tmp_path / "m")
    assert e.value.path == "storages[1]"


def test_header_and_package_versions_must_agree(tmp_path):
    path = tmp_path / "m"
    pkg = tiny_package((4,))
    pkg.format_version = m.FormatVersion(1, 1)
    _api.write_package(path, pkg, float_payloads((4,)))
    path.write_bytes(patch(path.read_bytes(), 18, "<H", 0))
    with pytest.raises(ValidationError, match="format_version") as e:
        _api.read(path)
    assert e.value.expected == "1.0" and e.value.got == "1.1"


def test_header_and_package_features_must_agree(tmp_path):
    path = tmp_path / "m"
    _api.write_package(path, tiny_package((4,)), float_payloads((4,)))
    path.write_bytes(patch(path.read_bytes(), 24, "<Q", 1))
    with pytest.raises(ValidationError, match="required_features"):
        _api.read(path)


def test_newer_minor_version_reads(tmp_path):
    path = tmp_path / "m"
    pkg = tiny_package((4,))
    pkg.format_version = m.FormatVersion(1, 7)
    _api.write_package(path, pkg, float_payloads((4,)))
    with _api.read(path) as f:
        assert f.header.format_version == (1, 7)


# -- shard files -----------------------------------------------------------------

def _sharded(tmp_path, *, shard_name="m.shard1", shard_size=None, section=0, storage_size=None):
    sizes = (4, 6)
    payloads = float_payloads(sizes)
    actual = write_shard(tmp_path / "m.shard1", payloads)
    pkg = tiny_package(sizes)
    pkg.required_features = 1
    pkg.shard_files = [m.ShardFile(shard_name, actual if shard_size is None else shard_size)]
    pkg.segments = [m.Segment(file=1, section=section)]
    pkg.storages = [m.Storage(0, 0, 16, 1, zlib.crc32(payloads[0])),
                    m.Storage(0, 64, storage_size or 24, 1, zlib.crc32(payloads[1]))]
    write_raw(tmp_path / "m.pt2f", pkg, [])
    return tmp_path / "m.pt2f", payloads


def test_shard_storage_views(tmp_path):
    path, payloads = _sharded(tmp_path)
    _api.validate(path)
    with _api.read(path) as f:
        assert [bytes(f.storage_view(i)) for i in range(2)] == payloads
        assert isinstance(f.storage_view(0).obj, mmap.mmap)


def test_shard_opened_lazily_and_checked(tmp_path):
    path, _ = _sharded(tmp_path)
    (tmp_path / "m.shard1").unlink()
    with _api.read(path) as f:  # the shard is not needed to read the program
        assert f.package.programs[0].name == "forward"
        with pytest.raises(SegmentError, match="missing"):
            f.storage_view(0)


def test_shard_size_mismatch(tmp_path):
    path, _ = _sharded(tmp_path, shard_size=12345)
    with _api.read(path) as f, pytest.raises(HeaderError, match="size"):
        f.storage_view(0)


def test_shard_section_must_be_data(tmp_path):
    path, _ = _sharded(tmp_path, section=3)
    with _api.read(path) as f, pytest.raises(SegmentError, match="DATA section"):
        f.storage_view(0)


def test_shard_storage_out_of_bounds(tmp_path):
    path, _ = _sharded(tmp_path, storage_size=4096)
    with _api.read(path) as f, pytest.raises(SegmentError, match="past its segment"):
        f.storage_view(1)


def test_corrupt_shard_data(tmp_path):
    path, _ = _sharded(tmp_path)
    shard = tmp_path / "m.shard1"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 4
    shard.write_bytes(data)
    with pytest.raises(ChecksumError) as e:
        _api.validate(path)
    assert e.value.file.endswith("m.shard1")


@pytest.mark.parametrize("name", ["../m.shard1", "/etc/passwd", "sub/m.shard1", "a\\b", "..", "", "x\0y"])
def test_shard_name_must_be_plain(tmp_path, name):
    path, _ = _sharded(tmp_path, shard_name=name)
    with pytest.raises(StringClassError) as e:
        _api.read(path)
    assert e.value.string_class == "file_name" and e.value.path == "ShardFile.name"


# -- convert -----------------------------------------------------------------------

def test_convert_chain_returns_identical_bytes(tmp_path):
    """Through MessagePack and JSON back to FlatBuffers: the bytes of a file whose equal TensorMetas are one object
    (as the exporter writes them; convert to FlatBuffers makes them so, see test_convert_shares.py)."""
    from pt2format._codecs.share import share_equal

    src = tmp_path / "a.pt2f"
    pkg = tiny_package((3, 70))
    assert share_equal(pkg) > 0
    _api.write_package(src, pkg, float_payloads((3, 70)))
    _api.convert(src, tmp_path / "b", "msgpack")
    _api.convert(tmp_path / "b", tmp_path / "c", "json")
    _api.convert(tmp_path / "c", tmp_path / "d", "flatbuffers")
    assert (tmp_path / "d").read_bytes() == src.read_bytes()
    with _api.read(tmp_path / "c") as f:
        assert f.header.sections[0].encoding == 3


def test_convert_in_place(tmp_path):
    """Converting a file onto itself changes its encoding and keeps its contents."""
    from pt2format._dump import dump

    src, other = tmp_path / "a.pt2f", tmp_path / "b.pt2f"
    _api.write_package(src, tiny_package((3,)), float_payloads((3,)))
    _api.write_package(other, tiny_package((3,)), float_payloads((3,)), encoding="json")
    with _api.read(src) as f:
        assert f.header.sections[0].encoding == 1
        before = [bytes(f.storage_view(i)) for i in range(len(f.package.storages))]
    _api.convert(src, src, "json")
    _api.validate(src)
    with _api.read(src) as f:
        assert f.header.sections[0].encoding == 3
        assert [bytes(f.storage_view(i)) for i in range(len(f.package.storages))] == before
    assert dump(src) == dump(other)  # the canonical dump covers every field
    assert src.read_bytes() == other.read_bytes()


def test_convert_inlines_shards(tmp_path):
    path, payloads = _sharded(tmp_path)
    _api.convert(path, tmp_path / "out.pt2f", "msgpack")
    (tmp_path / "m.shard1").unlink()
    with _api.read(tmp_path / "out.pt2f", verify_data=True) as f:
        assert f.package.shard_files == [] and f.package.required_features == 0
        assert [bytes(f.storage_view(i)) for i in range(2)] == payloads


def test_convert_refuses_corrupt_data(tmp_path):
    src = tmp_path / "a.pt2f"
    _api.write_package(src, tiny_package((3,)), float_payloads((3,)))
    data = bytearray(src.read_bytes())
    data[-2] ^= 1
    src.write_bytes(data)
    with pytest.raises(ChecksumError):
        _api.convert(src, tmp_path / "b", "json")
    assert not (tmp_path / "b").exists()


def test_public_functions_route_here(tmp_path):
    import pt2format

    _api.write_package(tmp_path / "m", tiny_package((3,)), float_payloads((3,)))
    with pt2format.read(tmp_path / "m") as f:
        assert f.package.programs[0].name == "forward"
    pt2format.validate(tmp_path / "m")
    path = tmp_path / "m"
    path.write_bytes(reseal(bytearray(path.read_bytes()[:-1])))
    with pytest.raises(pt2format.HeaderError):
        pt2format.validate(path)
