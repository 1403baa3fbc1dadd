"""The MSGPACK program encoding: positional arrays by field id (SPEC.md section 4).

A table is an array indexed by field id, `nil` for absent or default fields,
trailing `nil`s dropped; a union field takes two positions (type index at
`id - 1`, member at `id`); a struct is an array of all its fields; enums are
ints; `[ubyte]` is bin. Decoding unpacks with msgpack's C extension under
limits derived from the data size, then checks every value's type while it
builds the model objects, so a hostile buffer can only produce a
Pt2FormatError.
"""

from __future__ import annotations

import msgpack as _msgpack

from pt2format._codecs import _schema as S
from pt2format.errors import EncodingError, LimitError, VersionError

from pt2format._generated import msgpack_codec as _gen

_DEFAULT_MAX_DEPTH = 128


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------

def encode(package) -> bytes:
    """Encode a Package tree; raises EncodingError (with the field path) for a malformed tree."""
    try:
        tree = _gen.encode_tree(package)
    except RecursionError:
        raise EncodingError("tree nested too deeply to encode") from None
    except (EncodingError, TypeError, AttributeError, ValueError, OverflowError) as fast_error:
        _enc_table(package, S.info_of(package, ""), "")  # raises EncodingError naming the path
        raise EncodingError(f"tree does not fit the schema: {fast_error}") from fast_error
    try:
        return _msgpack.packb(tree, use_bin_type=True)
    except UnicodeEncodeError as e:
        raise EncodingError(f"string is not encodable as UTF-8 (lone surrogate?): {e.reason}") from None
    except (ValueError, TypeError, OverflowError) as e:  # _enc_* checked every value; kept as a net
        raise EncodingError(f"msgpack cannot pack the tree: {e}") from e


def _enc_table(obj, info, path):
    if info.is_struct:
        return _enc_struct(obj, info, path)
    out = [None] * (info.max_id + 1)
    for f in info.live:
        v = getattr(obj, f.name)
        kind = f.kind
        if kind == "union":
            if v is None:
                continue
            idx = f.member_index.get(type(v))
            if idx is None:
                raise EncodingError("not a member of the union", path=S.render(S.join(path, f.name)),
                                    expected=f"one of {f.ref}", got=type(v).__name__)
            out[f.id - 1] = idx
            out[f.id] = _enc_table(v, S.INFO_BY_CLASS[type(v)], S.join(path, f.name))
            continue
        if v is None:
            if f.required:
                raise EncodingError("required field is missing", path=S.render(S.join(path, f.name)))
            continue
        if kind == "vector":
            if not isinstance(v, (list, tuple, bytes, bytearray)):
                raise EncodingError("wrong type", path=S.render(S.join(path, f.name)), expected="list", got=type(v).__name__)
            if v:
                out[f.id] = _enc_vector(v, f, S.join(path, f.name))
            continue
        out[f.id] = _enc_value(v, f, kind, S.join(path, f.name))
    while out and out[-1] is None:
        out.pop()
    return out


def _enc_value(v, f, kind, path):
    """A scalar, enum, string or nested table; None means "equal to the default"."""
    if kind == "scalar":
        if f.is_float:
            v = S.check_float(v, path)
            return None if S.float_bits(v) == f.default_bits else v
        if f.scalar == "bool":
            v = S.check_bool(v, path)
        else:
            v = S.check_int(v, f, path)
        return None if v == f.default else v
    if kind == "enum":
        v = S.check_int(v, f, path)
        return None if v == f.default else v
    if kind == "string":
        return S.check_str(v, path)
    if kind in ("table", "struct"):
        return _enc_table(v, S.checked_info(v, f, path), path)
    raise AssertionError(kind)


def _enc_struct(obj, info, path):
    out = []
    for f in info.fields:
        v = getattr(obj, f.name)
        p = S.join(path, f.name)
        if f.is_float:
            out.append(S.check_float(v, p))
        elif f.scalar == "bool":
            out.append(S.check_bool(v, p))
        else:
            out.append(S.check_int(v, f, p))
    return out


def _enc_vector(v, f, path):
    elem = f.elem
    if elem == "uint8":
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        try:
            return bytes(v)
        except (TypeError, ValueError):
            for i, x in enumerate(v):
                S.check_int(x, f, (path, i))
            raise
    if elem == "string":
        return [S.check_str(x, (path, i)) for i, x in enumerate(v)]
    if elem in ("table", "struct"):
        return [_enc_table(x, S.checked_info(x, f, (path, i)), (path, i)) for i, x in enumerate(v)]
    if f.is_float:
        return [S.check_float(x, (path, i)) for i, x in enumerate(v)]
    if f.scalar == "bool":
        return [S.check_bool(x, (path, i)) for i, x in enumerate(v)]
    return [S.check_int(x, f, (path, i)) for i, x in enumerate(v)]


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------

