"""The one set of facts every emitter shares: flatc's base types, struct formats, sizes, integer ranges.

Before this module each generator redefined its own copy (and they could drift);
now the Python emitters, the JSON Schema post-processing and schema/evolution.py
all read these tables.
"""

from __future__ import annotations

import math
import struct

# reflection.fbs BaseType values
(NONE, UTYPE, BOOL, BYTE, UBYTE, SHORT, USHORT, INT, UINT, LONG, ULONG, FLOAT, DOUBLE, STRING, VECTOR, OBJ, UNION,
 ARRAY, VECTOR64) = range(19)

# Scalar base type -> the scalar name the model's FIELDS use.
SCALAR_NAMES = {
    UTYPE: "utype", BOOL: "bool", BYTE: "int8", UBYTE: "uint8", SHORT: "int16", USHORT: "uint16",
    INT: "int32", UINT: "uint32", LONG: "int64", ULONG: "uint64", FLOAT: "float32", DOUBLE: "float64",
}
# struct module format character of each scalar name (little-endian, no padding).
FMT = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
       "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d", "utype": "B"}
SIZE = {k: struct.calcsize("<" + v) for k, v in FMT.items()}
FLOATS = ("float32", "float64")
# Value range of each integer scalar name.
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "uint8": (0, (1 << 8) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1),
}
# The same facts keyed by base type (enum underlying types, struct layouts).
STRUCT_FMT = {b: FMT[n] for b, n in SCALAR_NAMES.items()}
INT_RANGES_BY_BASE = {b: INT_RANGES[n] for b, n in SCALAR_NAMES.items() if n in INT_RANGES}
# Short names of struct format characters (names of the generated unpackers).
FMT_NAMES = {"?": "bool", "b": "i8", "B": "u8", "h": "i16", "H": "u16", "i": "i32", "I": "u32",
             "q": "i64", "Q": "u64", "f": "f32", "d": "f64"}


def lit(v) -> str:
    """A Python literal for a default value (non-finite floats spelled so they evaluate)."""
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({str(v)!r})"
    return repr(v)


def struct_fmt(o) -> str:
    """The struct.Struct format of a schema struct, padding included (readers and writers share it)."""
    fmt, pos = "<", 0
    for f in sorted(o.fields, key=lambda f: f.offset):
        if f.offset > pos:
            fmt += f"{f.offset - pos}x"
        ch = STRUCT_FMT[f.type.base]
        fmt += ch
        pos = f.offset + struct.calcsize("<" + ch)
    if o.bytesize > pos:
        fmt += f"{o.bytesize - pos}x"
    return fmt


def struct_align(o) -> int:
    """Alignment of a schema struct: that of its widest field."""
    return max((struct.calcsize("<" + c) for c in struct_fmt(o)[1:] if c.isalpha() and c != "x"), default=1)
