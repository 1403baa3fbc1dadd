"""Generic `Value` trees -> plain Python data (tensors through a callback).

Nothing else is constructed, except, where the caller passes the classes the
user trusts (`classes`: tensor subclass contexts), enum members, dataclasses
and namedtuples of exactly those classes (EnumValue / ObjectValue), rebuilt
as `torch.load(weights_only=True)` rebuilds them: a member looked up by
name, a namedtuple from its fields, a dataclass by setting its declared
fields on a fresh instance without running `__init__`.
"""

from __future__ import annotations

import dataclasses
import enum

import torch

from pt2format._generated.model import (
    BoolValue,
    BytesValue,
    ComplexValue,
    DeviceValue,
    EnumValue,
    FloatValue,
    IntValue,
    ListValue,
    MapValue,
    NullValue,
    ObjectKind,
    ObjectValue,
    ScalarTypeValue,
    StringValue,
    TensorRefValue,
)
from pt2format.errors import LoadError

from pt2format.vocab.enums import SCALAR_TYPE_TO_DTYPE


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


def from_value(v, *, tensor=None, path: str = "value", hashable: bool = False, classes: dict | None = None):
    """Value -> Python. `tensor(index, path)` resolves TensorRefValue; `hashable` asks for a dict key.

    `classes` (qualified name -> class the user trusts) admits EnumValue and ObjectValue; None refuses them.
    """
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
        items = [from_value(y, tensor=tensor, path=f"{path}[{i}]", hashable=hashable, classes=classes)
                 for i, y in enumerate(x.items)]
        if hashable and not x.is_tuple:
            raise LoadError("a list cannot be a dict key", path=path)
        if x.is_size:
            if not (x.is_tuple and all(type(i) is int for i in items)):
                raise LoadError("a torch.Size holds ints only and is a tuple", path=path,
                                expected="is_tuple and IntValue items", got=[type(i).__name__ for i in items][:8])
            return torch.Size(items)
        return tuple(items) if x.is_tuple else items
    if t is MapValue:
        if hashable:
            raise LoadError("a dict cannot be a dict key", path=path)
        out = {}
        for i, e in enumerate(x.entries):
            k = from_value(e.key, tensor=tensor, path=f"{path}.entries[{i}].key", hashable=True, classes=classes)
            out[k] = from_value(e.value, tensor=tensor, path=f"{path}.entries[{i}].value", classes=classes)
        return out
    if t is ScalarTypeValue:
        return dtype_from_schema(x.value, path)
    if t is DeviceValue:
        return device_from_schema(x.value, path)
    if t is TensorRefValue:
        if tensor is None or hashable:
            raise LoadError("a tensor is not allowed here", path=path)
        return tensor(x.tensor, path)
    if t is EnumValue or t is ObjectValue:
        if classes is None:
            raise LoadError("enum and object values appear only in a tensor subclass's context", path=path,
                            expected="a plain value", got=t.__name__)
        return _enum(x, classes, path) if t is EnumValue else _object(x, tensor, classes, path)
    raise LoadError("unknown value kind", path=path, got=t.__name__)


def trusted_class(fqn: str, classes: dict, path: str, what: str):
    """The class the user trusts under `fqn`, or a LoadError saying how to trust it."""
    cls = classes.get(fqn)
    if cls is None:
        raise LoadError(f"{what} {fqn} is not trusted: import it and pass the class in allow_subclasses=[...] "
                        f"or torch.serialization.add_safe_globals([...])", path=f"{path}.class_fqn",
                        expected="a class in allow_subclasses or torch.serialization.get_safe_globals()", got=fqn)
    return cls


def _enum(x, classes: dict, path: str):
    cls = trusted_class(x.class_fqn, classes, path, "enum class")
    if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
        raise LoadError(f"{x.class_fqn} is not an enum class", path=f"{path}.class_fqn", got=x.class_fqn)
    member = cls.__members__.get(x.name)
    if member is None:
        raise LoadError(f"enum {x.class_fqn} has no member {x.name!r}", path=f"{path}.name",
                        expected=sorted(cls.__members__), got=x.name)
    return member


def _object(x, tensor, classes: dict, path: str):
    fqn = x.class_fqn
    cls = trusted_class(fqn, classes, path, "class")
    names = [f.name for f in x.fields]
    values = [from_value(f.value, tensor=tensor, path=f"{path}.fields[{i}].value", classes=classes)
              for i, f in enumerate(x.fields)]
    if x.kind == ObjectKind.NAMEDTUPLE:
        declared = getattr(cls, "_fields", None) if isinstance(cls, type) and issubclass(cls, tuple) else None
        if declared is None:
            raise LoadError(f"{fqn} is not a namedtuple class", path=f"{path}.class_fqn", got=fqn)
        if list(declared) != names:
            raise LoadError(f"namedtuple {fqn} has other fields than the file", path=f"{path}.fields",
                            expected=list(declared), got=names)
        return tuple.__new__(cls, values)
    if x.kind != ObjectKind.DATACLASS:
        raise LoadError("unknown object kind", path=f"{path}.kind", got=x.kind)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise LoadError(f"{fqn} is not a dataclass", path=f"{path}.class_fqn", got=fqn)
    declared = [f.name for f in dataclasses.fields(cls)]
    if declared != names:
        raise LoadError(f"dataclass {fqn} has other fields than the file", path=f"{path}.fields",
                        expected=declared, got=names)
    obj = cls.__new__(cls)
    for n, val in zip(names, values):
        object.__setattr__(obj, n, val)  # frozen dataclasses too, as pickle's BUILD does
    return obj


def example_inputs(v, *, tensor, in_spec, path: str = "example_inputs"):
    """Program.example_inputs -> `(args, kwargs)` with the node types of the program's `in_spec`.

    A writer stores a pytree node the Value kinds cannot name (a namedtuple, a registered dataclass, ...) as the tuple of its children (exporter._values.plain_pytree); `in_spec` records its type
    at the same position, so the tree is rebuilt from its leaves with torch's own unflatten. A value whose
    leaves do not fit `in_spec` is returned as it is, for the coherence check to report.
    """
    ex = from_value(v, tensor=tensor, path=path)
    if not (isinstance(ex, tuple) and len(ex) == 2 and isinstance(ex[0], tuple) and isinstance(ex[1], dict)):
        raise LoadError("example inputs must be (args tuple, kwargs dict)", path=path)
    if in_spec is None or in_spec.type is not tuple or in_spec.num_children != 2:
        return ex
    import torch.utils._pytree as pytree

    args, kwargs = ex
    kw_spec = in_spec.child(1)
    if kw_spec.type is not dict or set(kw_spec.context) != set(kwargs):
        return ex
    if not _has_node_beyond_plain(in_spec):
        return ex  # nothing was flattened (torch's in_spec has a tuple where an example has a torch.Size)
    leaves, received = pytree.tree_flatten((args, {k: kwargs[k] for k in kw_spec.context}))
    if received == in_spec:
        return ex
    try:
        args, spec_kwargs = pytree.tree_unflatten(leaves, in_spec)
    except (ValueError, TypeError, AssertionError):
        return ex
    return tuple(args), {k: spec_kwargs[k] for k in kwargs}


_PLAIN_NODES = (tuple, list, dict, type(None))


def _has_node_beyond_plain(spec) -> bool:
    todo = [spec]
    while todo:
        s = todo.pop()
        if s.is_leaf():
            continue
        if s.type not in _PLAIN_NODES:
            return True
        todo.extend(s.children())
    return False
