"""Writer: layout around the alignment, exact placement of bytes, determinism, atomicity, streaming."""

import os
import stat
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st


from pt2f_samples import float_payloads, tiny_package  # noqa: E402

from pt2format import _api  # noqa: E402
from pt2format._container import writer  # noqa: E402
from pt2format._container.writer import layout_payloads  # noqa: E402
from pt2format.errors import ValidationError  # noqa: E402


def sections_of(data: bytes):
    """(kind, offset, length) per section, parsed straight from the SPEC byte table."""
    count = struct.unpack_from("<H", data, 10)[0]
    return [struct.unpack_from("<HHIQQ", data, 64 + 48 * i)[::1] for i in range(count)]


def test_layout_around_alignment():
    lay = layout_payloads([63, 64, 65, 0, 1])
    assert lay.offsets == (0, 64, 128, 256, 256)
    assert lay.length == 257


def test_layout_empty():
    assert layout_payloads([]).length == 0
    assert layout_payloads([0, 0]).offsets == (0, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=20))
def test_segments_never_overlap(sizes):
    lay = layout_payloads(sizes)
    end = 0
    for off, size in zip(lay.offsets, lay.sizes):
        assert off % 64 == 0
        assert off >= end and off - end < 64  # no overlap, no hole beyond padding
        end = off + size
    assert lay.length == end


@pytest.mark.parametrize("sizes", [(15,), (16,), (17,), (16, 16, 1), (0,), (0, 3, 0)])
def test_payload_bytes_land_at_their_offsets(tmp_path, sizes):
    path = tmp_path / "m.pt2f"
    pkg = tiny_package(sizes)
    payloads = float_payloads(sizes)  # 4 bytes per element: 60/64/68-byte payloads
    _api.write_package(path, pkg, payloads, encoding="msgpack")
    data = path.read_bytes()
    secs = sections_of(data)
    assert len(secs) == 2 and secs[1][0] == 2
    _, _, _, data_off, data_len = secs[1]
    assert data_off % 64 == 0 and data_off + data_len == len(data)
    expected = bytearray()
    for p, s in zip(payloads, pkg.storages):
        assert s.offset == (len(expected) + 63) // 64 * 64
        expected += bytes(s.offset - len(expected)) + p
        assert s.size == len(p) and s.segment == 0 and s.checksum_kind == 1
    assert data[data_off:] == bytes(expected)  # payloads in order, zero padding between
    prog_end = secs[0][3] + secs[0][4]
    assert data[prog_end:data_off] == bytes(data_off - prog_end)


def test_zero_storages_have_no_data_section(tmp_path):
    pkg = tiny_package(())
    _api.write_package(tmp_path / "m.pt2f", pkg, [])
    data = (tmp_path / "m.pt2f").read_bytes()
    assert struct.unpack_from("<H", data, 10)[0] == 1
    assert pkg.segments == []


def test_fields_overwritten(tmp_path):
    pkg = tiny_package((2, 3))
    for s in pkg.storages:
        s.segment, s.offset, s.size, s.checksum = 7, 3, 999, 1
    pkg.segments = [_api.m.Segment(file=2, section=5)]
    _api.write_package(tmp_path / "m.pt2f", pkg, float_payloads((2, 3)), data_checksums=False)
    assert [(s.segment, s.offset, s.size, s.checksum_kind, s.checksum) for s in pkg.storages] == [
        (0, 0, 8, 0, 0), (0, 64, 12, 0, 0)]
    assert [(g.file, g.section) for g in pkg.segments] == [(0, 1)]
    data = (tmp_path / "m.pt2f").read_bytes()
    assert struct.unpack_from("<I", data, 64 + 48 + 24)[0] == 0  # DATA section without checksum


def test_deterministic_bytes(tmp_path):
    for name in ("a", "b"):
        _api.write_package(tmp_path / name, tiny_package((5, 7)), float_payloads((5, 7)), fsync=False)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_payload_size_mismatch_rejected(tmp_path):
    with pytest.raises(ValueError, match="payloads"):
        _api.write_package(tmp_path / "m", tiny_package((2,)), [])


# -- atomicity ---------------------------------------------------------------

def _existing(tmp_path):
    path = tmp_path / "m.pt2f"
    path.write_bytes(b"previous contents")
    return path


def _assert_untouched(path):
    assert path.read_bytes() == b"previous contents"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left


