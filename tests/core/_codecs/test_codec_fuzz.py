"""Fuzzing every decoder: random and mutated input yields a Pt2FormatError or a tree, never another exception."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pt2format import _codecs as C
from pt2format.errors import Pt2FormatError

import codec_strategies as S


small_package = S.small_package


# ---------------------------------------------------------------------------
# Fuzz: only Pt2FormatError (or success) may come out of a decoder
# ---------------------------------------------------------------------------

_FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SEEDS = {enc: C.encode(small_package(), enc) for enc in C.ENCODINGS}


def _decode_or_typed_error(data, encoding):
    try:
        C.decode(data, encoding, max_depth=32)
    except Pt2FormatError:
        pass


@pytest.mark.parametrize("encoding", C.ENCODINGS)
@given(data=st.binary(max_size=512))
@_FUZZ
def test_fuzz_random_bytes(encoding, data):
    _decode_or_typed_error(data, encoding)


@given(data=st.binary(max_size=512))
@_FUZZ
def test_fuzz_random_bytes_with_identifier(data):
    _decode_or_typed_error(data[:4].ljust(4, b"\0") + b"P2FP" + data[4:], "flatbuffers")


@pytest.mark.parametrize("encoding", C.ENCODINGS)
@given(edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
       cut=st.integers(0, 10_000))
@_FUZZ
def test_fuzz_mutated_encodings(encoding, edits, cut):
    data = bytearray(_SEEDS[encoding])
    for pos, byte in edits:
        data[pos % len(data)] = byte
    if cut % 3 == 0:
        data = data[:cut % (len(data) + 1)]
    _decode_or_typed_error(bytes(data), encoding)


@given(edits=st.lists(st.tuples(st.integers(0, 200_000), st.integers(0, 255)), min_size=1, max_size=4))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_mutated_exhaustive_flatbuffers(edits):
    data = bytearray(_EXHAUSTIVE_FB)
    for pos, byte in edits:
        data[pos % len(data)] = byte
    _decode_or_typed_error(bytes(data), "flatbuffers")
    # What the reader accepts, the writer can write again, and the reader reads back the same tree.
    try:
        tree = C.decode(bytes(data), "flatbuffers", max_depth=32)
    except Pt2FormatError:
        return
    assert C.decode(C.encode(tree, "flatbuffers"), "flatbuffers", max_depth=32) == tree


_EXHAUSTIVE_FB = C.encode(S.exhaustive_package(), "flatbuffers")
