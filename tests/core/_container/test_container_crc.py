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


# -- the fast CRC (ISA-L) gives zlib's values -----------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


def test_fast_crc_is_used_when_installed():
    pytest.importorskip("isal")
    from isal import isal_zlib

    assert crc_mod.crc32_raw is isal_zlib.crc32


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=5000), start=st.integers(0, 2**32 - 1))
def test_fast_crc_equals_zlib_on_drawn_inputs(data, start):
    assert crc_mod.crc32_raw(data, start) == zlib.crc32(data, start)
    assert crc32(memoryview(data), start) == zlib.crc32(data, start)


@settings(max_examples=100, deadline=None)
@given(a=st.binary(max_size=3000), b=st.binary(max_size=3000), pad=st.integers(0, 5000))
def test_fast_crc_combines_like_zlib(a, b, pad):
    """Payload CRCs from the fast CRC, combined over padding, equal zlib's CRC of the whole section."""
    section = crc32_combine(crc32_zeros(pad, crc32(a)), crc32(b), len(b))
    assert section == zlib.crc32(a + bytes(pad) + b)


def test_fast_crc_on_large_unaligned_views(monkeypatch):
    monkeypatch.setattr(crc_mod, "_CHUNK", 1 << 20)
    data = os.urandom((3 << 20) + 123)
    for lo, hi in ((0, len(data)), (1, len(data) - 3), (4095, (2 << 20) + 7)):
        assert crc32(memoryview(data)[lo:hi]) == zlib.crc32(data[lo:hi])


def test_zlib_fallback_without_isal():
    """With isal not importable, the module falls back to zlib.crc32 (same values)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'isal' or name.startswith('isal.'):\n"
            "            raise ModuleNotFoundError('blocked', name=name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import zlib\n"
            "from pt2format._container import crc\n"
            "assert crc.crc32_raw is zlib.crc32\n"
            "print(crc.crc32(b'123456789'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == 0xCBF43926  # the CRC-32 check value of the catalogue
