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

import re
import struct

from pt2format._strings import CHECKERS
from pt2format.errors import EncodingError, LimitError, VersionError

STR = {str}
INT = {int}
BOOL = {bool}
FLOAT = {float}
NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
# SPEC.md §4: the canonical quiet NaN is "nan"; any other NaN is "nan:0x" + its 16 lowercase hex bits,
# so JSON keeps NaN payloads (and the sign of a NaN) as FlatBuffers and MessagePack do.
CANONICAL_NAN_BITS = 0x7FF8000000000000
_NAN_SPELLING = re.compile(r"nan:0x[0-9a-f]{16}")
_D = struct.Struct("<d")
_Q = struct.Struct("<Q")


def nan_of_spelling(x: str):
    """The NaN a "nan:0x<bits>" spelling names, or None when `x` is not one (one spelling per value)."""
    if _NAN_SPELLING.fullmatch(x) is None:
        return None
    bits = int(x[6:], 16)
    if bits & 0x7FF0000000000000 != 0x7FF0000000000000 or not bits & 0x000FFFFFFFFFFFFF or bits == CANONICAL_NAN_BITS:
        return None  # not a NaN, or the canonical one (spelled "nan")
    return _D.unpack(_Q.pack(bits))[0]


def nan_spelling(x: float) -> str:
    bits = _Q.unpack(_D.pack(x))[0]
    return "nan" if bits == CANONICAL_NAN_BITS else f"nan:0x{bits:016x}"
#: String-class checker by class name (pt2format._strings), for `_SC_<class>` aliases.
STRING_CHECKS = CHECKERS

#: Objects of a pt2f_shared table after which a cache of them that has had no hit is dropped (the generated
#: reader's per-offset cache, the loader's per-TensorMeta record): a file whose writer shares nothing (any
#: released pt2format's, another producer's) then decodes and loads at the speed it had without one.
SHARED_GIVE_UP = 1024


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


def floats_of_numbers(v):
    """MessagePack: a list of floats (ints converted)."""
    if FLOAT.issuperset(map(type, v)):
        return v
    return check_each(v, check_float)


def json_float(x):
    """JSON decode side: a JSON number or non-finite spelling as a float."""
    if type(x) is int:
        try:
            return float(x)
        except OverflowError:
            raise EncodingError("integer too large for a float", expected="float", got=f"{len(str(x))} digits") from None
    if type(x) is str:
        y = NON_FINITE.get(x)
        if y is None:
            y = nan_of_spelling(x)
        if y is not None:
            return y
        raise EncodingError("wrong float spelling", expected='"nan", "nan:0x<16 hex digits>", "inf" or "-inf"',
                            got=repr(x))
    raise EncodingError("wrong type", expected="float", got=_tname(x))


def json_floats(v):
    if FLOAT.issuperset(map(type, v)):
        return v
    return check_each(v, lambda x: x if type(x) is float else json_float(x))


def out_float(x):
    """A float as JSON: finite floats as numbers, others as "nan" (or "nan:0x<bits>"), "inf" or "-inf"."""
    if x - x == 0.0:
        return x
    return nan_spelling(x) if x != x else ("inf" if x > 0 else "-inf")


def out_floats(v):
    if not FLOAT.issuperset(map(type, v)):
        v = check_each(v, check_float)
    s = sum(v)
    if s - s == 0.0:  # every element finite (a finite sum can still overflow: then check each)
        return v
    return [out_float(x) for x in v]


def bools(v):
    if not BOOL.issuperset(map(type, v)):
        check_each(v, check_bool)
    return v


def strs(v):
    if not STR.issuperset(map(type, v)):
        check_each(v, check_str)
    return v


def as_list(x):
    """A vector field's value as a list (None is empty); a non-sequence is an error."""
    if x is None:
        return []
    if isinstance(x, (list, tuple, bytes, bytearray)):
        return list(x)
    raise EncodingError("wrong type", expected="list", got=_tname(x))


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


def enums_in(v, names, lo, hi):
    """A list of JSON enum values; the error names the element's index."""
    return check_each(v, lambda x: enum_in(x, names, lo, hi))


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


# ---------------------------------------------------------------------------
# Checked scalars with the messages every encoding shares (the slow branch of
# the generated `type(x) is not int or not lo <= x <= hi` tests)
# ---------------------------------------------------------------------------

def _tname(x) -> str:
    return type(x).__name__


def check_int(x, lo, hi, name):
    """An exact integer of scalar type `name` in [lo, hi]; int subclasses (IntEnum) become ints, bools are refused."""
    if type(x) is not int:
        if isinstance(x, int) and not isinstance(x, bool):
            x = int(x)
        else:
            raise EncodingError("wrong type", expected=f"integer ({name})", got=_tname(x))
    if not lo <= x <= hi:
        raise EncodingError("integer out of range", expected=f"{name} in [{lo}, {hi}]", got=x)
    return x


