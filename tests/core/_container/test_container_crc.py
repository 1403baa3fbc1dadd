"""CRC helpers agree with zlib.crc32 over the concatenated bytes."""

import os
import zlib

import pytest

from pt2format._container import crc as crc_mod
from pt2format._container.crc import crc32, crc32_combine, crc32_zeros


@pytest.mark.parametrize("a_len, b_len", [(0, 0), (0, 5), (5, 0), (1, 1), (63, 64), (64, 65), (1000, 4097)])
def test_combine_matches_concatenation(a_len, b_len):
    a, b = os.urandom(a_len), os.urandom(b_len)
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


@pytest.mark.parametrize("n", [0, 1, 7, 63, 64, 65, 4096, 100_000])
def test_zeros_match_zlib(n):
    assert crc32_zeros(n) == zlib.crc32(bytes(n))
    assert crc32_zeros(n, 0xDEADBEEF) == zlib.crc32(bytes(n), 0xDEADBEEF)


def test_chunked_crc_matches_one_call(monkeypatch):
    monkeypatch.setattr(crc_mod, "_CHUNK", 1000)
    data = os.urandom(12_345)
    assert crc32(memoryview(data)) == zlib.crc32(data)
    assert crc32(memoryview(bytearray(data)).cast("B", [12_345])) == zlib.crc32(data)


def test_crc_of_typed_view():
    import array

    arr = array.array("f", [1.0, 2.0, 3.0])
    assert crc32(memoryview(arr)) == zlib.crc32(arr.tobytes())


def test_negative_length_rejected():
    with pytest.raises(ValueError):
        crc32_combine(0, 0, -1)
