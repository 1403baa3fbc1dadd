"""Plain Python data -> generic `Value` trees (custom metadata, constants, example inputs, object state).

Only data types the schema names are accepted; anything else is an
ExportError naming where it was found, never a pickle or a repr. Where the
caller asks (`objects=True`: tensor subclass contexts, the one place the
loader can check the classes against the user's trust list), enum members,
dataclasses and namedtuples become EnumValue / ObjectValue: class name plus
member name or fields.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Callable

import torch
import torch.utils._pytree as pytree

from pt2format._generated.model import (
    BoolValue,
    BytesValue,
    ComplexValue,
    DeviceValue,
    EnumValue,
    FloatValue,
    IntValue,
    ListValue,
    MapEntry,
    MapValue,
    NullValue,
    ObjectField,
    ObjectKind,
    ObjectValue,
    ScalarTypeValue,
    StringValue,
    TensorRefValue,
    Value,
)
from pt2format.errors import ExportError

from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE, device_to_schema

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def to_value(obj, *, tensor_ref: Callable[[torch.Tensor, str], int] | None = None, path: str = "value",
             objects: bool = False) -> Value:
    """Convert `obj` to a Value; tensors go through `tensor_ref(tensor, path) -> Package.tensors index`.

    `objects`: enum members, dataclasses and namedtuples are stored as EnumValue / ObjectValue.
    """
    t = type(obj)
    if objects:
        rec = _record(obj, tensor_ref, path)
        if rec is not None:
            return rec
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
    if t is torch.Size:
        return Value(ListValue([to_value(x, path=f"{path}[{i}]") for i, x in enumerate(obj)], is_tuple=True,
                               is_size=True))
    if t is list or t is tuple:
        return Value(ListValue([to_value(x, tensor_ref=tensor_ref, path=f"{path}[{i}]", objects=objects)
                                for i, x in enumerate(obj)], is_tuple=t is tuple))
    if t is dict:
        return Value(map_value(obj, tensor_ref=tensor_ref, path=path, objects=objects))
    if isinstance(obj, torch.dtype):
        return Value(ScalarTypeValue(DTYPE_TO_SCALAR_TYPE[obj]))
    if isinstance(obj, torch.device):
        return Value(DeviceValue(device_to_schema(obj)))
    if isinstance(obj, torch.Tensor):
        if tensor_ref is None:
            raise ExportError("tensors are not allowed here", path=path, expected="plain data", got="Tensor")
        return Value(TensorRefValue(tensor_ref(obj, path)))
    plain = "None/bool/int/float/str/bytes/complex/list/tuple/torch.Size/dict/dtype/device/Tensor"
    raise ExportError("value has no structured form", path=path,
                      expected=plain + ("/enum/dataclass/namedtuple" if objects else ""),
                      got=f"{t.__module__}.{t.__qualname__}")


def map_value(d: dict, *, tensor_ref=None, path: str = "value", objects: bool = False) -> MapValue:
    """A dict -> MapValue, entries in insertion order."""
    return MapValue([
        MapEntry(to_value(k, tensor_ref=tensor_ref, path=f"{path}.key({k!r})", objects=objects),
                 to_value(v, tensor_ref=tensor_ref, path=f"{path}[{k!r}]", objects=objects))
        for k, v in d.items()
    ])


_is_leaf = getattr(pytree, "tree_is_leaf", None) or pytree._is_leaf  # tree_is_leaf: torch 2.13 and newer


def plain_pytree(obj):
    """`obj` with every pytree node of a type the Value kinds cannot name (a namedtuple, an OrderedDict, a
    registered dataclass, ...) replaced by the tuple of its children, recursively.

    For example inputs only: the program's in_spec records each node's type at the same position, so
    the loader rebuilds the exact objects from the leaves (loaders._values.example_inputs); nothing is
    lost, and a reader in another language still sees plain data.
    """
    t = type(obj)
    if t is list or t is tuple:
        return t(plain_pytree(x) for x in obj)
    if t is torch.Size:
        return obj  # a ListValue with is_size
    if t is dict:
        return {k: plain_pytree(v) for k, v in obj.items()}
    if obj is None or _is_leaf(obj):
        return obj
    children, _ = pytree.SUPPORTED_NODES[pytree._get_node_type(obj)].flatten_fn(obj)
    return tuple(plain_pytree(c) for c in children)


def record_class_fqn(cls, path: str) -> str:
    """`module.QualName` of a class a loader must find again; a class inside a function never can be."""
    fqn = f"{cls.__module__}.{cls.__qualname__}"
    if "<locals>" in cls.__qualname__:
        raise ExportError("class is defined inside a function; a loader could never find it", path=path,
                          expected="a module-level class", got=fqn)
    return fqn


def is_namedtuple(obj) -> bool:
    t = type(obj)
    return isinstance(obj, tuple) and t is not tuple and isinstance(getattr(t, "_fields", None), tuple)


def _record(obj, tensor_ref, path: str) -> Value | None:
    """EnumValue / ObjectValue for an enum member, dataclass or namedtuple; None for anything else."""
    t = type(obj)
    if isinstance(obj, enum.Enum):
        return Value(EnumValue(class_fqn=record_class_fqn(t, path), name=obj.name))
    if is_namedtuple(obj):
        kind, pairs = ObjectKind.NAMEDTUPLE, zip(t._fields, obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        kind, pairs = ObjectKind.DATACLASS, ((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))
    else:
        return None
    fqn = record_class_fqn(t, path)
    return Value(ObjectValue(class_fqn=fqn, kind=kind, fields=[
        ObjectField(name=n, value=to_value(v, tensor_ref=tensor_ref, path=f"{path}.{n}", objects=True))
        for n, v in pairs]))
