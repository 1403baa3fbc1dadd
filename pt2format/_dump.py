"""Renders the canonical dump of SPEC.md §6: the JSON text every reader must reproduce byte for byte.

Every non-deprecated field that the file's own minor defines appears (absent
ones as their default, `null` or `[]`), unions as `f_type` + `f`, enums by
name, floats as the hex of their float64 bit pattern, keys sorted, no
whitespace. Independent of the program encoding, so the three encodings of one
tree dump identically; independent of the reader's minor (at or above the
file's), so adding a field in a later minor changes no golden dump. Which
minor defines each name comes from schema/history/ (pt2format/_generated/minors.py).
"""

from __future__ import annotations

import json
import struct

from pt2format._container.crc import crc32
from pt2format._generated import minors as _minors
from pt2format._generated import model as m
from pt2format._validate.label import check_label
from pt2format.errors import EncodingError, Pt2FormatError, VersionError

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


def _enum_render(enum_cls, minor: int):
    """Values the file's minor defines by name; any other (a newer minor's, or unknown) as its integer."""
    newer = _minors.ENUM_VALUE_MINOR.get(enum_cls.__name__, {})
    names = {int(v): v.name for v in enum_cls if newer.get(int(v), 0) <= minor}
    return lambda v: names.get(int(v), int(v))


def _scalar_render(element: str, ref, minor: int):
    if ref in m.ENUMS:
        return _enum_render(m.ENUMS[ref], minor)
    if element == "bool":
        return bool
    if element in _FLOATS:
        return float_hex
    return int


class _Plan:
    """Per-class rendering steps for one file minor, computed once from the generated FIELDS tables."""

    def __init__(self, minor: int):
        self.minor = minor
        self._plans = {}

    def plan(self, cls):
        p = self._plans.get(cls)
        if p is None:
            p = []
            minor = self.minor
            newer = _minors.FIELD_MINOR.get(cls.__name__, {})
            for name, _id, kind, element, ref, default, deprecated, _req in cls.FIELDS:
                if deprecated or newer.get(name, 0) > minor:
                    continue
                if kind in ("scalar", "enum"):
                    p.append((name, "scalar", _scalar_render(element, ref, minor), default))
                elif kind == "vector":
                    if element in ("table", "struct"):
                        p.append((name, "vtable", None, None))
                    elif element == "string":
                        p.append((name, "vstring", None, None))
                    else:
                        p.append((name, "vscalar", _scalar_render(element, ref, minor), None))
                elif kind == "union":
                    members = m.UNIONS[ref]
                    added = _minors.UNION_MEMBER_MINOR.get(ref, {})
                    late = {members[i - 1]: v for i, v in added.items() if v > minor}
                    p.append((name, kind, (ref, late), default))
                else:
                    p.append((name, kind, None, default))
            self._plans[cls] = p
        return p


_PLANS: dict = {}


def _plan_for(minor: int) -> _Plan:
    p = _PLANS.get(minor)
    if p is None:
        p = _PLANS[minor] = _Plan(minor)
    return p


def render(obj, path: str = "package", minor: int | None = None):
    """The dump rendering of one table or struct object (a dict of JSON-ready values), as the
    file's `minor` defines it (default: this reader's schema)."""
    return _render(obj, path, _plan_for(_minors.SCHEMA_VERSION[1] if minor is None else minor))


def _render(obj, path, plans):
    out = {}
    for name, kind, conv, default in plans.plan(type(obj)):
        v = getattr(obj, name)
        if kind == "scalar":
            out[name] = conv(default if v is None else v)
        elif kind == "string":
            out[name] = None if v is None else _string(v, f"{path}.{name}")
        elif kind in ("table", "struct"):
            out[name] = None if v is None else _render(v, f"{path}.{name}", plans)
        elif kind == "union":
            member = None if v is None else type(v).__name__
            if member in conv[1]:
                # A reader of the file's minor cannot hold this member and refuses it (SPEC.md section 8).
                raise VersionError(f"union {conv[0]} member {member} is defined by minor {conv[1][member]}, "
                                   f"newer than the file's", path=f"{path}.{name}_type",
                                   expected=f"a member of minor <= {plans.minor}", got=member)
            out[f"{name}_type"] = "NONE" if v is None else member
            out[name] = None if v is None else _render(v, f"{path}.{name}", plans)
        elif kind == "vtable":
            out[name] = [_render(x, f"{path}.{name}[{i}]", plans) for i, x in enumerate(v or ())]
        elif kind == "vstring":
            out[name] = [_string(x, f"{path}.{name}[{i}]") for i, x in enumerate(v or ())]
        else:
            out[name] = [conv(x) for x in (v or ())]
    return out


def dump_text(package, storage_crcs, minor: int | None = None) -> str:
    """The canonical dump of a decoded package and the CRC-32 of each storage's bytes.

    `minor` is the file's format minor (the header's); the dump renders only the
    names that minor defines. Default: `package.format_version.minor`.
    """
    if minor is None:
        fv = package.format_version
        minor = fv.minor if fv is not None else _minors.SCHEMA_VERSION[1]
    check_label(package)  # a newer name than the label is refused, never left out (SPEC.md §6, §8.1)
    doc = {"package": render(package, minor=minor), "storage_crc32": ["0x%08x" % c for c in storage_crcs]}
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def dump(path, **limits) -> str:
    """The canonical dump of the file at `path` (data CRCs computed from the bytes as stored)."""
    from pt2format._api import read

    with read(path, **limits) as f:
        crcs = [crc32(f.storage_view(i)) for i in range(len(f.package.storages))]
        try:
            return dump_text(f.package, crcs, minor=f.header.format_minor)
        except Pt2FormatError as e:
            raise e.with_context(file=f.path, section=f.header.sections[0].label(0))