def check_ints(v, lo, hi, name):
    """A list of integers of scalar type `name`; the error names the first bad element's index."""
    if INT.issuperset(map(type, v)) and (not v or (lo <= min(v) and max(v) <= hi)):
        return v
    out = []
    for i, x in enumerate(v):
        try:
            out.append(check_int(x, lo, hi, name))
        except EncodingError as e:
            note(e, i, None)
            raise
    return out


def check_float(x):
    """A float; ints (not bools) convert."""
    if type(x) is float:
        return x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        try:
            return float(x)
        except OverflowError:
            raise EncodingError("integer too large for a float", expected="float", got=x) from None
    raise EncodingError("wrong type", expected="float", got=_tname(x))


def check_bool(x):
    if type(x) is bool:
        return x
    raise EncodingError("wrong type", expected="bool", got=_tname(x))


def check_str(x):
    if type(x) is str:
        return x
    raise EncodingError("wrong type", expected="string", got=_tname(x))


def check_each(v, check):
    """`check` applied to every element; the error names the element's index."""
    out = []
    for i, x in enumerate(v):
        try:
            out.append(check(x))
        except (EncodingError, VersionError) as e:
            note(e, i, None)
            raise
    return out


# ---------------------------------------------------------------------------
# Field paths of errors
#
# Every generated table function runs its body in `try:` (free in CPython 3.11+
# when nothing is raised) and keeps the field it is working on in a local
# marker. When an error passes through, the function notes (marker, key, its
# locals) on the exception; the codec entry point then renders the notes,
# innermost first, into `programs[0].graph.nodes[3].name`. A marker is a field
# name, or (field name, container) for a vector of tables: the index of the
# failing element is found only then, from the inner function's key (its
# buffer position, or the element object itself).
# ---------------------------------------------------------------------------

def note(e, field, key, loc=None, slots=None):
    """Record one level of the path on `e` (called from generated except blocks)."""
    if field is None and slots is not None:
        slot = e.__dict__.pop("slot", None)
        if slot is not None:
            field = slots[slot]
    trail = e.__dict__.get("trail")
    if trail is None:
        trail = e.__dict__["trail"] = []
    trail.append((field, key, loc))


def _index(container, loc, inner_key):
    """Index of the element whose key is `inner_key` inside a vector marker's container."""
    if container == "fb":  # a FlatBuffers vector of tables at loc["q"] of loc["buf"]
        buf, q = loc["buf"], loc["q"]
        cnt = struct.unpack_from("<I", buf, q)[0]
        for i in range(cnt):
            pos = q + 4 + 4 * i
            if pos + struct.unpack_from("<I", buf, pos)[0] == inner_key:
                return i
        return None
    seq = loc.get(container)
    if seq is None:
        return None
    for i, x in enumerate(seq):
        if x is inner_key:
            return i
    return None


def locate(e):
    """Turn the notes on `e` into its `path` (a no-op for an error without notes); returns `e`."""
    trail = e.__dict__.pop("trail", None)
    if not trail:
        return e
    parts = []
    for j in range(len(trail) - 1, -1, -1):  # outermost first
        field, _, loc = trail[j]
        if field is None:
            continue
        if isinstance(field, int):  # an element index noted by check_ints / check_each
            parts.append(field)
            continue
        if isinstance(field, tuple):
            name, container = field
            parts.append(name)
            if j > 0 and loc is not None and trail[j - 1][2] is not None:
                i = _index(container, loc, trail[j - 1][1])
                if i is not None:
                    parts.append(i)
            continue
        parts.append(field)
    out = ""
    for p in parts:
        out = out + f"[{p}]" if isinstance(p, int) else (f"{out}.{p}" if out else p)
    if out:
        e.path = out
        e.args = (e._render(),)
    return e


PATH_ERRORS = (EncodingError, LimitError, VersionError)
# What a generated encoder may meet in a malformed tree: our own errors, and Python's
# when a value is not what the schema wants (struct.pack on a str, len() of an int).
ENCODE_ERRORS = PATH_ERRORS + (TypeError, AttributeError, ValueError, OverflowError, KeyError, IndexError,
                               struct.error)


def encode_error(e):
    """The typed error, with its field path, for what a generated encoder raised."""
    if isinstance(e, PATH_ERRORS):
        return locate(e)
    if isinstance(e, UnicodeEncodeError):
        err = EncodingError(f"string is not encodable as UTF-8 (lone surrogate?): {e.reason}")
        err.__dict__["trail"] = e.__dict__.pop("trail", None)
        return locate(err)
    err = EncodingError(f"value does not fit the schema: {type(e).__name__}: {e}", expected="a value of the field's type")
    err.__dict__["trail"] = e.__dict__.pop("trail", None)
    return locate(err)


def fail_slot(msg, offset, expected, got, slot):
    """A FlatBuffers vtable entry is bad: the table function names the field from `slot`."""
    e = EncodingError(msg, offset=offset, expected=expected, got=got)
    e.slot = slot
    raise e
