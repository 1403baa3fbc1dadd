"""Stand-in classes for pytree container types that a file names but this process cannot import.

A program's in/out specs name their container classes (a namedtuple, a
registered dataclass, a transformers `ModelOutput`, any class registered with
`register_pytree_node`). When the loading process cannot find the class, the
loader builds a stand-in: a class with the original's name (its repr, its
`__name__` and `__module__.__qualname__` read as the original's, so a TreeSpec
prints the same), the original's fields, and the original's way of reaching
them (index and attribute for a namedtuple, attribute for a dataclass,
attribute, key and integer index for a dict-like class such as ModelOutput).
Custom stand-ins are registered as pytree nodes, so flatten/unflatten, the
loaded module's input checks and a re-save work as with the original; every
stand-in is registered under the file's type name unless a real class holds
that name, so torch's own serializer can name it too (`pt2format.to_torch`);
it is kept out of the name -> class table torch's loader reads, so no other
file's load in this process ever meets it.

Built from checked values only: the type name must be dot-separated
identifiers and every field an identifier (no dunder names). Classes are made
with `type()`; nothing is exec'd or eval'd. In particular namedtuple
stand-ins are not made with `collections.namedtuple`, which (CPython 3.11)
`eval`s a `lambda` built from the field names.

One class per (kind, type name, fields) and process, made under a lock, so
two loads of the same file give the same types, from any thread.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
import typing

import torch.utils._pytree as pytree

from pt2format._strings import is_identifier
from pt2format.vocab.treespec import STANDIN_ATTR, standin_type_name

_LOCK = threading.Lock()
_CACHE: dict[tuple, type] = {}
#: Stand-in classes per process at most: each is registered with pytree for good, so a stream of files
#: with ever new type names must not grow the registry without bound. Past it, loaders use plain containers.
MAX_STANDINS = 4096


def is_standin(cls) -> bool:
    """True for a class this module made (looked up in the class's own dict, no hooks run)."""
    return standin_type_name(cls) is not None


def _valid_type_name(type_name) -> bool:
    if not isinstance(type_name, str):
        return False
    parts = type_name.split(".")
    return len(parts) >= 2 and all(is_identifier(p) for p in parts)


def valid_field(name, *, private_ok: bool = True) -> bool:
    """An identifier (SPEC.md §9), not a dunder name (and without a leading '_' when not private_ok)."""
    return (isinstance(name, str) and is_identifier(name)
            and not (name.startswith("__") and name.endswith("__")) and not name.startswith("_pt2f_")
            and (private_ok or not name.startswith("_")))


def _names_ok(names, *, private_ok: bool = True) -> bool:
    return all(valid_field(n, private_ok=private_ok) for n in names) and len(set(names)) == len(names)


def _namespace(type_name: str, extra: dict) -> dict:
    module, _, name = type_name.rpartition(".")
    ns = {"__module__": module, "__qualname__": name, STANDIN_ATTR: type_name,
          "__doc__": f"pt2format stand-in for {type_name}, which this process cannot import."}
    ns.update(extra)
    return ns


def _name_is_free(type_name: str) -> bool:
    """True when no real class holds `type_name` in torch's pytree registry: a stand-in may register under it."""
    holder = pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE.get(type_name)
    return holder is None or is_standin(holder)


def _unlist_name(type_name: str, cls: type) -> None:
    """Take the stand-in out of torch's name -> class table (the one torch.export.load resolves names with).

    Registering under the file's name keeps class -> name, so torch.export.save
    (pt2format.to_torch) can name the stand-in. The reverse entry would let
    torch's own loader, anywhere in this process, build this stand-in for any
    file naming the type: after one pt2format load, `torch.export.load` of an
    unrelated archive would succeed where alone it fails. Stand-ins are for
    the file that asked for them (pt2format finds them in its own cache).
    """
    with pytree._NODE_REGISTRY_LOCK:
        if pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE.get(type_name) is cls:
            del pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE[type_name]


def _cached(key: tuple, make):
    with _LOCK:
        cls = _CACHE.get(key)
        if cls is None:
            if len(_CACHE) >= MAX_STANDINS:
                return None
            cls = make()
            _CACHE[key] = cls
        return cls


# --------------------------------------------------------------------------- namedtuple

def _nt_new(cls, *args, **kwargs):
    fields = cls._fields
    if len(args) > len(fields):
        raise TypeError(f"{cls.__name__} takes {len(fields)} fields, got {len(args)}")
    values = list(args)
    for f in fields[len(args):]:
        if f not in kwargs:
            raise TypeError(f"{cls.__name__} is missing field {f!r}")
        values.append(kwargs.pop(f))
    if kwargs:
        raise TypeError(f"{cls.__name__} got unexpected fields {sorted(kwargs)}")
    return tuple.__new__(cls, values)


def _nt_make(cls, iterable):
    values = tuple(iterable)
    if len(values) != len(cls._fields):
        raise TypeError(f"{cls.__name__} expects {len(cls._fields)} values, got {len(values)}")
    return tuple.__new__(cls, values)


def _nt_asdict(self):
    return dict(zip(self._fields, self))


def _nt_replace(self, **kwargs):
    return type(self)(**{**self._asdict(), **kwargs})


def _nt_repr(self):
    return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in zip(self._fields, self))})"