def test_failure_mid_write_keeps_previous_file(tmp_path, monkeypatch):
    path = _existing(tmp_path)
    real_write = os.write
    calls = []

    def failing_write(fd, data):
        calls.append(len(data))
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(writer.os, "write", failing_write)
    with pytest.raises(OSError, match="No space"):
        _api.write_package(path, tiny_package((4, 4)), float_payloads((4, 4)))
    _assert_untouched(path)


def test_failing_encode_keeps_previous_file(tmp_path, monkeypatch):
    path = _existing(tmp_path)

    def boom(package, encoding):
        raise RuntimeError("encoder crashed")

    monkeypatch.setattr(_api._codecs, "encode", boom)
    with pytest.raises(RuntimeError):
        _api.write_package(path, tiny_package((4,)), float_payloads((4,)))
    _assert_untouched(path)


def test_non_buffer_payload_keeps_previous_file(tmp_path):
    path = _existing(tmp_path)
    with pytest.raises(TypeError):
        _api.write_package(path, tiny_package((4,)), [object()])
    _assert_untouched(path)


def test_non_contiguous_payload_rejected(tmp_path):
    path = _existing(tmp_path)
    arr = np.arange(16, dtype=np.float32).reshape(4, 4)[:, 1]
    with pytest.raises((TypeError, ValueError)):
        _api.write_package(path, tiny_package((4,)), [arr])
    _assert_untouched(path)


def test_invalid_package_is_not_written(tmp_path):
    path = _existing(tmp_path)
    pkg = tiny_package((4,))
    pkg.tensors[0].sizes = [5]  # 20 bytes of a 16-byte storage
    with pytest.raises(ValidationError, match="past the end of its storage"):
        _api.write_package(path, pkg, float_payloads((4,)))
    _assert_untouched(path)


def test_interrupt_during_write_removes_temp(tmp_path, monkeypatch):
    path = _existing(tmp_path)

    def interrupted(fd, data):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer.os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _api.write_package(path, tiny_package((4,)), float_payloads((4,)))
    _assert_untouched(path)


def test_fsync_file_and_directory(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(writer.os, "fsync", lambda fd: (synced.append(stat.S_IFMT(os.fstat(fd).st_mode)), real(fd)))
    _api.write_package(tmp_path / "m", tiny_package((4,)), float_payloads((4,)))
    assert synced == [stat.S_IFREG, stat.S_IFDIR]
    synced.clear()
    _api.write_package(tmp_path / "m", tiny_package((4,)), float_payloads((4,)), fsync=False)
    assert synced == []
    writer.wait_for_released()  # the replaced file's second link goes away in the background
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # renamed even without fsync


def test_new_file_mode_follows_umask(tmp_path):
    old = os.umask(0o027)
    try:
        _api.write_package(tmp_path / "m", tiny_package((4,)), float_payloads((4,)))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "m").st_mode) == 0o640


# -- streaming -----------------------------------------------------------------

def test_payloads_are_streamed_not_copied(tmp_path, monkeypatch):
    arrays = [np.arange(1000, dtype=np.float32), np.arange(17, dtype=np.float32)]
    seen = []
    real = os.write

    def spy(fd, data):
        if isinstance(data, memoryview):
            seen.append(data.obj)
        return real(fd, data)

    monkeypatch.setattr(writer.os, "write", spy)
    pkg = tiny_package((1000, 17))
    _api.write_package(tmp_path / "m", pkg, arrays, fsync=False)
    for arr in arrays:  # each payload reached os.write as a view of the caller's own buffer
        assert any(obj is arr for obj in seen)


def test_partial_writes_are_completed(tmp_path, monkeypatch):
    real = os.write
    monkeypatch.setattr(writer, "_WRITE_CHUNK", 7)
    monkeypatch.setattr(writer.os, "write", lambda fd, data: real(fd, bytes(data)[:3]))
    _api.write_package(tmp_path / "a", tiny_package((9, 2)), float_payloads((9, 2)), fsync=False)
    monkeypatch.undo()
    _api.write_package(tmp_path / "b", tiny_package((9, 2)), float_payloads((9, 2)), fsync=False)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


# -- replacing a file: the old one is released off the critical path ----------

@pytest.fixture(params=["swap", "link"])
def replace_mode(request, monkeypatch):
    """Both ways a save puts its file in place: the name exchange, and the extra link + os.replace."""
    if request.param == "link":
        monkeypatch.setattr(writer.exchange, "swap", lambda a, b: False)  # a system without renameat2
    return request.param


