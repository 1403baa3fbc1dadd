"""Padding math: round offsets up to power-of-two alignments.

The only place that computes padding, so every writer and reader agrees on
where a section or storage starts.
"""

from __future__ import annotations

# Alignment of DATA sections and of every storage inside one (SPEC §3, §5).
DATA_ALIGNMENT = 64
# Alignment of the PROGRAM section: 8 keeps FlatBuffers' 8-byte scalars aligned.
PROGRAM_ALIGNMENT = 8


def is_power_of_two(n: int) -> bool:
    """True for 1, 2, 4, ...; false for 0, negatives and everything else."""
    return n > 0 and (n & (n - 1)) == 0


def _check(alignment: int) -> None:
    if not is_power_of_two(alignment):
        raise ValueError(f"alignment must be a power of two, got {alignment}")


def align_up(n: int, alignment: int) -> int:
    """Smallest multiple of `alignment` that is >= `n` (n >= 0)."""
    _check(alignment)
    if n < 0:
        raise ValueError(f"offset must be non-negative, got {n}")
    return (n + alignment - 1) & ~(alignment - 1)


def padding(n: int, alignment: int) -> int:
    """Number of zero bytes that take offset `n` to the next multiple of `alignment`."""
    return align_up(n, alignment) - n


def padding_bytes(n: int, alignment: int) -> bytes:
    """The zero bytes written after offset `n` to reach the next multiple of `alignment`."""
    return bytes(padding(n, alignment))
