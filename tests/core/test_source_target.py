"""Paths, bytes and file objects in and out (pt2format._source, pt2format._target), torch-free."""

from __future__ import annotations

import io
import os
import stat

import pytest

from pt2f_samples import float_payloads, tiny_package

from pt2format import _api
from pt2format._container.writer import wait_for_released
from pt2format.errors import HeaderError, LimitError

SIZES = (3, 16, 17)


def _write(target, **kw):
    pkg = tiny_package(SIZES)
    _api.write_package(target, pkg, float_payloads(SIZES), **kw)
    return pkg  # with the storage layout write_package filled in


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
def test_stream_gets_the_bytes_a_file_gets(tmp_path, encoding):
    _write(tmp_path / "m.pt2f", encoding=encoding)
    buf = io.BytesIO(b"prefix")
    buf.seek(0, io.SEEK_END)
    _write(buf, encoding=encoding)
    assert buf.getvalue() == b"prefix" + (tmp_path / "m.pt2f").read_bytes()


def test_real_file_object_gets_the_same_bytes(tmp_path):
    _write(tmp_path / "a.pt2f")
    with open(tmp_path / "b.pt2f", "wb") as f:
        _write(f)
    assert (tmp_path / "a.pt2f").read_bytes() == (tmp_path / "b.pt2f").read_bytes()


@pytest.mark.parametrize("kind", ["path", "pathlib", "bytes", "bytearray", "memoryview", "bytesio", "file"])
def test_read_from_every_source(tmp_path, kind):
    path = tmp_path / "m.pt2f"
    written = _write(path)
    data = path.read_bytes()
    src = {"path": str(path), "pathlib": path, "bytes": data, "bytearray": bytearray(data),
           "memoryview": memoryview(data), "bytesio": io.BytesIO(data)}.get(kind)
    handle = open(path, "rb") if kind == "file" else None
    try:
        with _api.read(handle or src, verify_data=True) as f:
            assert f.package == written
            assert [bytes(f.storage_view(i)) for i in range(3)] == float_payloads(SIZES)
            if kind == "file":
                assert f.path == str(path)  # a named file object keeps its name in errors
    finally:
        if handle:
            handle.close()


def test_copy_on_write_bytes_gives_writable_private_views(tmp_path):
    path = tmp_path / "m.pt2f"
    _write(path)
    data = path.read_bytes()
    with _api.read(data, copy_on_write=True) as f:
        view = f.storage_view(0)
        assert not view.readonly
        view[0] ^= 0xFF
    assert data == path.read_bytes()  # the caller's bytes are untouched


def test_read_stream_from_its_current_position(tmp_path):
    path = tmp_path / "m.pt2f"
    _write(path)
    buf = io.BytesIO(b"junk" + path.read_bytes())
    buf.seek(4)
    with _api.read(buf) as f:
        assert f.path == "<stream>"


def test_text_stream_and_wrong_types_are_refused(tmp_path):
    with pytest.raises(TypeError, match="text mode"):
        _api.read(io.StringIO("x"))
    with pytest.raises(TypeError, match="binary file object"):
        _api.read(12)


def test_stream_bound(tmp_path):
    from pt2format._source import resolve_source

    with pytest.raises(LimitError):
        resolve_source(io.BytesIO(bytes(100)), max_bytes=10)


def test_bad_bytes_name_the_source():
    with pytest.raises(HeaderError, match="<bytes>"):
        _api.read(b"not a pt2f file at all, just some bytes")


def test_symlink_is_written_through(tmp_path):
    real = tmp_path / "blobs" / "abc123"
    real.parent.mkdir()
    _write(real)
    link = tmp_path / "model.pt2f"
    link.symlink_to(os.path.relpath(real, tmp_path))
    old = real.read_bytes()
    new = tiny_package((5,))
    _api.write_package(link, new, float_payloads((5,)))
    assert link.is_symlink()
    assert real.read_bytes() != old
    with _api.read(link) as f:
        assert f.package == new
    wait_for_released()  # the replaced file's blocks are freed in the background
    assert sorted(p.name for p in real.parent.iterdir()) == ["abc123"]  # no temp file left behind


def test_mode_is_kept(tmp_path):
    path = tmp_path / "m.pt2f"
    _write(path)
    os.chmod(path, 0o640)
    _write(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_error_names_the_users_path_not_the_temp_file(tmp_path):
    path = tmp_path / "missing_dir" / "m.pt2f"
    with pytest.raises(FileNotFoundError) as info:
        _write(path)
    assert info.value.filename == str(path)
    assert ".tmp" not in str(info.value)


def test_progress_follows_the_write(tmp_path):
    seen = []
    _write(tmp_path / "m.pt2f", progress_callback=seen.append)
    size = (tmp_path / "m.pt2f").stat().st_size
    assert seen == sorted(seen) and len(seen) > 3
    assert seen[-1] == size
    streamed = []
    _write(io.BytesIO(), progress_callback=streamed.append)
    assert streamed[-1] == size


def test_shards_need_a_path(tmp_path):
    """A file read from bytes has no directory to find its shard files in: a clear SegmentError, no guessing."""
    import zlib

    from pt2f_samples import write_raw, write_shard

    from pt2format._generated import model as m
    from pt2format.errors import SegmentError

    payloads = float_payloads((4,))
    size = write_shard(tmp_path / "m.shard1", payloads)
    pkg = tiny_package((4,))
    pkg.required_features = 1
    pkg.shard_files = [m.ShardFile("m.shard1", size)]
    pkg.segments = [m.Segment(file=1, section=0)]
    pkg.storages = [m.Storage(0, 0, 16, 1, zlib.crc32(payloads[0]))]
    write_raw(tmp_path / "m.pt2f", pkg, [])
    with _api.read(tmp_path / "m.pt2f") as f:
        assert bytes(f.storage_view(0)) == payloads[0]
    with _api.read((tmp_path / "m.pt2f").read_bytes()) as f:
        with pytest.raises(SegmentError, match="read it from its path") as info:
            f.storage_view(0)
        assert info.value.path == "shard_files[0]"
