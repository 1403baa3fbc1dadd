"""A reflection-driven FlatBuffers reader: slow, simple, and the reference for the generated one.

It walks model.FIELDS instead of specialized code, checking every offset,
length and vtable against the buffer exactly as the generated reader
(pt2format/_generated/fb_reader.py) does. Tests decode every tree with both
and compare; production code uses the generated reader.
"""

from __future__ import annotations

import struct

from pt2format._codecs import _schema as S
from pt2format._generated import model
from pt2format.errors import EncodingError, LimitError, VersionError

_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")


class _Reader:
    def __init__(self, buf, max_depth):
        self.buf = buf
        self.n = len(buf)
        self.max_depth = max_depth
        self.budget = self.n + 64  # vector elements + vector visits; see flatbuffers.py
        self.strings = {}

    def bad(self, msg, path, offset, expected=None, got=None):
        raise EncodingError(msg, path=S.render(path), offset=offset, expected=expected, got=got)

    def u32(self, pos, path):
        if pos < 0 or pos + 4 > self.n:
            self.bad("offset out of range", path, pos, f"<= {self.n - 4}", pos)
        return _U32.unpack_from(self.buf, pos)[0]

    def spend(self, k, path, pos):
        self.budget -= k
        if self.budget < 0:
            raise LimitError("buffer expands to more objects than its size allows (shared-offset bomb?)",
                             path=S.render(path), offset=pos)

    def table(self, pos, info, path, depth):
        if depth > self.max_depth:
            raise LimitError("nesting deeper than max_depth", path=S.render(path), offset=pos,
                             expected=f"<= {self.max_depth}", got=depth)
        self.spend(4, path, pos)  # 4 per table visit (SPEC.md §10): a fan-out of shared subtables stays bounded
        n = self.n
        if pos < 0 or pos + 4 > n:
            self.bad("table offset out of range", path, pos, f"<= {n - 4}", pos)
        vt = pos - _I32.unpack_from(self.buf, pos)[0]
        if vt < 0 or vt + 4 > n or vt & 1:
            self.bad("vtable offset out of range", path, vt)
        vsize, osize = struct.unpack_from("<HH", self.buf, vt)
        if vsize < 4 or vsize & 1 or vt + vsize > n:
            self.bad("bad vtable size", path, vt, "even, >= 4, inside the buffer", vsize)
        if osize < 4 or pos + osize > n:
            self.bad("bad table size", path, pos, "4..buffer end", osize)
        nslots = (vsize - 4) // 2

        def slot(i):
            return _U16.unpack_from(self.buf, vt + 4 + 2 * i)[0] if i < nslots else 0

        def field_pos(f, i, size):
            fo = slot(i)
            if not fo:
                return 0
            if fo < 4 or fo + size > osize:
                self.bad("field outside its table", S.join(path, f.name), pos + fo, f"<= {osize - size}", fo)
            return pos + fo

        args = []
        for f in info.fields:
            kind = f.kind
            p = S.join(path, f.name)
            if f.deprecated:
                args.append([] if kind == "vector" else (f.default if kind in ("scalar", "enum") else None))
                continue
            if kind in ("scalar", "enum"):
                size = S.SIZE[f.scalar]
                fp = field_pos(f, f.id, size)
                args.append(struct.unpack_from("<" + S.FMT[f.scalar], self.buf, fp)[0] if fp else f.default)
                continue
            if kind == "struct":
                fp = field_pos(f, f.id, f.cls.STRUCT_LAYOUT[0])
                args.append(self.struct(fp, f.cls) if fp else None)
                continue
            if kind == "union":
                tp = field_pos(f, f.id - 1, 1)
                t = self.buf[tp] if tp else 0
                fp = field_pos(f, f.id, 4)
                if t == 0:
                    args.append(None)
                    continue
                if t > len(f.members):
                    raise VersionError("union member index unknown to this reader: defined by a newer minor "
                                       "(SPEC.md section 8)", path=S.render((path, f.name + "_type")), offset=tp,
                                       expected=f"0..{len(f.members)}", got=t)
                if not fp:
                    self.bad("union type without a member", p, pos, f.members[t - 1].__name__, "absent")
                target = fp + self.u32(fp, p)
                args.append(self.table(target, S.INFO_BY_CLASS[f.members[t - 1]], p, depth + 1))
                continue
            fp = field_pos(f, f.id, 4)
            if not fp:
                if f.required:
                    self.bad("required field is missing", p, pos, f.name, "absent")
                args.append([] if kind == "vector" else None)
                continue
            target = fp + self.u32(fp, p)
            if kind == "string":
                args.append(S.check_class(self.string(target, p), f, p))
            elif kind == "table":
                args.append(self.table(target, S.INFO_BY_CLASS[f.cls], p, depth + 1))
            else:
                args.append(self.vector(target, f, p, depth))
        return info.cls(*args)

    def struct(self, pos, cls):
        size, layout = cls.STRUCT_LAYOUT
        return cls(*[struct.unpack_from("<" + ch, self.buf, pos + off)[0] for _, off, ch in layout])

    def string(self, pos, path):
        s = self.strings.get(pos)
        if s is not None:
            return s
        ln = self.u32(pos, path)
        end = pos + 4 + ln
        if end + 1 > self.n:
            self.bad("string runs past the buffer end", path, pos, f"<= {self.n - pos - 5} bytes", ln)
        if self.buf[end] != 0:
            self.bad("string is not NUL-terminated", path, end, 0, self.buf[end])
        self.spend(ln, path, pos)
        try:
            s = str(self.buf[pos + 4:end], "utf-8")
        except UnicodeDecodeError as e:
            self.bad(f"string is not valid UTF-8: {e.reason}", path, pos + 4 + e.start, "UTF-8")
        self.strings[pos] = s
        return s

    def vector(self, pos, f, path, depth):
        count = self.u32(pos, path)
        elem = f.elem
        if elem in ("string", "table"):
            esize = 4
        elif elem == "struct":
            esize = f.cls.STRUCT_LAYOUT[0]
        else:
            esize = S.SIZE[f.scalar]
        start = pos + 4
        if count * esize > self.n - start:
            self.bad("vector runs past the buffer end", path, pos, f"<= {(self.n - start) // esize} elements", count)
        self.spend(count + 1, path, pos)
        if elem == "string":
            return S.check_class([self.string(start + 4 * i + self.u32(start + 4 * i, path), (path, i))
                                  for i in range(count)], f, path)
        if elem == "table":
            info = S.INFO_BY_CLASS[f.cls]
            return [self.table(start + 4 * i + self.u32(start + 4 * i, path), info, (path, i), depth + 1)
                    for i in range(count)]
        if elem == "struct":
            return [self.struct(start + esize * i, f.cls) for i in range(count)]
        return list(struct.unpack_from(f"<{count}{S.FMT[f.scalar]}", self.buf, start))


def check_header(buf):
    """The buffer is long enough and carries our file identifier; returns the root table position."""
    n = len(buf)
    if n < 8:
        raise EncodingError("FlatBuffers buffer shorter than 8 bytes", offset=0, expected=">= 8 bytes", got=n)
    ident = bytes(buf[4:8])
    if ident != model.FILE_IDENTIFIER.encode("ascii"):
        raise EncodingError("wrong FlatBuffers file identifier", offset=4, expected=model.FILE_IDENTIFIER, got=ident)
    return _U32.unpack_from(buf, 0)[0]


def decode(buf, *, max_depth: int = 128):
    root = check_header(buf)
    return _Reader(buf, max_depth).table(root, S.INFO[S.ROOT.__name__], "", 1)