def _nt_getnewargs(self):
    return tuple(self)


def namedtuple_standin(type_name: str, fields) -> type | None:
    """A tuple subclass that pytree (and `is_namedtuple_class`) takes for a namedtuple `type_name`; None when
    the name or the fields do not pass the checks."""
    fields = tuple(fields)
    if not _valid_type_name(type_name) or not _names_ok(fields, private_ok=False):
        return None

    def make():
        ns = {"__slots__": (), "_fields": fields, "_field_defaults": {}, "__match_args__": fields,
              "__new__": _nt_new, "_make": classmethod(_nt_make), "_asdict": _nt_asdict, "_replace": _nt_replace,
              "__repr__": _nt_repr, "__getnewargs__": _nt_getnewargs}
        for i, f in enumerate(fields):
            ns[f] = property(operator.itemgetter(i), doc=f"Field {i} ({f}).")
        cls = type(type_name.rpartition(".")[2], (tuple,), _namespace(type_name, ns))
        if _name_is_free(type_name):  # so that torch.export.save (pt2format.to_torch) can name it
            pytree._register_namedtuple(cls, serialized_type_name=type_name)
            _unlist_name(type_name, cls)
        return cls

    return _cached(("namedtuple", type_name, fields), make)


# --------------------------------------------------------------------------- custom pytree nodes

class StandInMapping(dict):
    """Base of dict-like stand-ins (a transformers ModelOutput, any class flattened as keys -> values).

    Like ModelOutput: `out["logits"]`, `out.logits`, and `out[0]` / `out[1:]`
    index `to_tuple()` (the values in key order) unless the mapping has that key.
    """

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return dict.__getitem__(self, name)
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} stand-in has no field {name!r}") from None

    def __getitem__(self, k):
        if isinstance(k, slice) or (isinstance(k, int) and not isinstance(k, bool)
                                    and not dict.__contains__(self, k)):
            return self.to_tuple()[k]
        return dict.__getitem__(self, k)

    def to_tuple(self) -> tuple:
        return tuple(self.values())

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.items())})"

    def __reduce__(self):
        return (type(self), (list(self.items()),))


def _mapping_flatten(obj):
    return list(obj.values()), list(obj.keys())


def _mapping_unflatten_for(cls):
    def unflatten(values, context):
        return cls(zip(context, values))
    return unflatten


def _mapping_flatten_with_keys(obj):
    return [(pytree.MappingKey(k), v) for k, v in obj.items()], list(obj.keys())


def _dataclass_fields(fields) -> dict:
    """`__dataclass_fields__` for a stand-in: what `dataclasses.is_dataclass`, `fields`, `asdict` and
    `replace` read. Built as `Field` objects directly, because `@dataclass` itself would `exec` code
    made from the field names."""
    out = {}
    for name in fields:
        f = dataclasses.field(default=None)
        f.name, f.type, f.kw_only = name, typing.Any, False
        f._field_type = dataclasses._FIELD  # what the decorator sets on an ordinary field
        out[name] = f
    return out


class StandInDataclass:
    """Base of stand-ins for classes registered with `register_dataclass`: fields are attributes, and
    the stand-in is a dataclass (`dataclasses.is_dataclass`, `fields`, `asdict`, `replace` work).

    The context is torch's: [names of the non-None fields, names of the None fields].
    """

    _pt2f_fields: tuple = ()

    def __init__(self, /, *args, **kwargs):  # self positional-only: a field may be named "self"
        fields = self._pt2f_fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes {len(fields)} fields, got {len(args)}")
        values = dict(zip(fields, args))
        for k, v in kwargs.items():
            if k not in fields or k in values:
                raise TypeError(f"{type(self).__name__} got an unexpected or repeated field {k!r}")
            values[k] = v
        for f in fields:
            self.__dict__[f] = values.get(f)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self._pt2f_fields)})"

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) is getattr(other, f) or getattr(self, f) == getattr(other, f)
                   for f in self._pt2f_fields)

    __hash__ = None


def _dataclass_flatten(obj):
    values, flat, none = [], [], []
    for f in obj._pt2f_fields:
        v = getattr(obj, f)
        if v is None:
            none.append(f)
        else:
            values.append(v)
            flat.append(f)
    return values, [flat, none]


