"""CRC-32 helpers: checksum a buffer in chunks and combine CRCs of adjacent byte runs.

Combining (zlib's `crc32_combine`, which Python's zlib does not expose) lets
the writer derive a DATA section's checksum from its storages' checksums, and
the reader verify storages and their section in one pass over the bytes.

The CRC-32 itself comes from ISA-L (`isal`, a dependency: several times zlib's
speed, benchmarks/bench_write_steps.py measures it, and it releases the GIL, so
two threads checksum at once) when it is importable, else from zlib; both give
the same values (tests/core/_container/test_container_crc.py draws inputs to check it).
"""

from __future__ import annotations

import zlib

try:
    from isal.isal_zlib import crc32 as _fast_crc32
except ImportError:  # a platform without an isal wheel: zlib gives the same values, slower
    _fast_crc32 = None

#: CRC-32 of a buffer (continuing `crc`): ISA-L's when installed, zlib's otherwise.
crc32_raw = _fast_crc32 if _fast_crc32 is not None else zlib.crc32

_POLY = 0xEDB88320  # reflected ISO-HDLC polynomial
_CHUNK = 16 << 20   # bound the work per zlib call so memoryviews of any size are fine


def _multmodp(a: int, b: int) -> int:
    """a * b modulo the CRC polynomial (reflected bit order), as in zlib 1.2.12+."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if (a & (m - 1)) == 0:
                break
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return p


def _x2n_table() -> list:
    table = [1 << 30]  # x^1
    for _ in range(31):
        table.append(_multmodp(table[-1], table[-1]))
    return table


_X2N = _x2n_table()  # _X2N[k] = x^(2^k) mod p


def _x8nmodp(n: int) -> int:
    """x^(8n) mod p: the operator that appends n zero bytes to a CRC register."""
    p = 1 << 31  # x^0
    k = 3
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A+B given crc1 = CRC(A), crc2 = CRC(B) and len2 = len(B)."""
    if len2 < 0:
        raise ValueError(f"length must be non-negative, got {len2}")
    return _multmodp(_x8nmodp(len2), crc1) ^ crc2


def crc32(buf, crc: int = 0) -> int:
    """zlib.crc32's value over any buffer (memoryview, mmap slice, bytes), fed in bounded chunks."""
    view = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
    n = len(view)
    if n <= _CHUNK:
        return crc32_raw(view, crc)
    for start in range(0, n, _CHUNK):
        crc = crc32_raw(view[start:start + _CHUNK], crc)
    return crc


def crc32_zeros(n: int, crc: int = 0) -> int:
    """CRC-32 continued over `n` zero bytes, without allocating them."""
    # The CRC of n zero bytes alone is (x^(8n) * 0xFFFFFFFF) ^ 0xFFFFFFFF in the register view.
    zeros = _multmodp(_x8nmodp(n), 0xFFFFFFFF) ^ 0xFFFFFFFF
    return crc32_combine(crc, zeros, n)
