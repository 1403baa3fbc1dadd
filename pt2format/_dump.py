"""Renders the canonical dump of SPEC.md §6: the JSON text every reader must reproduce byte for byte.

Every non-deprecated field appears (absent ones as their default, `null` or
`[]`), unions as `f_type` + `f`, enums by name, floats as the hex of their
float64 bit pattern, keys sorted, no whitespace. Independent of the program
encoding, so the three encodings of one tree dump identically.
"""

from __future__ import annotations

import json
import struct

from pt2format._container.crc import crc32
from pt2format._generated import model as m
from pt2format.errors import EncodingError

_D = struct.Struct("<d")
_Q = struct.Struct("<Q")
_FLOATS = ("float32", "float64")


def float_hex(x) -> str:
    """`"0x"` + 16 lowercase hex digits of the IEEE-754 binary64 bits of `x`."""
    return "0x%016x" % _Q.unpack(_D.pack(float(x)))[0]


def _string(s, path: str) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise EncodingError("string is not valid UTF-8", path=path, got=repr(s[e.start:e.end])) from None
    return s


def _enum_render(enum_cls):
    names = {int(v): v.name for v in enum_cls}
    return lambda v: names.get(int(v), int(v))


def _scalar_render(element: str, ref):
    if ref in m.ENUMS:
        return _enum_render(m.ENUMS[ref])
    if element == "bool":
        return bool
    if element in _FLOATS:
        return float_hex
    return int


class _Plan:
    """Per-class rendering steps, computed once from the generated FIELDS tables."""

    def __init__(self):
        self._plans = {}

    def plan(self, cls):
        p = self._plans.get(cls)
        if p is None:
            p = []
            for name, _id, kind, element, ref, default, deprecated, _req in cls.FIELDS:
                if deprecated:
                    continue
                if kind in ("scalar", "enum"):
                    p.append((name, "scalar", _scalar_render(element, ref), default))
                elif kind == "vector":
                    if element in ("table", "struct"):
                        p.append((name, "vtable", None, None))
                    elif element == "string":
                        p.append((name, "vstring", None, None))
                    else:
                        p.append((name, "vscalar", _scalar_render(element, ref), None))
                else:
                    p.append((name, kind, None, default))
            self._plans[cls] = p
        return p


_PLAN = _Plan()


def render(obj, path: str = "package"):
    """The dump rendering of one table or struct object (a dict of JSON-ready values)."""
    out = {}
    for name, kind, conv, default in _PLAN.plan(type(obj)):
        v = getattr(obj, name)
        if kind == "scalar":
            out[name] = conv(default if v is None else v)
        elif kind == "string":
            out[name] = None if v is None else _string(v, f"{path}.{name}")
        elif kind in ("table", "struct"):
            out[name] = None if v is None else render(v, f"{path}.{name}")
        elif kind == "union":
            out[f"{name}_type"] = "NONE" if v is None else type(v).__name__
            out[name] = None if v is None else render(v, f"{path}.{name}")
        elif kind == "vtable":
            out[name] = [render(x, f"{path}.{name}[{i}]") for i, x in enumerate(v or ())]
        elif kind == "vstring":
            out[name] = [_string(x, f"{path}.{name}[{i}]") for i, x in enumerate(v or ())]
        else:
            out[name] = [conv(x) for x in (v or ())]
    return out


def dump_text(package, storage_crcs) -> str:
    """The canonical dump of a decoded package and the CRC-32 of each storage's bytes."""
    doc = {"package": render(package), "storage_crc32": ["0x%08x" % c for c in storage_crcs]}
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def dump(path, **limits) -> str:
    """The canonical dump of the file at `path` (data CRCs computed from the bytes as stored)."""
    from pt2format._api import read

    with read(path, **limits) as f:
        crcs = [crc32(f.storage_view(i)) for i in range(len(f.package.storages))]
        return dump_text(f.package, crcs)