def test_replaced_file_is_released_in_background(tmp_path, monkeypatch, replace_mode):
    path = tmp_path / "m"
    _api.write_package(path, tiny_package((4,)), float_payloads((4,)), fsync=False)
    old_inode = os.stat(path).st_ino
    reader = open(path, "rb")  # an open reader keeps the old bytes, as with any rename
    unlinked = []
    real_unlink = os.unlink
    monkeypatch.setattr(writer.os, "unlink", lambda p: (unlinked.append(os.path.basename(p)), real_unlink(p)))
    _api.write_package(path, tiny_package((6,)), float_payloads((6,)), fsync=False)
    writer.wait_for_released()
    assert os.stat(path).st_ino != old_inode
    assert len(unlinked) == 1 and unlinked[0].startswith(".m.")
    assert unlinked[0].endswith(".tmp" if replace_mode == "swap" else ".old")
    assert os.fstat(reader.fileno()).st_nlink == 0  # the old file has no name left
    assert os.fstat(reader.fileno()).st_ino == old_inode
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    with _api.read(path, verify_data=True) as f:  # the new file, whole
        assert f.package.tensors[0].sizes == [6]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_linux_swaps_names_instead_of_renaming_over(tmp_path, monkeypatch):
    """On Linux the old file is exchanged, not renamed over (ext4 would start the new file's writeback)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    if not writer.exchange.swap(str(a), str(b)):
        pytest.skip("this filesystem refuses RENAME_EXCHANGE")
    assert (a.read_bytes(), b.read_bytes()) == (b"b", b"a")
    a.unlink()
    b.unlink()
    path = _existing(tmp_path)
    replaced = []
    real = os.replace
    monkeypatch.setattr(writer.os, "replace", lambda a, b: (replaced.append(b), real(a, b))[1])
    _api.write_package(path, tiny_package((4,)), float_payloads((4,)), fsync=False)
    writer.wait_for_released()
    assert replaced == []
    with _api.read(path, verify_data=True) as f:
        assert f.package.tensors[0].sizes == [4]
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_no_existing_file_is_renamed_into_place(tmp_path, replace_mode):
    path = tmp_path / "new.pt2f"
    _api.write_package(path, tiny_package((4,)), float_payloads((4,)), fsync=False)
    writer.wait_for_released()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.pt2f"]
    with _api.read(path, verify_data=True):
        pass


def test_failed_rename_keeps_old_file_and_drops_extra_link(tmp_path, monkeypatch, replace_mode):
    path = _existing(tmp_path)

    def refuse(*args):
        raise OSError("rename refused")

    monkeypatch.setattr(writer.os, "replace", refuse)
    monkeypatch.setattr(writer.exchange, "swap", refuse)
    with pytest.raises(OSError, match="rename refused"):
        _api.write_package(path, tiny_package((4,)), float_payloads((4,)), fsync=False)
    _assert_untouched(path)
    assert os.stat(path).st_nlink == 1


def test_unsupported_swap_falls_back_to_replace(tmp_path, monkeypatch):
    """renameat2 failing with EINVAL (a filesystem without RENAME_EXCHANGE) means: os.replace."""
    import errno

    path = _existing(tmp_path)
    monkeypatch.setattr(writer.exchange, "_function", lambda: (
        lambda *a: -1, type("C", (), {"get_errno": staticmethod(lambda: errno.EINVAL)})))
    replaced = []
    real = os.replace
    monkeypatch.setattr(writer.os, "replace", lambda a, b: (replaced.append(b), real(a, b))[1])
    _api.write_package(path, tiny_package((4,)), float_payloads((4,)), fsync=False)
    writer.wait_for_released()
    assert replaced == [str(path)]
    assert path.read_bytes() != b"previous contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_directory_raced_into_place_is_not_swapped(tmp_path, monkeypatch):
    """A directory put at the path between the check and the swap is swapped back, and the save fails."""
    path = tmp_path / "m.pt2f"
    path.write_bytes(b"previous contents")
    real_swap = writer.exchange.swap
    raced = []

    def racing_swap(a, b):
        if not raced:
            raced.append(1)
            os.unlink(b)
            os.mkdir(b)
        return real_swap(a, b)

    monkeypatch.setattr(writer.exchange, "swap", racing_swap)
    with pytest.raises(OSError):
        _api.write_package(path, tiny_package((4,)), float_payloads((4,)), fsync=False)
    writer.wait_for_released()
    assert path.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_symlink_destination_is_not_linked(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"x")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert writer._keep_old_link(str(link), str(tmp_path / "extra")) is None
    assert not (tmp_path / "extra").exists()
