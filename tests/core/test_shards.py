"""Shard files (pt2format/_shards.py and the sharded path of _api.write_package): layout, identity, damage."""

from __future__ import annotations

import os
import shutil
import struct

import pytest

from pt2format import _api
from pt2format._container.header import FEATURE_SHARD_FILES, unpack_header
from pt2format._generated import model as m
from pt2format._shards import parse_size, plan_shards, shard_name
from pt2format.errors import ChecksumError, SegmentError, StaleShardError, ValidationError


def _package(n: int):
    return m.Package(format_version=m.FormatVersion(1, 0), producer=m.Producer(name="test"),
                     programs=[m.Program(name="forward", graph=m.Graph(), signature=m.GraphSignature())],
                     tensors=[m.Tensor(storage=i, dtype=m.ScalarType.UINT8, sizes=[100], strides=[1]) for i in range(n)],
                     storages=[m.Storage() for _ in range(n)])


def _payloads(n: int, seed: int = 0):
    return [bytes((seed + i * 7 + j) % 251 for j in range(100)) for i in range(n)]


def _write(path, n=5, seed=0, max_shard_size=250, **kw):
    _api.write_package(path, _package(n), _payloads(n, seed), fsync=False, max_shard_size=max_shard_size, **kw)


def test_plan_shards_packs_greedily_with_alignment():
    # 100-byte storages, each starting at a multiple of 64: two take 128 + 100 bytes, three 256 + 100.
    assert plan_shards([100] * 5, 228) == [[0, 1], [2, 3], [4]]
    assert plan_shards([100] * 5, 227) == [[0], [1], [2], [3], [4]]
    assert plan_shards([100] * 5, 356) == [[0, 1, 2], [3, 4]]
    assert plan_shards([1000, 10], 100) == [[0], [1]]  # a storage larger than the limit gets its own shard
    assert plan_shards([], 10) == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_plan_shards_rejects_bad_limits(bad):
    with pytest.raises(ValueError, match="max_shard_size"):
        plan_shards([1], bad)


def test_parse_size_units():
    assert parse_size(123) == 123
    assert parse_size("5GB") == 5 * 10 ** 9
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("500 MB") == 500 * 10 ** 6
    with pytest.raises(ValueError):
        parse_size("lots")


def test_shard_name_is_plain():
    assert shard_name("/x/model.pt2f", 1, 4) == "model-00001-of-00004.pt2shard"


def test_sharded_save_reads_back_every_storage(tmp_path):
    p = tmp_path / "model.pt2f"
    _write(p)
    names = sorted(os.listdir(tmp_path))
    assert names == ["model-00001-of-00003.pt2shard", "model-00002-of-00003.pt2shard",
                     "model-00003-of-00003.pt2shard", "model.pt2f"]  # no temp files left behind
    with _api.read(p, verify_data=True) as f:
        assert f.package.required_features & FEATURE_SHARD_FILES
        assert [bytes(f.storage_view(i)) for i in range(5)] == _payloads(5)
        assert len(f.header.sections) == 1  # the main file holds the program only


def test_main_and_shards_share_one_package_id(tmp_path):
    p = tmp_path / "model.pt2f"
    _write(p)
    main = unpack_header(p.read_bytes())
    assert main.package_id != bytes(16)
    with _api.read(p) as f:
        for s in f.package.shard_files:
            assert bytes(s.package_id) == main.package_id
            assert unpack_header((tmp_path / s.name).read_bytes(), shard=True).package_id == main.package_id


