"""The schema as the codecs see it: per-class field descriptors built once from model.FIELDS.

The generated model only carries data (`FIELDS`, `UNIONS`, `ENUMS`); this module
turns it into small objects the generic codecs walk (ranges for integer types,
union member maps, enum name maps), so each codec does not re-derive them.
"""

from __future__ import annotations

import struct

from pt2format._generated import model
from pt2format._strings import CHECKERS
from pt2format.errors import EncodingError

# Integer ranges of the scalar types named in model.FIELDS.
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "uint8": (0, (1 << 8) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1),
}
FLOAT_TYPES = ("float32", "float64")
# struct format characters and sizes of FlatBuffers scalars.
FMT = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
       "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d"}
SIZE = {k: struct.calcsize("<" + v) for k, v in FMT.items()}


def float_bits(x: float) -> bytes:
    """The IEEE-754 binary64 pattern, so -0.0 and NaN payloads compare exactly."""
    return struct.pack("<d", x)


class Field:
    """One field of a table or struct, with everything a codec needs to check and convert it."""

    __slots__ = ("name", "id", "kind", "elem", "ref", "default", "deprecated", "required",
                 "cls", "members", "member_index", "enum_names", "enum_values", "lo", "hi", "is_float",
                 "scalar", "default_bits", "string_class")

    def __init__(self, spec: tuple):
        (self.name, self.id, self.kind, self.elem, self.ref, self.default,
         self.deprecated, self.required) = spec
        self.cls = None
        self.string_class = None  # set by ClassInfo from the class's STRING_CLASSES
        self.members = ()
        self.member_index = {}
        self.enum_names = {}
        self.enum_values = {}
        self.lo = self.hi = None
        self.is_float = False
        self.default_bits = None
        # The scalar type name of this field or of its vector elements.
        scalar = None
        if self.kind in ("scalar", "enum"):
            scalar = self.elem
        elif self.kind == "vector" and self.elem not in ("string", "table", "struct"):
            scalar = self.elem.split(":", 1)[-1]
        self.scalar = scalar
        if scalar in INT_RANGES:
            self.lo, self.hi = INT_RANGES[scalar]
        self.is_float = scalar in FLOAT_TYPES
        if self.kind == "scalar" and self.is_float:
            self.default_bits = float_bits(self.default)
        if self.kind in ("table", "struct") or (self.kind == "vector" and self.elem in ("table", "struct")):
            self.cls = model.TABLES[self.ref]
        if self.kind == "union":
            self.members = tuple(model.TABLES[n] for n in model.UNIONS[self.ref])
            self.member_index = {c: i + 1 for i, c in enumerate(self.members)}
        enum_ref = self.ref if (self.kind == "enum" or (self.kind == "vector" and str(self.elem).startswith("enum:"))) else None
        if enum_ref is not None:
            enum = model.ENUMS[enum_ref]
            self.enum_names = {int(v): v.name for v in enum}
            self.enum_values = {v.name: int(v) for v in enum}

    @property
    def is_enum(self) -> bool:
        return bool(self.enum_names)


class ClassInfo:
    """Fields of one generated class, in id order, with the extra facts codecs need."""

    __slots__ = ("cls", "name", "fields", "live", "is_struct", "max_id", "layout", "required")

    def __init__(self, cls):
        self.cls = cls
        self.name = cls.__name__
        self.fields = tuple(Field(s) for s in cls.FIELDS)
        for f in self.fields:
            f.string_class = cls.STRING_CLASSES.get(f.name)
        self.live = tuple(f for f in self.fields if not f.deprecated)
        self.is_struct = cls.IS_STRUCT
        self.max_id = max((f.id for f in self.fields), default=-1)
        self.layout = getattr(cls, "STRUCT_LAYOUT", None)
        self.required = tuple(f for f in self.live if f.required)


def check_class(s, f: Field, path):
    """Check a decoded string (or each string of a list) against its field's string class."""
    c = CHECKERS[f.string_class]
    where = render(path)
    if type(s) is list:
        for x in s:
            c(x, where)
    elif s is not None:
        c(s, where)
    return s


INFO = {name: ClassInfo(cls) for name, cls in model.TABLES.items()}
INFO_BY_CLASS = {info.cls: info for info in INFO.values()}
ROOT = model.TABLES[model.ROOT_TABLE]


def checked_info(value, f: Field, path) -> ClassInfo:
    """The ClassInfo of `value`, which must be exactly field `f`'s table or struct class."""
    if type(value) is not f.cls:
        what = "struct" if f.cls.IS_STRUCT else "table"
        raise EncodingError(f"wrong {what} type", path=render(path), expected=f.ref, got=type(value).__name__)
    return INFO_BY_CLASS[f.cls]


def info_of(obj, path: str) -> ClassInfo:
    """The ClassInfo of a model object, or an EncodingError naming the path."""
    info = INFO_BY_CLASS.get(type(obj))
    if info is None:
        raise EncodingError("not a pt2format model object", path=render(path),
                            expected="a model table", got=type(obj).__name__)
    return info


def join(path, name):
    """A lazy field path: (parent, name), rendered only when an error needs it (see `render`)."""
    return (path, name)


def render(path) -> str | None:
    """`programs[0].graph.nodes[3]` from a lazy path (nested (parent, name-or-index) tuples) or a str."""
    parts = []
    while isinstance(path, tuple):
        path, last = path
        parts.append(last)
    if path:
        parts.append(path)
    out = ""
    for part in reversed(parts):
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out or None


def check_int(value, f: Field, path: str, exc=EncodingError):
    """An exact integer of the field's type; bools are not integers."""
    if type(value) is not int:
        if isinstance(value, int) and not isinstance(value, bool):
            value = int(value)
        else:
            raise exc("wrong type", path=render(path), expected=f"integer ({f.scalar})", got=_tname(value))
    if not f.lo <= value <= f.hi:
        raise exc("integer out of range", path=render(path), expected=f"{f.scalar} in [{f.lo}, {f.hi}]", got=value)
    return value


def check_float(value, path: str, exc=EncodingError):
    if type(value) is float:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            raise exc("integer too large for a float", path=render(path), expected="float", got=value) from None
    raise exc("wrong type", path=render(path), expected="float", got=_tname(value))


def check_bool(value, path: str, exc=EncodingError):
    if type(value) is bool:
        return value
    raise exc("wrong type", path=render(path), expected="bool", got=_tname(value))


def check_str(value, path: str, exc=EncodingError):
    if type(value) is str:
        return value
    raise exc("wrong type", path=render(path), expected="string", got=_tname(value))


def _tname(value) -> str:
    return type(value).__name__
