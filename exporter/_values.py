"""Plain Python data -> generic `Value` trees (custom metadata, constants, example inputs, object state).

Only data types the schema names are accepted; anything else is an
ExportError naming where it was found, never a pickle or a repr.
"""

from __future__ import annotations

from typing import Callable

import torch

from pt2format._generated.model import (
    BoolValue,
    BytesValue,
    ComplexValue,
    DeviceValue,
    FloatValue,
    IntValue,
    ListValue,
    MapEntry,
    MapValue,
    NullValue,
    ScalarTypeValue,
    StringValue,
    TensorRefValue,
    Value,
)
from pt2format.errors import ExportError

from ._enums import DTYPE_TO_SCALAR_TYPE, device_to_schema

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def to_value(obj, *, tensor_ref: Callable[[torch.Tensor, str], int] | None = None, path: str = "value") -> Value:
    """Convert `obj` to a Value; tensors go through `tensor_ref(tensor, path) -> Package.tensors index`."""
    t = type(obj)
    if obj is None:
        return Value(NullValue())
    if t is bool:
        return Value(BoolValue(obj))
    if t is int:
        if not INT64_MIN <= obj <= INT64_MAX:
            raise ExportError("integer does not fit in 64 bits", path=path, expected="int64", got=obj)
        return Value(IntValue(obj))
    if t is float:
        return Value(FloatValue(obj))
    if t is str:
        return Value(StringValue(obj))
    if t is bytes or t is bytearray:
        return Value(BytesValue(list(obj)))
    if t is complex:
        return Value(ComplexValue(obj.real, obj.imag))
    if t is list or t is tuple:
        return Value(ListValue([to_value(x, tensor_ref=tensor_ref, path=f"{path}[{i}]") for i, x in enumerate(obj)],
                               is_tuple=t is tuple))
    if t is dict:
        return Value(map_value(obj, tensor_ref=tensor_ref, path=path))
    if isinstance(obj, torch.dtype):
        return Value(ScalarTypeValue(DTYPE_TO_SCALAR_TYPE[obj]))
    if isinstance(obj, torch.device):
        return Value(DeviceValue(device_to_schema(obj)))
    if isinstance(obj, torch.Tensor):
        if tensor_ref is None:
            raise ExportError("tensors are not allowed here", path=path, expected="plain data", got="Tensor")
        return Value(TensorRefValue(tensor_ref(obj, path)))
    raise ExportError("value has no structured form", path=path,
                      expected="None/bool/int/float/str/bytes/complex/list/tuple/dict/dtype/device/Tensor",
                      got=f"{t.__module__}.{t.__qualname__}")


def map_value(d: dict, *, tensor_ref=None, path: str = "value") -> MapValue:
    """A dict -> MapValue, entries in insertion order."""
    return MapValue([
        MapEntry(to_value(k, tensor_ref=tensor_ref, path=f"{path}.key({k!r})"),
                 to_value(v, tensor_ref=tensor_ref, path=f"{path}[{k!r}]"))
        for k, v in d.items()
    ])
