"""loaders/_values.py: `Value` trees -> Python data, and trusted classes rebuilt as torch.load(weights_only) does."""

from __future__ import annotations

import collections
import dataclasses
import enum
import io
import struct

import pytest
import torch

from pt2format._generated import model as m
from pt2format.errors import LoadError
from pt2format.exporter._values import to_value
from pt2format.loaders._values import device_from_schema, dtype_from_schema, from_value
from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE


class Mode(enum.Enum):
    FAST = "fast"


Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Box:
    w: int
    h: int

    def __post_init__(self):  # torch.load(weights_only=True) does not run it, nor do we
        raise AssertionError("__init__ ran")


def _torch_weights_only(obj):
    """What torch.load(weights_only=True) gives back for `obj`, the classes trusted."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    with torch.serialization.safe_globals([Mode, Pair, Box]):
        return torch.load(buf, weights_only=True)


def test_plain_data_comes_back_with_types_and_bits():
    nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0001))[0]
    data = {"a": [1, (2.5, -0.0)], 3: None, (1, "k"): b"\x00", "c": 1 - 2j, "t": True, "n": nan}
    back = from_value(to_value(data))
    assert list(back) == list(data) and back["a"] == [1, (2.5, -0.0)] and type(back["a"][1]) is tuple
    assert struct.pack("<d", back["a"][1][1]) == struct.pack("<d", -0.0)
    assert struct.pack("<d", back["n"]) == struct.pack("<d", nan)
    assert back[(1, "k")] == b"\x00" and back["c"] == 1 - 2j and back["t"] is True


def test_dtypes_and_devices_are_torchs():
    for dt in (torch.float16, torch.int4, torch.float8_e4m3fn, torch.qint8):
        assert dtype_from_schema(DTYPE_TO_SCALAR_TYPE[dt]) is dt
    assert device_from_schema(m.Device(type="cuda", index=1)) == torch.device("cuda:1")
    assert device_from_schema(m.Device(type="cpu", index=-1)) == torch.device("cpu")
    with pytest.raises(LoadError):
        dtype_from_schema(0)


def test_trusted_classes_rebuilt_as_torch_weights_only_rebuilds_them():
    box = Box.__new__(Box)
    box.w, box.h = 2, 3
    objs = [Mode.FAST, Pair(1, 2), box]
    classes = {f"{c.__module__}.{c.__qualname__}": c for c in (Mode, Pair, Box)}
    ours = from_value(to_value(objs, objects=True), classes=classes)
    theirs = _torch_weights_only(objs)
    assert ours[0] is theirs[0] is Mode.FAST
    assert ours[1] == theirs[1] and type(ours[1]) is Pair
    assert type(ours[2]) is Box and vars(ours[2]) == vars(theirs[2])


def test_untrusted_or_out_of_place_objects_are_refused():
    v = to_value([Mode.FAST], objects=True)
    with pytest.raises(LoadError, match="only in a tensor subclass"):
        from_value(v)  # no classes: a plain value tree may not hold objects
    with pytest.raises(LoadError) as e:
        from_value(v, classes={})
    assert "value[0]" in str(e.value)


def test_unhashable_keys_and_stray_tensors_are_refused():
    bad_key = m.Value(m.MapValue([m.MapEntry(to_value([1]), to_value(1))]))
    with pytest.raises(LoadError, match="cannot be a dict key"):
        from_value(bad_key)
    with pytest.raises(LoadError, match="tensor is not allowed"):
        from_value(m.Value(m.TensorRefValue(0)))


def test_a_size_of_other_than_ints_is_refused_with_its_path():
    """ListValue.is_size (1.2) promises a tuple of IntValues; anything else is not a torch.Size."""
    ints = [m.Value(m.IntValue(2)), m.Value(m.IntValue(3))]
    assert type(from_value(m.Value(m.ListValue(ints, is_tuple=True, is_size=True)))) is torch.Size
    for bad in (m.ListValue([m.Value(m.FloatValue(2.0))], is_tuple=True, is_size=True),
                m.ListValue(ints, is_tuple=False, is_size=True)):
        with pytest.raises(LoadError, match="torch.Size") as e:
            from_value(m.Value(m.ListValue([m.Value(bad)], is_tuple=True)), path="example_inputs")
        assert e.value.path == "example_inputs[0]"
