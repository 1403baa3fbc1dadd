"""exporter/_values.py: plain Python data -> `Value` trees, exact to the bit and to the container type."""

from __future__ import annotations

import enum
import math
import struct

import pytest
import torch

from pt2format.errors import ExportError
from pt2format.exporter._values import to_value
from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE


class Color(enum.Enum):
    RED = 1


def _member(v):
    return v.value


def test_scalars_keep_type_and_bits():
    assert type(_member(to_value(True))).__name__ == "BoolValue"  # bool is not int here
    assert type(_member(to_value(1))).__name__ == "IntValue"
    neg_zero = _member(to_value(-0.0)).value
    assert struct.pack("<d", neg_zero) == struct.pack("<d", -0.0)
    nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_DEAD_BEEF))[0]
    assert struct.pack("<d", _member(to_value(nan)).value) == struct.pack("<d", nan)
    assert _member(to_value(math.inf)).value == math.inf
    c = _member(to_value(1.5 - 2j))
    assert (c.real, c.imag) == (1.5, -2.0)
    assert bytes(_member(to_value(b"\x00\xff")).value) == b"\x00\xff"


def test_containers_keep_list_tuple_and_dict_order():
    lst, tup = _member(to_value([1, 2])), _member(to_value((1, 2)))
    assert (lst.is_tuple, tup.is_tuple) == (False, True)
    m = _member(to_value({"b": 1, 2: "a"}))
    assert [_member(e.key).value for e in m.entries] == ["b", 2]


def test_torch_values_use_the_shared_enums():
    assert _member(to_value(torch.bfloat16)).value == DTYPE_TO_SCALAR_TYPE[torch.bfloat16]
    d = _member(to_value(torch.device("cuda", 1))).value
    assert (d.type, d.index) == ("cuda", 1)


def test_tensors_go_through_the_callback_only():
    seen = []
    v = to_value([torch.zeros(1)], tensor_ref=lambda t, path: seen.append(path) or 7)
    assert _member(v).items[0].value.tensor == 7 and seen == ["value[0]"]
    with pytest.raises(ExportError, match="tensors are not allowed"):
        to_value(torch.zeros(1))


def test_integers_beyond_int64_and_unknown_objects_are_refused_by_path():
    with pytest.raises(ExportError) as e:
        to_value({"k": [1 << 63]}, path="meta")
    assert "meta['k'][0]" in str(e.value)

    with pytest.raises(ExportError, match="no structured form"):
        to_value(Color.RED)
    rec = _member(to_value(Color.RED, objects=True))
    assert (rec.class_fqn, rec.name) == (f"{Color.__module__}.{Color.__qualname__}", "RED")
