"""Builds FlatBuffers bytes from a model tree: deterministic, defaults omitted bit for bit.

The builder works like flatbuffers' own (children first, back to front) but
keeps a list of byte chunks and each object's distance from the end of the
buffer, so nothing is moved while building and the final buffer is one join.
A scalar is written only when its bytes differ from the default's (so -0.0
and NaN payloads survive), empty vectors and None are omitted, identical
strings and vtables are shared. The output starts with the root offset and
the file identifier "P2FP".
"""

from __future__ import annotations

import struct

from pt2format._codecs import _schema as S
from pt2format._generated import model
from pt2format.errors import EncodingError

_IDENT = model.FILE_IDENTIFIER.encode("ascii")
_U32 = struct.Struct("<I")
_ZEROS = bytes(64)


def _struct_format(layout) -> tuple[str, int]:
    """A struct.pack format (with padding) for a STRUCT_LAYOUT, and its alignment."""
    size, fields = layout
    fmt, pos, align = "<", 0, 1
    for _, off, ch in sorted(fields, key=lambda x: x[1]):
        if off > pos:
            fmt += f"{off - pos}x"
        fmt += ch
        n = struct.calcsize("<" + ch)
        pos = off + n
        align = max(align, n)
    if size > pos:
        fmt += f"{size - pos}x"
    return fmt, align


STRUCTS = {name: _struct_format(info.layout) + (struct.Struct(_struct_format(info.layout)[0]),)
           for name, info in S.INFO.items() if info.is_struct}


class Builder:
    """Appends objects back to front; each `add_*` returns the object's distance from the buffer end."""

    __slots__ = ("chunks", "size", "strings", "vtables")

    def __init__(self):
        self.chunks = []
        self.size = 0
        self.strings = {}
        self.vtables = {}

    def add_string(self, s: str) -> int:
        d = self.strings.get(s)
        if d is not None:
            return d
        b = s.encode("utf-8")
        n = len(b)
        size = self.size
        pad = -(size + n + 1) & 3
        chunks = self.chunks
        chunks.append(_ZEROS[:pad + 1])  # the terminating NUL, then padding
        chunks.append(b)
        chunks.append(_U32.pack(n))
        d = self.size = size + pad + n + 5
        self.strings[s] = d
        return d

    def add_vector(self, body: bytes, count: int, align: int) -> int:
        """A vector whose element bytes are `body`; `align` is max(element alignment, 4)."""
        size = self.size
        pad = -(size + len(body)) % align
        chunks = self.chunks
        if pad:
            chunks.append(_ZEROS[:pad])
        chunks.append(body)
        chunks.append(_U32.pack(count))
        d = self.size = size + pad + len(body) + 4
        return d

    def add_offset_vector(self, dists: list) -> int:
        """A vector of offsets to objects already added (tables or strings)."""
        n = len(dists)
        size = self.size
        pad = -size & 3
        d = size + pad + 4 * n + 4
        body_start = d - 4
        body = struct.pack(f"<{n}I", *[body_start - 4 * i - b for i, b in enumerate(dists)])
        chunks = self.chunks
        if pad:
            chunks.append(_ZEROS[:pad])
        chunks.append(body)
        chunks.append(_U32.pack(n))
        self.size = d
        return d

    def add_table(self, fields: list) -> int:
        """Add a table. `fields` holds (slot, size, align, fmt, value) for inline values and
        (slot, 4, 4, None, dist) for offsets to objects already added."""
        # Inline layout: the soffset at 0, then fields by decreasing alignment (stable, so by slot).
        fields.sort(key=lambda x: -x[2])
        fmt = ["<i"]
        pos = 4
        align = 4
        offsets = []
        for slot, sz, al, f, _ in fields:
            pad = -pos % al
            if pad:
                fmt.append(f"{pad}x")
                pos += pad
            offsets.append(pos)
            pos += sz
            fmt.append(f or "I")
            if al > align:
                align = al
        obj_size = pos
        size = self.size
        pad = -(size + obj_size) % align
        t = size + pad + obj_size
        nslots = max((x[0] for x in fields), default=-1) + 1
        slots = [0] * nslots
        values = []
        for (slot, _, _, f, v), off in zip(fields, offsets):
            slots[slot] = off
            values.append(v if f is not None else t - off - v)
        vt = struct.pack(f"<HH{nslots}H", 4 + 2 * nslots, obj_size, *slots)
        v_dist = self.vtables.get(vt)
        new_vt = v_dist is None
        if new_vt:
            v_dist = t + len(vt)
        obj = struct.pack("".join(fmt), v_dist - t, *values)
        chunks = self.chunks
        if pad:
            chunks.append(_ZEROS[:pad])
        chunks.append(obj)
        self.size = t
        if new_vt:
            chunks.append(vt)
            self.size = v_dist
            self.vtables[vt] = v_dist
        return t

    def finish(self, root: int) -> bytes:
        size = self.size
        pad = -(size + 8) & 7
        if pad:
            self.chunks.append(_ZEROS[:pad])
        total = size + pad + 8
        self.chunks.append(_IDENT)
        self.chunks.append(_U32.pack(total - root))
        self.chunks.reverse()
        return b"".join(self.chunks)