def test_sharded_save_is_deterministic_and_content_addressed(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d in (a, b, c):
        d.mkdir()
    _write(a / "m.pt2f")
    _write(b / "m.pt2f")
    _write(c / "m.pt2f", seed=1)
    for name in os.listdir(a):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert unpack_header((a / "m.pt2f").read_bytes()).package_id != unpack_header(
        (c / "m.pt2f").read_bytes()).package_id


def test_without_checksums_the_id_is_random(tmp_path):
    _write(tmp_path / "a.pt2f", data_checksums=False)
    _write(tmp_path / "b.pt2f", data_checksums=False)
    ids = {unpack_header((tmp_path / n).read_bytes()).package_id for n in ("a.pt2f", "b.pt2f")}
    assert len(ids) == 2 and bytes(16) not in ids


def test_stale_shard_with_same_name_and_size_is_refused(tmp_path):
    """A shard from another save (other values, so same size) copied over ours: StaleShardError, not wrong data."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    _write(ours / "m.pt2f")
    _write(theirs / "m.pt2f", seed=3)
    name = "m-00002-of-00003.pt2shard"
    assert (ours / name).stat().st_size == (theirs / name).stat().st_size
    shutil.copyfile(theirs / name, ours / name)
    with _api.read(ours / "m.pt2f") as f:
        assert bytes(f.storage_view(0)) == _payloads(5)[0]  # shard 1 is still ours
        with pytest.raises(StaleShardError, match="another save") as e:
            f.storage_view(2)
        assert e.value.file.endswith(name) and e.value.path == "shard_files[1].package_id"
    with pytest.raises(StaleShardError):
        _api.validate(ours / "m.pt2f")


def test_shard_files_entry_with_other_id_than_header_is_refused(tmp_path):
    p = tmp_path / "m.pt2f"
    pkg = _package(2)
    _api.write_package(p, pkg, _payloads(2), fsync=False, max_shard_size=100)
    data = bytearray(p.read_bytes())
    main_id = unpack_header(bytes(data)).package_id
    # Same program, the header's id flipped (checksum recomputed): the ShardFile entries no longer match it.
    from pt2format._container.header import Header, pack_header
    h = unpack_header(bytes(data))
    other = bytes(b ^ 0xFF for b in main_id)
    head = pack_header(Header(h.format_major, h.format_minor, h.required_features, h.file_length, h.sections,
                              package_id=other))
    data[:len(head)] = head
    p.write_bytes(bytes(data))
    with pytest.raises(StaleShardError, match="another save"):
        _api.read(p)


def test_shard_package_id_must_be_16_bytes(tmp_path):
    p = tmp_path / "m.pt2f"
    _write(p)
    with _api.read(p) as f:
        pkg = f.package
    pkg.shard_files[0].package_id = [1, 2, 3]
    from pt2format._validate import validate_package
    with pytest.raises(ValidationError, match="16 bytes"):
        validate_package(pkg)


def test_damaged_shard_fails_verify_data(tmp_path):
    p = tmp_path / "m.pt2f"
    _write(p)
    shard = tmp_path / "m-00003-of-00003.pt2shard"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="storage checksum mismatch") as e:
        _api.validate(p)
    assert e.value.file.endswith("m-00003-of-00003.pt2shard")


def test_missing_shard_is_a_segment_error(tmp_path):
    p = tmp_path / "m.pt2f"
    _write(p)
    os.unlink(tmp_path / "m-00001-of-00003.pt2shard")
    with pytest.raises(SegmentError, match="missing"):
        _api.validate(p)


def test_convert_gathers_shards_into_one_file(tmp_path):
    p = tmp_path / "m.pt2f"
    _write(p)
    out = tmp_path / "out" / "one.pt2f"
    out.parent.mkdir()
    _api.convert(p, out, "json", fsync=False)
    assert os.listdir(out.parent) == ["one.pt2f"]
    with _api.read(out, verify_data=True) as f:
        assert not f.package.shard_files
        assert [bytes(f.storage_view(i)) for i in range(5)] == _payloads(5)


def test_unsharded_file_has_an_id_too(tmp_path):
    p = tmp_path / "m.pt2f"
    _api.write_package(p, _package(1), _payloads(1), fsync=False)
    assert unpack_header(p.read_bytes()).package_id != bytes(16)
    assert struct.unpack_from("<I", p.read_bytes(), 60)[0] == 0  # the 4 bytes after the id stay reserved


def test_inspect_shows_identity_and_shards(tmp_path, capsys):
    from pt2format import cli

    p = tmp_path / "model.pt2f"
    _write(p)
    assert cli.main(["inspect", str(p)]) in (0, None)
    out = capsys.readouterr().out
    assert f"package id: {unpack_header(p.read_bytes()).package_id.hex()}" in out
    assert "model-00001-of-00003.pt2shard" in out
