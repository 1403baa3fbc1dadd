"""A byte-level FlatBuffers builder, for tests that craft hostile buffers by hand.

It works like flatbuffers' own (children first, back to front) but keeps a
list of byte chunks and each object's distance from the end of the buffer.
It knows nothing of the schema: a test adds tables slot by slot, which is how
it builds buffers the pt2format writer never would (shared subtables,
out-of-range offsets). pt2format's own writer is the generated
pt2format/_generated/fb_writer.py.
"""

from __future__ import annotations

import struct

from pt2format._generated import model

_IDENT = model.FILE_IDENTIFIER.encode("ascii")
_U32 = struct.Struct("<I")
_ZEROS = bytes(64)


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