def encode(package) -> bytes:
    """Encode a Package tree as a FlatBuffers buffer with file identifier P2FP."""
    b = Builder()
    info = S.info_of(package, "")
    root = _write_table(b, package, info, "")
    return b.finish(root)


def _scalar_entry(v, f, slot, path):
    """(slot, size, align, fmt, value) for a scalar that differs from its default, else None."""
    sc = f.scalar
    if f.is_float:
        v = S.check_float(v, path)
        if S.float_bits(v) == f.default_bits:
            return None
        if sc == "float32":
            try:
                struct.pack("<f", v)
            except OverflowError:
                raise EncodingError("float out of float32 range", path=S.render(path), expected="float32", got=v) from None
    elif sc == "bool":
        v = S.check_bool(v, path)
        if v == f.default:
            return None
    else:
        v = S.check_int(v, f, path)
        if v == f.default:
            return None
    return (slot, S.SIZE[sc], S.SIZE[sc], S.FMT[sc], v)


def _write_table(b: Builder, obj, info, path) -> int:
    fields = []
    for f in info.live:
        v = getattr(obj, f.name)
        kind = f.kind
        p = S.join(path, f.name)
        if kind == "union":
            if v is None:
                continue
            idx = f.member_index.get(type(v))
            if idx is None:
                raise EncodingError("not a member of the union", path=S.render(p), expected=f"one of {f.ref}",
                                    got=type(v).__name__)
            d = _write_table(b, v, S.INFO_BY_CLASS[type(v)], p)
            fields.append((f.id - 1, 1, 1, "B", idx))
            fields.append((f.id, 4, 4, None, d))
        elif v is None:
            if f.required:
                raise EncodingError("required field is missing", path=S.render(p))
        elif kind in ("scalar", "enum"):
            e = _scalar_entry(v, f, f.id, p)
            if e is not None:
                fields.append(e)
        elif kind == "string":
            fields.append((f.id, 4, 4, None, _add_string(b, v, p)))
        elif kind == "table":
            fields.append((f.id, 4, 4, None, _write_table(b, v, S.checked_info(v, f, p), p)))
        elif kind == "struct":
            info = S.checked_info(v, f, p)
            fmt, align, st = STRUCTS[f.ref]
            raw = _pack_struct(v, info, st, p)
            # A struct is inline: give it the alignment of its widest field.
            fields.append((f.id, len(raw), align, f"{len(raw)}s", raw))
        else:
            if not isinstance(v, (list, tuple, bytes, bytearray)):
                raise EncodingError("wrong type", path=S.render(p), expected="list", got=type(v).__name__)
            if len(v):
                fields.append((f.id, 4, 4, None, _write_vector(b, v, f, p)))
    return b.add_table(fields)


def _add_string(b: Builder, s, path) -> int:
    try:
        return b.add_string(S.check_str(s, path))
    except UnicodeEncodeError as e:
        raise EncodingError(f"string is not encodable as UTF-8 (lone surrogate?): {e.reason}", path=S.render(path)) from None


def _pack_struct(v, info, st, path) -> bytes:
    vals = []
    for f in info.fields:
        x = getattr(v, f.name)
        p = S.join(path, f.name)
        if f.is_float:
            vals.append(S.check_float(x, p))
        elif f.scalar == "bool":
            vals.append(S.check_bool(x, p))
        else:
            vals.append(S.check_int(x, f, p))
    # STRUCT_LAYOUT lists fields in declaration order; the format is by offset (the same order).
    return st.pack(*vals)


def _write_vector(b: Builder, v, f, path) -> int:
    elem = f.elem
    n = len(v)
    if elem == "string":
        return b.add_offset_vector([_add_string(b, x, (path, i)) for i, x in enumerate(v)])
    if elem == "table":
        return b.add_offset_vector([_write_table(b, x, S.checked_info(x, f, (path, i)), (path, i)) for i, x in enumerate(v)])
    if elem == "struct":
        _, align, st = STRUCTS[f.ref]
        parts = [_pack_struct(x, S.checked_info(x, f, (path, i)), st, (path, i)) for i, x in enumerate(v)]
        return b.add_vector(b"".join(parts), n, max(align, 4))
    sc = f.scalar
    if sc == "uint8" and isinstance(v, (bytes, bytearray)):
        return b.add_vector(bytes(v), n, 4)
    if f.is_float:
        vals = [S.check_float(x, (path, i)) for i, x in enumerate(v)]
    elif sc == "bool":
        vals = [S.check_bool(x, (path, i)) for i, x in enumerate(v)]
    else:
        vals = [S.check_int(x, f, (path, i)) for i, x in enumerate(v)]
    return b.add_vector(struct.pack(f"<{n}{S.FMT[sc]}", *vals), n, max(S.SIZE[sc], 4))