def _dataclass_unflatten_for(cls):
    def unflatten(values, context):
        flat, none = context
        return cls(**dict(zip(flat, values, strict=True)), **dict.fromkeys(none))
    return unflatten


def _dataclass_flatten_with_keys(obj):
    values, (flat, none) = _dataclass_flatten(obj)
    return [(pytree.GetAttrKey(k), v) for k, v in zip(flat, values)], flat


class StandInNode:
    """Base of stand-ins for other registered classes: the children in order (`obj[i]`, iteration), as
    attributes when the file names them (`obj.<field>`), and the node's context (`obj.context`, as saved:
    the class's dumpable form when it has one)."""

    _pt2f_fields: tuple = ()

    def __init__(self, values, context=None):
        self._pt2f_values = list(values)
        self._pt2f_context = context

    @property
    def context(self):
        return self._pt2f_context

    def __getattr__(self, name):
        fields = type(self)._pt2f_fields
        if name in fields:
            return self.__dict__["_pt2f_values"][fields.index(name)]
        raise AttributeError(f"{type(self).__name__!r} stand-in has no field {name!r}")

    def __getitem__(self, i):
        return self._pt2f_values[i]

    def __len__(self):
        return len(self._pt2f_values)

    def __iter__(self):
        return iter(self._pt2f_values)

    def __repr__(self):
        fields = type(self)._pt2f_fields
        items = ([f"{f}={v!r}" for f, v in zip(fields, self._pt2f_values)] if len(fields) == len(self._pt2f_values)
                 else [repr(v) for v in self._pt2f_values])
        return f"{type(self).__name__}({', '.join(items)}; context={self._pt2f_context!r})"


def _node_flatten(obj):
    return list(obj._pt2f_values), obj._pt2f_context


def _node_unflatten_for(cls):
    def unflatten(values, context):
        return cls(values, context)
    return unflatten


def _node_flatten_with_keys(obj):
    fields = type(obj)._pt2f_fields
    if len(fields) == len(obj._pt2f_values):
        return [(pytree.GetAttrKey(f), v) for f, v in zip(fields, obj._pt2f_values)], obj._pt2f_context
    return [(pytree.SequenceKey(i), v) for i, v in enumerate(obj._pt2f_values)], obj._pt2f_context


#: flavor -> (base class, flatten, unflatten factory, flatten_with_keys)
_FLAVORS = {
    "mapping": (StandInMapping, _mapping_flatten, _mapping_unflatten_for, _mapping_flatten_with_keys),
    "dataclass": (StandInDataclass, _dataclass_flatten, _dataclass_unflatten_for, _dataclass_flatten_with_keys),
    "node": (StandInNode, _node_flatten, _node_unflatten_for, _node_flatten_with_keys),
}


def custom_standin(type_name: str, flavor: str, fields=(), *, keys_from_context: bool = False,
                   declared: bool = False) -> type | None:
    """A registered pytree node class standing in for `type_name`; None when a check fails.

    `fields` are the node's field names as the file lists them (dataclass: all
    fields, non-None ones first; node: attribute names of the children).
    `keys_from_context` records that the file kept the node's keys (dict-like
    classes), so that re-saving writes them again; `declared` that the file
    listed a dataclass's fields in declaration order (all of them), so that
    re-saving lists them so again.
    """
    fields = tuple(fields)
    if flavor not in _FLAVORS or not _valid_type_name(type_name) or not _names_ok(fields):
        return None
    if flavor == "mapping" and fields:
        return None

    def make():
        base, flatten, unflatten_for, with_keys = _FLAVORS[flavor]
        ns = {"_pt2f_fields": fields, "_pt2f_flavor": flavor, "_pt2f_keys_from_context": keys_from_context,
              "_pt2f_declared": declared}
        if base is StandInMapping:
            ns["__slots__"] = ()  # values live in the dict itself
        if base is StandInDataclass:
            ns["__dataclass_fields__"] = _dataclass_fields(fields)
            ns["__match_args__"] = fields
        cls = type(type_name.rpartition(".")[2], (base,), _namespace(type_name, ns))
        # Registered under the file's name (so torch.export.save of a loaded program can name it), unless a
        # real class holds that name: a file must never redirect torch's registry away from a real class.
        name = type_name if _name_is_free(type_name) else None
        pytree.register_pytree_node(cls, flatten, unflatten_for(cls), serialized_type_name=name,
                                    flatten_with_keys_fn=with_keys)
        if name is not None:
            _unlist_name(name, cls)
        return cls

    return _cached(("custom", flavor, type_name, fields, keys_from_context, declared), make)
