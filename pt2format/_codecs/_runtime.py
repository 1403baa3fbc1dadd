"""The helpers every generated codec module calls, written once by hand.

schema/codegen/ emits one specialized function per table into
pt2format/_generated/{fb_reader,fb_writer,msgpack_codec,json_codec}.py; what
those functions share (error raisers, scalar and list checks, the FlatBuffers
table layout of the writer, the string-class checkers) lives here instead of
being emitted into each module, so a fix lands in every encoding at once.
The names are imported by the generated modules under their historical
underscore aliases (`_bad`, `_int`, ...).
"""

from __future__ import annotations

import struct

from pt2format._strings import CHECKERS
from pt2format.errors import EncodingError, VersionError

STR = {str}
INT = {int}
BOOL = {bool}
FLOAT = {float}
NUM = {float, int}
NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
#: String-class checker by class name (pt2format._strings), for `_SC_<class>` aliases.
STRING_CHECKS = CHECKERS


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

def bad(msg, got=None):
    """A value does not fit its field (text encodings and writers: no byte offset)."""
    raise EncodingError(msg, got=got)


def fail(msg, offset, expected=None, got=None):
    """A FlatBuffers buffer is malformed at `offset`."""
    raise EncodingError(msg, offset=offset, expected=expected, got=got)


def newer(msg, offset, expected=None, got=None):
    """A FlatBuffers buffer uses a union member this reader's minor does not define (SPEC.md section 8)."""
    raise VersionError(msg, offset=offset, expected=expected, got=got)


# ---------------------------------------------------------------------------
# Scalars and lists of scalars (MessagePack and JSON)
# ---------------------------------------------------------------------------

def int_in(x, lo, hi):
    """An int subclass (IntEnum) as a plain int; anything else, bools included, is an error."""
    if isinstance(x, int) and type(x) is not bool:
        x = int(x)
        if lo <= x <= hi:
            return x
        bad(f"integer out of range [{lo}, {hi}]", x)
    bad("expected an integer", type(x).__name__)


def ints_in(v, lo, hi):
    """A list of integers in [lo, hi] (int subclasses converted)."""
    if not INT.issuperset(map(type, v)):
        return [int_in(e, lo, hi) for e in v]
    if v and (min(v) < lo or max(v) > hi):
        bad(f"integer out of range [{lo}, {hi}]")
    return v


def float_of_int(x):
    """MessagePack: a float field may arrive as an exact int; nothing else converts."""
    if type(x) is int:
        return float(x)
    bad("expected a float", type(x).__name__)


def floats_of_numbers(v):
    """MessagePack: a list of floats (ints converted)."""
    if FLOAT.issuperset(map(type, v)):
        return v
    if not NUM.issuperset(map(type, v)):
        bad("expected floats")
    return [float(e) for e in v]


def float_of_number(x):
    """JSON encode side: a non-float number as a float."""
    if isinstance(x, (int, float)) and type(x) is not bool:
        return float(x)  # OverflowError for huge ints: the caller turns it into EncodingError
    bad("expected a float", type(x).__name__)


def json_float(x):
    """JSON decode side: a JSON number or non-finite spelling as a float."""
    if type(x) is int:
        return float(x)
    if type(x) is str:
        y = NON_FINITE.get(x)
        if y is not None:
            return y
    bad("expected a float", type(x).__name__)


def json_floats(v):
    if FLOAT.issuperset(map(type, v)):
        return v
    return [x if type(x) is float else json_float(x) for x in v]


def out_float(x):
    """A float as JSON: finite floats as numbers, others as "nan", "inf" or "-inf"."""
    if x - x == 0.0:
        return x
    return "nan" if x != x else ("inf" if x > 0 else "-inf")


def out_floats(v):
    if not FLOAT.issuperset(map(type, v)):
        v = [x if type(x) is float else float_of_number(x) for x in v]
    s = sum(v)
    if s - s == 0.0:  # every element finite (a finite sum can still overflow: then check each)
        return v
    return [out_float(x) for x in v]


def bools(v):
    if not BOOL.issuperset(map(type, v)):
        bad("expected bools")
    return v


def strs(v):
    if not STR.issuperset(map(type, v)):
        bad("expected strings")
    return v


def as_list(x):
    """A vector field's value as a list (None is empty); a non-sequence is an error."""
    if x is None:
        return []
    if isinstance(x, (list, tuple, bytes, bytearray)):
        return list(x)
    bad("expected a list", type(x).__name__)


# ---------------------------------------------------------------------------
# JSON decoding
# ---------------------------------------------------------------------------

def skipped(o, known, keep):
    """Members of the objects inside the keys of `o` not in `known` (a newer minor's fields, ignored).

    Keeps their keys and strings, so the duplicate-key proof of the caller still
    accounts for every ':' of the text (pt2format/_codecs/json.py).
    """
    n = 0
    stack = []
    for k, v in o.items():
        if k not in known:
            keep(k)
            stack.append(v)
    while stack:
        x = stack.pop()
        t = type(x)
        if t is dict:
            n += len(x)
            for k, v in x.items():
                keep(k)
                stack.append(v)
        elif t is list:
            stack.extend(x)
        elif t is str:
            keep(x)
    return n


def enum_in(x, names, lo, hi):
    """A JSON enum value: its name, or an integer of the underlying type (unknown values)."""
    if type(x) is str:
        y = names.get(x)
        if y is None:
            raise VersionError("enum value name unknown to this reader: defined by a newer minor (SPEC.md section 8)",
                               got=x)
        return y
    if type(x) is not int or not lo <= x <= hi:
        bad("expected an enum name or integer", x)
    return x


# ---------------------------------------------------------------------------
# FlatBuffers writing
# ---------------------------------------------------------------------------

def fb_layout(fields, mask):
    """Inline layout of a table with the fields whose bits are set in `mask`.

    `fields` lists (slot, size, align, format) in layout order (alignment
    descending, then slot). Returns (packer, offsets by slot, object size,
    object alignment, vtable bytes).
    """
    fmt = ["<i"]
    pos = 4
    align = 4
    nslots = 0
    offs = {}
    for i, (slot, size, al, f) in enumerate(fields):
        if not mask >> i & 1:
            continue
        pad = -pos % al
        if pad:
            fmt.append(f"{pad}x")
            pos += pad
        offs[slot] = pos
        pos += size
        fmt.append(f)
        align = max(align, al)
        nslots = max(nslots, slot + 1)
    slots = [offs.get(s, 0) for s in range(nslots)]
    vt = struct.pack(f"<HH{nslots}H", 4 + 2 * nslots, pos, *slots)
    return (struct.Struct("".join(fmt)).pack,
            tuple(slots) + (0,) * (max((f[0] for f in fields), default=-1) + 1 - nslots), pos, align, vt)
