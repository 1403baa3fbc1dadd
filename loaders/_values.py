"""Generic `Value` trees -> plain Python data (tensors through a callback); nothing else is constructed."""

from __future__ import annotations

import torch

from pt2format._generated.model import (
    BoolValue,
    BytesValue,
    ComplexValue,
    DeviceValue,
    FloatValue,
    IntValue,
    ListValue,
    MapValue,
    NullValue,
    ScalarTypeValue,
    StringValue,
    TensorRefValue,
)
from pt2format.errors import LoadError

from pt2format.exporter._enums import SCALAR_TYPE_TO_DTYPE


_devices: dict[tuple, torch.device] = {}


def device_from_schema(d, path: str = "device") -> torch.device:
    if d is None or not isinstance(d.type, str):
        raise LoadError("missing device", path=path)
    key = (d.type, d.index)
    dev = _devices.get(key)
    if dev is not None:
        return dev
    try:
        dev = torch.device(d.type) if d.index == -1 else torch.device(d.type, d.index)
    except (RuntimeError, ValueError) as e:
        raise LoadError(f"invalid device: {e}", path=path, got=f"{d.type}:{d.index}") from None
    if len(_devices) < 64:
        _devices[key] = dev
    return dev


def dtype_from_schema(st, path: str = "dtype") -> torch.dtype:
    dt = SCALAR_TYPE_TO_DTYPE.get(int(st))
    if dt is None:
        raise LoadError("unknown dtype", path=path, expected="a ScalarType other than UNSPECIFIED", got=st)
    return dt


def from_value(v, *, tensor=None, path: str = "value", hashable: bool = False):
    """Value -> Python. `tensor(index, path)` resolves TensorRefValue; `hashable` asks for a dict key."""
    if v is None or v.value is None:
        raise LoadError("value is absent", path=path)
    x = v.value
    t = type(x)
    if t is NullValue:
        return None
    if t is BoolValue or t is IntValue or t is FloatValue or t is StringValue:
        return x.value
    if t is BytesValue:
        return bytes(x.value)
    if t is ComplexValue:
        return complex(x.real, x.imag)
    if t is ListValue:
        items = [from_value(y, tensor=tensor, path=f"{path}[{i}]", hashable=hashable) for i, y in enumerate(x.items)]
        if hashable and not x.is_tuple:
            raise LoadError("a list cannot be a dict key", path=path)
        return tuple(items) if x.is_tuple else items
    if t is MapValue:
        if hashable:
            raise LoadError("a dict cannot be a dict key", path=path)
        out = {}
        for i, e in enumerate(x.entries):
            k = from_value(e.key, tensor=tensor, path=f"{path}.entries[{i}].key", hashable=True)
            out[k] = from_value(e.value, tensor=tensor, path=f"{path}.entries[{i}].value")
        return out
    if t is ScalarTypeValue:
        return dtype_from_schema(x.value, path)
    if t is DeviceValue:
        return device_from_schema(x.value, path)
    if t is TensorRefValue:
        if tensor is None or hashable:
            raise LoadError("a tensor is not allowed here", path=path)
        return tensor(x.tensor, path)
    raise LoadError("unknown value kind", path=path, got=t.__name__)