def decode(data, *, max_depth: int = _DEFAULT_MAX_DEPTH):
    """Decode MSGPACK bytes into a Package; EncodingError/LimitError on anything malformed."""
    n = len(data)
    try:
        tree = _msgpack.unpackb(
            data, raw=False, use_list=True, strict_map_key=True, max_str_len=n, max_bin_len=n,
            max_array_len=n, max_map_len=n, max_ext_len=n)
    except _msgpack.StackError as e:
        raise LimitError(f"msgpack nesting too deep: {e}", offset=None) from None
    except _msgpack.ExtraData as e:
        raise EncodingError("trailing bytes after the msgpack object", offset=n - len(e.extra),
                            expected=f"{n - len(e.extra)} bytes", got=n) from None
    except UnicodeDecodeError as e:
        raise EncodingError(f"string is not valid UTF-8: {e.reason}", expected="UTF-8") from None
    except (ValueError, TypeError, OverflowError) as e:  # OutOfData, FormatError, limits
        raise EncodingError(f"malformed msgpack: {type(e).__name__}: {e}") from None
    root = S.INFO[S.ROOT.__name__]
    try:
        try:
            return _gen.decode_tree(tree, max_depth)
        except (EncodingError, LimitError, VersionError) as fast_error:
            _dec_table(tree, root, "", 1, max_depth)  # the reflection decoder names the path
            raise fast_error
    except RecursionError:
        raise LimitError("nesting too deep for the Python stack", expected=f"max_depth <= {max_depth}") from None


def _err(msg, path, expected, got):
    return EncodingError(msg, path=S.render(path), expected=expected, got=got)


def _dec_table(arr, info, path, depth, max_depth):
    if depth > max_depth:
        raise LimitError("nesting deeper than max_depth", path=S.render(path), expected=f"<= {max_depth}", got=depth)
    if type(arr) is not list:
        raise _err("wrong type", path, f"array ({info.name})", type(arr).__name__)
    if info.is_struct:
        return _dec_struct(arr, info, path)
    n = len(arr)
    args = []
    for f in info.fields:
        i = f.id
        v = arr[i] if i < n else None
        if f.deprecated:
            args.append([] if f.kind == "vector" else (f.default if f.kind in ("scalar", "enum") else None))
            continue
        kind = f.kind
        p = S.join(path, f.name)
        if kind == "union":
            t = arr[i - 1] if i - 1 < n else None
            args.append(_dec_union(t, v, f, p, depth, max_depth))
        elif v is None:
            if f.required:
                raise _err("required field is missing", p, f.name, "nil")
            args.append([] if kind == "vector" else f.default)
        elif kind == "scalar":
            args.append(_dec_scalar(v, f, p))
        elif kind == "enum":
            args.append(S.check_int(v, f, p))
        elif kind == "string":
            args.append(S.check_class(S.check_str(v, p), f, p))
        elif kind in ("table", "struct"):
            args.append(_dec_table(v, S.INFO_BY_CLASS[f.cls], p, depth + 1, max_depth))
        else:
            args.append(_dec_vector(v, f, p, depth, max_depth))
    return info.cls(*args)


def _dec_scalar(v, f, p):
    if f.is_float:
        return S.check_float(v, p)
    if f.scalar == "bool":
        return S.check_bool(v, p)
    return S.check_int(v, f, p)


def _dec_union(t, v, f, p, depth, max_depth):
    if t is None or t == 0:
        if t is None and v is not None:
            raise _err("union member without a type", (p[0], f.name + "_type"), "type index", "nil")
        return None
    if type(t) is not int:
        raise _err("wrong type", (p[0], f.name + "_type"), "union type index", type(t).__name__)
    if not 0 < t <= 255:
        raise _err("union type index out of range", (p[0], f.name + "_type"), "0..255", t)
    if t > len(f.members):
        raise VersionError("union member index unknown to this reader: defined by a newer minor (SPEC.md section 8)",
                           path=S.render((p[0], f.name + "_type")), expected=f"0..{len(f.members)}", got=t)
    if v is None:
        raise _err("union type without a member", p, f.members[t - 1].__name__, "nil")
    return _dec_table(v, S.INFO_BY_CLASS[f.members[t - 1]], p, depth + 1, max_depth)


def _dec_struct(arr, info, path):
    if len(arr) != len(info.fields):
        raise _err("struct has the wrong number of fields", path, len(info.fields), len(arr))
    return info.cls(*[_dec_scalar(v, f, S.join(path, f.name)) for f, v in zip(info.fields, arr)])


def _dec_vector(v, f, path, depth, max_depth):
    elem = f.elem
    if elem == "uint8":
        if type(v) is bytes:
            return list(v)
        if type(v) is not list:
            raise _err("wrong type", path, "bin", type(v).__name__)
        return [S.check_int(x, f, (path, i)) for i, x in enumerate(v)]
    if type(v) is not list:
        raise _err("wrong type", path, "array", type(v).__name__)
    if elem == "string":
        for i, x in enumerate(v):
            if type(x) is not str:
                S.check_str(x, (path, i))
        return S.check_class(v, f, path)
    if elem in ("table", "struct"):
        info = S.INFO_BY_CLASS[f.cls]
        return [_dec_table(x, info, (path, i), depth + 1, max_depth) for i, x in enumerate(v)]
    if f.is_float:
        return [S.check_float(x, (path, i)) for i, x in enumerate(v)]
    if f.scalar == "bool":
        for i, x in enumerate(v):
            if type(x) is not bool:
                S.check_bool(x, (path, i))
        return v
    return [S.check_int(x, f, (path, i)) for i, x in enumerate(v)]


__all__ = ["encode", "decode"]
