"""The one-pass save (data first, checksums computed while it is written) against the two-pass writer.

Same bytes for the same inputs, whatever the chunking; a failure at any
step leaves the previous file and no temporary file; a final encoding whose
length moves the data section falls back to the two-pass writer.
"""

import os

import pytest
from pt2f_samples import float_payloads, tiny_package

from pt2format import _api
from pt2format._container import writer

SIZES = (5, 0, 300, 7, 64, 1)


@pytest.fixture
def data_first(monkeypatch):
    """Take the one-pass path for any size, in small chunks (many steps of the pipeline)."""
    monkeypatch.setattr(_api, "DATA_FIRST_MIN_BYTES", 0)
    monkeypatch.setattr(writer, "_PASS_CHUNK", 64)
    calls = []
    real = _api._write_data_first

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(_api, "_write_data_first", spy)
    return calls


def _two_pass(tmp_path, name, sizes, encoding):
    path = tmp_path / name
    _api.write_package(path, tiny_package(sizes), float_payloads(sizes), encoding=encoding, fsync=False)
    return path.read_bytes()


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack"])
def test_same_bytes_as_two_pass(tmp_path, monkeypatch, encoding):
    want = _two_pass(tmp_path, "two", SIZES, encoding)
    monkeypatch.setattr(_api, "DATA_FIRST_MIN_BYTES", 0)
    monkeypatch.setattr(writer, "_PASS_CHUNK", 64)
    path = tmp_path / "one"
    _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES), encoding=encoding, fsync=False)
    assert path.read_bytes() == want
    with _api.read(path, verify_data=True) as f:  # every checksum holds
        assert len(f.package.storages) == len(SIZES)


def test_data_first_path_is_taken(tmp_path, data_first):
    _api.write_package(tmp_path / "m", tiny_package(SIZES), float_payloads(SIZES), fsync=False)
    assert data_first == [1]


def test_json_keeps_two_passes(tmp_path, data_first):
    """JSON prints checksums in decimal: their length depends on the value, so the offset is not known early."""
    _api.write_package(tmp_path / "m", tiny_package(SIZES), float_payloads(SIZES), encoding="json", fsync=False)
    assert data_first == []


def test_moved_data_section_falls_back_to_two_passes(tmp_path, monkeypatch):
    sizes = tuple(range(1, 60))
    want = _two_pass(tmp_path, "two", sizes, "msgpack")
    monkeypatch.setattr(_api, "DATA_FIRST_MIN_BYTES", 0)
    monkeypatch.setattr(_api, "_PROVISIONAL_CRC", 1)  # one MessagePack byte per checksum instead of five
    raised = []
    real = writer.write_container_data_first

    def spy(*a, **k):
        try:
            return real(*a, **k)
        except writer.LayoutChanged:
            raised.append(1)
            raise

    monkeypatch.setattr(_api, "write_path_data_first", lambda path, *a, **k: __import__(
        "pt2format._target", fromlist=["_at_path"])._at_path(path, lambda real_path: spy(real_path, *a, **k)))
    path = tmp_path / "one"
    _api.write_package(path, tiny_package(sizes), float_payloads(sizes), encoding="msgpack", fsync=False)
    assert raised == [1]
    assert path.read_bytes() == want
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]


def _existing(tmp_path):
    path = tmp_path / "m.pt2f"
    path.write_bytes(b"previous contents")
    return path


def _assert_untouched(path):
    writer.wait_for_released()
    assert path.read_bytes() == b"previous contents"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_failing_data_write_keeps_previous_file(tmp_path, monkeypatch, data_first):
    path = _existing(tmp_path)
    real = os.pwrite
    calls = []

    def failing(fd, data, pos):
        calls.append(pos)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(fd, data, pos)

    monkeypatch.setattr(writer.os, "pwrite", failing)
    with pytest.raises(OSError, match="No space"):
        _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES))
    _assert_untouched(path)


def test_failing_final_encode_keeps_previous_file(tmp_path, monkeypatch, data_first):
    path = _existing(tmp_path)
    real = _api._codecs.encode
    calls = []

    def second_fails(package, encoding):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("encoder crashed")
        return real(package, encoding)

    monkeypatch.setattr(_api._codecs, "encode", second_fails)
    with pytest.raises(RuntimeError, match="encoder crashed"):
        _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES))
    _assert_untouched(path)


def test_fsync_before_rename(tmp_path, monkeypatch, data_first):
    synced = []
    real = os.fsync
    monkeypatch.setattr(writer.os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    path = tmp_path / "m"
    _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES))
    assert synced and data_first == [1]


def test_failing_checksum_stops_the_writer(tmp_path, monkeypatch, data_first):
    """An error on the checksumming side stops and joins the writer thread before the temp file is closed."""
    import threading

    path = _existing(tmp_path)

    def crc_fails(view, crc=0):
        raise RuntimeError("checksum crashed")

    monkeypatch.setattr(writer, "crc32", crc_fails)
    with pytest.raises(RuntimeError, match="checksum crashed"):
        _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES))
    assert not [t for t in threading.enumerate() if t.name == "pt2format-data-writer"]
    _assert_untouched(path)


def test_failing_final_encode_stops_the_writer(tmp_path, monkeypatch, data_first):
    """When the final encode fails, the writer stops at its next chunk instead of writing the whole temp file."""
    import threading
    import time

    path = _existing(tmp_path)
    encode_failed = threading.Event()
    real_pwrite = os.pwrite
    written = []

    def pwrite(fd, data, pos):
        if not written:  # hold the first chunk until the encode has failed and the caller had time to say stop
            encode_failed.wait(timeout=10)
            time.sleep(0.5)
        written.append(len(data))
        return real_pwrite(fd, data, pos)

    monkeypatch.setattr(writer.os, "pwrite", pwrite)
    real = _api._codecs.encode
    calls = []

    def second_fails(package, encoding):
        calls.append(1)
        if len(calls) == 2:
            encode_failed.set()
            raise RuntimeError("encoder crashed")
        return real(package, encoding)

    monkeypatch.setattr(_api._codecs, "encode", second_fails)
    with pytest.raises(RuntimeError, match="encoder crashed"):
        _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES))
    assert len(written) == 1  # of the many 64-byte chunks (see the fixture), only the one in flight
    _assert_untouched(path)
