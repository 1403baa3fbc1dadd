"""share_equal: one object for equal objects of the `pt2f_shared` tables, so a converted tree shares as a saved one.

The FlatBuffers writer writes an object of a shared table (TensorMeta,
ModuleStackEntry) once and points every later reference at it, by identity.
The exporter makes one object per distinct shape, and a FlatBuffers file
decodes to one object per written one, so saving and rewriting a FlatBuffers
file share. A tree decoded from JSON or MessagePack has an object per
reference: `pt2format convert` to FlatBuffers calls this first, so its file is
as small and loads as fast as the exporter's.

Equal means equal in every field, floats by their bits (so 0.0 and -0.0, or
two NaN payloads, stay apart): what would be written as the same bytes.
"""

from __future__ import annotations

import struct

from pt2format._generated import model as m
from pt2format._generated.fb_reader import SHARED_TABLES
from pt2format._model_base import ModelObject

_SHARED_CLASSES = frozenset(getattr(m, name) for name in SHARED_TABLES)
_DOUBLE = struct.Struct("<d")


def _key(v):
    """A hashable value of a field: nested objects by type and fields, lists as tuples, floats by their bits."""
    t = type(v)
    if t is float:
        return (float, _DOUBLE.pack(v))
    if t is list:
        return (list, tuple(map(_key, v)))
    if isinstance(v, ModelObject):
        return (t, tuple(_key(getattr(v, n)) for n in t.__slots__))
    return (t, v)  # str, int, bool, None, enum members


def share_equal(root) -> int:
    """Point every reference to an object of a shared table at the first equal one; returns how many moved.

    Objects of shared tables are not walked into (their nested tables are not shared: regen.py refuses
    the attribute on any table whose nested tables nest again). Other objects are walked once each.
    """
    first: dict = {}
    moved = 0
    seen: set[int] = set()
    stack = [root]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        for name in type(o).__slots__:
            v = getattr(o, name)
            if type(v) is list:
                for i, x in enumerate(v):
                    if type(x) in _SHARED_CLASSES:
                        c = first.setdefault(_key(x), x)
                        if c is not x:
                            v[i] = c
                            moved += 1
                    elif isinstance(x, ModelObject):
                        stack.append(x)
            elif type(v) in _SHARED_CLASSES:
                c = first.setdefault(_key(v), v)
                if c is not v:
                    setattr(o, name, c)
                    moved += 1
            elif isinstance(v, ModelObject):
                stack.append(v)
    return moved
