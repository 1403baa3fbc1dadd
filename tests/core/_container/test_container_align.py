"""Padding math: power-of-two checks and offsets just below, at and above an alignment."""

import pytest

from pt2format._container.align import align_up, is_power_of_two, padding, padding_bytes


@pytest.mark.parametrize("n, alignment, expected", [
    (0, 64, 0), (1, 64, 64), (63, 64, 64), (64, 64, 64), (65, 64, 128), (127, 64, 128), (128, 64, 128),
    (0, 1, 0), (5, 1, 5), (7, 8, 8), (8, 8, 8), (9, 8, 16), (2**40 + 1, 4096, 2**40 + 4096),
])
def test_align_up(n, alignment, expected):
    assert align_up(n, alignment) == expected
    assert padding(n, alignment) == expected - n
    assert padding_bytes(n, alignment) == b"\0" * (expected - n)


@pytest.mark.parametrize("alignment", [0, -8, 3, 6, 48, 65, 100])
def test_non_power_of_two_alignment_rejected(alignment):
    assert not is_power_of_two(alignment)
    with pytest.raises(ValueError):
        align_up(10, alignment)


def test_powers_of_two():
    assert [n for n in range(1, 130) if is_power_of_two(n)] == [1, 2, 4, 8, 16, 32, 64, 128]


def test_negative_offset_rejected():
    with pytest.raises(ValueError):
        align_up(-1, 8)
