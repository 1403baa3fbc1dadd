"""Dropping a replaced file's page cache before a save: done where harmless, measured by the kernel's own residency."""

import ctypes
import mmap
import os
import sys

import pytest

from pt2format._container import page_cache, writer

linux = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "posix_fadvise"),
                           reason="posix_fadvise and /proc are Linux's")
SIZE = 4 << 20


def _resident_fraction(path) -> float:
    """Share of the file's pages in the page cache, from mincore(2) on a fresh mapping (no page is touched)."""
    with open(path, "rb") as f:
        return _resident_fraction_of(f.fileno())


def _resident_fraction_of(fd: int) -> float:
    """_resident_fraction of an open file (one already unlinked, say)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    mm = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)  # writable, so ctypes can take its address
    pages = (len(mm) + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    start = ctypes.c_char.from_buffer(mm)
    try:
        rc = libc.mincore(ctypes.addressof(start), len(mm), vec)
    finally:
        del start
        mm.close()
    if rc != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return sum(b & 1 for b in vec) / pages


def _cached_clean_file(path, size=SIZE):
    data = os.urandom(1 << 16) * (size >> 16)
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())  # clean pages: the advice drops only those
    with open(path, "rb") as f:
        assert f.read() == data  # every page in the cache
    return data


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(page_cache, "MIN_BYTES", 1 << 20)
    monkeypatch.setattr(page_cache, "_system_dirty_bytes", lambda: 0)


@linux
def test_clean_cache_is_dropped_and_file_unchanged(tmp_path, small_threshold):
    path = tmp_path / "old.pt2f"
    data = _cached_clean_file(path)
    assert _resident_fraction(path) > 0.9
    assert page_cache.release_cache_of_replaced(str(path)) is True
    assert _resident_fraction(path) < 0.1
    assert path.read_bytes() == data


@linux
def test_mapped_file_is_left_alone(tmp_path, small_threshold):
    path = tmp_path / "weights.pt2f"
    _cached_clean_file(path)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)  # as the loader maps weights
    try:
        assert page_cache.release_cache_of_replaced(str(path)) is False
        assert _resident_fraction(path) > 0.9
    finally:
        mm.close()


@linux
def test_busy_writeback_small_files_and_non_files_are_skipped(tmp_path, monkeypatch, small_threshold):
    big = tmp_path / "big"
    _cached_clean_file(big)
    monkeypatch.setattr(page_cache, "_system_dirty_bytes", lambda: page_cache.MAX_DIRTY_BYTES + 1)
    assert page_cache.release_cache_of_replaced(str(big)) is False
    assert _resident_fraction(big) > 0.9
    monkeypatch.setattr(page_cache, "_system_dirty_bytes", lambda: None)  # no /proc/meminfo
    assert page_cache.release_cache_of_replaced(str(big)) is False
    monkeypatch.setattr(page_cache, "_system_dirty_bytes", lambda: 0)

    small = tmp_path / "small"
    small.write_bytes(b"x" * 1000)
    link = tmp_path / "link"
    link.symlink_to(big)
    assert page_cache.release_cache_of_replaced(str(small)) is False
    assert page_cache.release_cache_of_replaced(str(link)) is False  # the save replaces the link, not its target
    assert page_cache.release_cache_of_replaced(str(tmp_path)) is False
    assert page_cache.release_cache_of_replaced(str(tmp_path / "missing")) is False
    assert _resident_fraction(big) > 0.9


@linux
def test_system_dirty_bytes_reads_meminfo():
    expected = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(("Dirty:", "Writeback:")):
                expected += int(line.split()[1]) * 1024
    got = page_cache._system_dirty_bytes()
    assert isinstance(got, int) and got >= 0
    # Both reads race the kernel's flusher; they agree within what can turn over between them.
    assert abs(got - expected) < (256 << 20)


@linux
def test_save_over_a_file_drops_its_cache_first_and_keeps_it_on_failure(tmp_path, monkeypatch, small_threshold):
    path = tmp_path / "model.pt2f"
    old = _cached_clean_file(path)
    seen = []

    def fill(fd):
        seen.append(_resident_fraction(path))  # the old file, as the new bytes start to go out
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        writer.atomic_write(str(path), fill, fsync=False)
    assert seen and seen[0] < 0.1
    assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["model.pt2f"]


@linux
def test_saving_over_the_file_a_loaded_program_maps(tmp_path, small_threshold, monkeypatch):
    """Load a program, save it over its own file: the weights mapped from that file keep their cache."""
    import gc

    import torch

    import pt2format

    given = []
    real = page_cache.release_cache_of_replaced
    monkeypatch.setattr(writer, "release_cache_of_replaced", lambda p: given.append(real(p)) or given[-1])
    module = torch.nn.Linear(512, 512)
    x = torch.randn(2, 512)
    ep = torch.export.export(module, (x,))
    path = tmp_path / "m.pt2f"
    pt2format.save(ep, path, fsync=False)
    loaded = pt2format.load(path)
    pt2format.save(loaded, path, fsync=False)
    assert given == [False, False]  # no old file; then the old file is where `loaded` maps its weights from
    again = pt2format.load(path)
    assert torch.equal(again.module()(x), module(x))
    del loaded, again
    gc.collect()
    pt2format.save(ep, path, fsync=False)
    assert given[-1] is True  # nothing maps it any more
    assert torch.equal(pt2format.load(path).module()(x), module(x))


@linux
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no tmpfs at /dev/shm")
def test_tmpfs_file_loses_nothing(small_threshold):
    """On tmpfs the cached pages are the file itself: the advice must leave every byte."""
    import tempfile

    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        path = os.path.join(d, "old.pt2f")
        data = os.urandom(1 << 16) * (SIZE >> 16)
        with open(path, "wb") as f:
            f.write(data)
        assert page_cache.release_cache_of_replaced(path) is True  # the advice was given
        with open(path, "rb") as f:
            assert f.read() == data


@linux
def test_dcp_save_over_a_save_drops_the_old_shards_cache_and_keeps_its_bytes(tmp_path, small_threshold):
    """A multi-rank save replacing a checkpoint: the old shard's cache goes before the ranks write, the
    old file keeps its bytes until it is unlinked, nothing is left behind, the new values are read."""
    import torch
    import torch.distributed.checkpoint as dcp

    import pt2format
    import pt2format.dcp

    path = tmp_path / "w.pt2f"
    old_state = {f"w{i}": torch.randn(256, 1024) for i in range(4)}  # 4 MiB in one shard file
    new_state = {k: v + 1 for k, v in old_state.items()}
    dcp.save(old_state, storage_writer=pt2format.dcp.StorageWriter(str(path)), no_dist=True)
    writer.wait_for_released()
    (shard,) = [n for n in os.listdir(tmp_path) if n != "w.pt2f"]
    os.sync()  # clean pages: the advice drops only those
    held = os.open(tmp_path / shard, os.O_RDONLY)  # keeps the old shard's inode after it is replaced
    try:
        old_bytes = os.pread(held, os.fstat(held).st_size, 0)  # every page in the cache
        assert _resident_fraction_of(held) > 0.9
        dcp.save(new_state, storage_writer=pt2format.dcp.StorageWriter(str(path)), no_dist=True)
        assert _resident_fraction_of(held) < 0.1
        assert os.pread(held, len(old_bytes) + 1, 0) == old_bytes  # the old file is intact, only out of cache
    finally:
        os.close(held)
    writer.wait_for_released()
    assert sorted(os.listdir(tmp_path)) == sorted(["w.pt2f", shard])
    with pt2format.open(str(path)) as f:
        for k in old_state:
            assert torch.equal(f.get_tensor(k), new_state[k])
    back = {k: torch.zeros_like(v) for k, v in new_state.items()}
    dcp.load(back, storage_reader=pt2format.dcp.StorageReader(str(path)), no_dist=True)
    for k, v in new_state.items():
        assert torch.equal(back[k], v)
