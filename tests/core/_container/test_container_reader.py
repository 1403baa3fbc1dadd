"""Reader: mmap-backed zero-copy views, read-only vs copy-on-write, close semantics, program checksum."""

import gc
import mmap
import sys
import weakref
from pathlib import Path

import pytest


from pt2f_samples import float_payloads, tiny_package  # noqa: E402

from pt2format import _api  # noqa: E402
from pt2format._container.reader import ContainerFile  # noqa: E402
from pt2format.errors import ChecksumError, HeaderError, LimitError  # noqa: E402


@pytest.fixture()
def sample(tmp_path):
    path = tmp_path / "m.pt2f"
    _api.write_package(path, tiny_package((3, 5)), float_payloads((3, 5)), fsync=False)
    return path


def test_empty_file(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    with pytest.raises(HeaderError, match="not a pt2format file: bad magic .*got an empty file"):
        ContainerFile(tmp_path / "e")


def test_views_point_into_the_map(sample):
    with ContainerFile(sample) as c:
        view = c.section_view(1)
        assert isinstance(view.obj, mmap.mmap)  # a slice of the mapping, not a copy
        assert view.readonly
        raw = sample.read_bytes()
        s = c.header.sections[1]
        assert bytes(view) == raw[s.offset:s.end]
        del view


def test_copy_on_write_views_are_private(sample):
    before = sample.read_bytes()
    with ContainerFile(sample, copy_on_write=True) as c:
        view = c.section_view(1)
        assert not view.readonly
        view[0] ^= 0xFF
        assert c.section_view(1)[0] == view[0]
        del view
    assert sample.read_bytes() == before


def test_close_without_views_unmaps_now(sample):
    c = ContainerFile(sample)
    mm = c._mm
    c.close()
    assert mm.closed and c.closed


def test_close_with_live_view_defers_unmap(sample):
    c = ContainerFile(sample)
    ref = weakref.ref(c._mm)
    view = c.section_view(1)
    expected = bytes(view)
    c.close()
    assert bytes(view) == expected  # still valid
    with pytest.raises(ValueError, match="closed"):
        c.section_view(1)
    assert ref() is not None
    del view
    gc.collect()
    assert ref() is None  # the last view took the map with it


def test_program_checksum_verified_on_open(sample):
    data = bytearray(sample.read_bytes())
    with ContainerFile(sample) as c:
        at = c.header.sections[0].offset + 3
    data[at] ^= 0x40
    sample.write_bytes(data)
    with pytest.raises(ChecksumError) as e:
        ContainerFile(sample)
    assert e.value.section == "0 (PROGRAM)"


def test_data_checksum_only_on_request(sample):
    data = bytearray(sample.read_bytes())
    data[-1] ^= 1
    sample.write_bytes(data)
    with ContainerFile(sample) as c:  # opens fine: data is not read
        with pytest.raises(ChecksumError, match="section checksum"):
            c.verify_section(1)


def test_program_size_limit(sample):
    with pytest.raises(LimitError):
        ContainerFile(sample, max_program_bytes=10)


def test_data_section_lengths(sample):
    with ContainerFile(sample) as c:
        assert c.data_section_lengths() == {1: 64 + 20}
