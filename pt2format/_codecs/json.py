"""The JSON program encoding: flatc's JSON conventions, validated by the generated JSON Schema.

Written so `flatc -b schema/pt2format.fbs x.json` accepts it (SPEC.md section 4):
fields in schema order, defaults and empty vectors omitted, enums by name (an
unknown value as an integer), a union field `f` as `f_type` + `f`, structs as
objects, exact integers, NaN/inf as the strings "nan"/"inf"/"-inf", -0.0 kept.
Decoding parses strictly (no bare NaN/Infinity, no duplicate keys), validates
against pt2format/_generated/pt2format.schema.json, then checks every value's
type while building the model objects.
"""

from __future__ import annotations

import json as _json
import math
from pathlib import Path

from pt2format._codecs import _schema as S
from pt2format.errors import EncodingError, LimitError

_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "_generated" / "pt2format.schema.json"
_validator = None
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _get_validator():
    """The Draft 2019-09 validator of the generated schema, compiled once per process."""
    global _validator
    if _validator is None:
        import jsonschema

        schema = _json.loads(_SCHEMA_PATH.read_text(encoding="utf-8"))
        _validator = jsonschema.Draft201909Validator(schema)
    return _validator


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------

def encode(package) -> bytes:
    """Encode a Package tree as UTF-8 JSON text (one member per line, keys in schema order)."""
    tree = _enc_table(package, S.info_of(package, ""), "")
    # One member per line keeps diffs local; indent= would switch json to its
    # pure-Python encoder (7x slower), so nesting is not indented.
    text = _json.dumps(tree, ensure_ascii=False, allow_nan=False, separators=(",\n", ": "))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError as e:
        raise EncodingError(f"string is not encodable as UTF-8 (lone surrogate?): {e.reason}") from None


def _float(v, path):
    v = S.check_float(v, path)
    if math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _enc_table(obj, info, path):
    out = {}
    if info.is_struct:
        for f in info.fields:
            out[f.name] = _enc_scalar(getattr(obj, f.name), f, S.join(path, f.name))
        return out
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
            out[f.name + "_type"] = type(v).__name__
            out[f.name] = _enc_table(v, S.INFO_BY_CLASS[type(v)], p)
        elif v is None:
            if f.required:
                raise EncodingError("required field is missing", path=S.render(p))
        elif kind == "scalar":
            if f.is_float:
                v = S.check_float(v, p)
                if S.float_bits(v) != f.default_bits:
                    out[f.name] = _float(v, p)
            else:
                v = _enc_scalar(v, f, p)
                if v != f.default:
                    out[f.name] = v
        elif kind == "enum":
            v = S.check_int(v, f, p)
            if v != f.default:
                out[f.name] = f.enum_names.get(v, v)
        elif kind == "string":
            out[f.name] = S.check_str(v, p)
        elif kind in ("table", "struct"):
            if type(v) is not f.cls:
                raise EncodingError("wrong table type", path=S.render(p), expected=f.ref, got=type(v).__name__)
            out[f.name] = _enc_table(v, S.INFO_BY_CLASS[f.cls], p)
        else:
            if not isinstance(v, (list, tuple, bytes, bytearray)):
                raise EncodingError("wrong type", path=S.render(p), expected="list", got=type(v).__name__)
            if len(v):
                out[f.name] = _enc_vector(v, f, p)
    return out


def _enc_scalar(v, f, p):
    if f.is_float:
        return _float(v, p)
    if f.scalar == "bool":
        return S.check_bool(v, p)
    return S.check_int(v, f, p)


def _enc_vector(v, f, path):
    elem = f.elem
    if elem == "string":
        return [S.check_str(x, (path, i)) for i, x in enumerate(v)]
    if elem in ("table", "struct"):
        info = S.INFO_BY_CLASS[f.cls]
        out = []
        for i, x in enumerate(v):
            if type(x) is not f.cls:
                raise EncodingError("wrong table type", path=S.render((path, i)), expected=f.ref, got=type(x).__name__)
            out.append(_enc_table(x, info, (path, i)))
        return out
    if f.is_enum:
        return [f.enum_names.get(x, x) for x in (S.check_int(x, f, (path, i)) for i, x in enumerate(v))]
    return [_enc_scalar(x, f, (path, i)) for i, x in enumerate(v)]


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------

def _reject_constant(name):
    raise EncodingError(f"bare {name} is not JSON; write non-finite floats as strings", expected='"nan", "inf" or "-inf"',
                        got=name)


def _no_duplicates(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise EncodingError("duplicate key in a JSON object", expected="unique keys", got=repr(k))
            seen.add(k)
    return d


def _json_path(parts) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out = f"{out}.{p}" if out else str(p)
    return out


def decode(data, *, max_depth: int = 128, validate_schema: bool = True):
    """Decode JSON text into a Package; EncodingError/LimitError with the JSON path on anything malformed."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise EncodingError(f"JSON text is not valid UTF-8: {e.reason}", offset=e.start, expected="UTF-8") from None
    try:
        doc = _json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except _json.JSONDecodeError as e:
        raise EncodingError(f"malformed JSON: {e.msg} (line {e.lineno} column {e.colno})", offset=e.pos) from None
    except RecursionError:
        raise LimitError("JSON nesting too deep", expected=f"<= {max_depth} tables") from None
    if validate_schema:
        v = _get_validator()
        try:
            valid = v.is_valid(doc)
        except RecursionError:  # jsonschema recurses ~8 frames per table
            raise LimitError("JSON nesting too deep to validate", expected=f"<= {max_depth} tables") from None
        if not valid:
            import jsonschema.exceptions

            err = jsonschema.exceptions.best_match(v.iter_errors(doc))
            raise EncodingError(f"JSON does not match schema/pt2format.schema.json: {err.message}",
                                path=_json_path(err.absolute_path) or None, expected=err.validator, got=None)
    return _dec_table(doc, S.INFO[S.ROOT.__name__], "", 1, max_depth)


def _err(msg, path, expected, got):
    return EncodingError(msg, path=S.render(path), expected=expected, got=got)


def _dec_table(obj, info, path, depth, max_depth):
    if depth > max_depth:
        raise LimitError("nesting deeper than max_depth", path=S.render(path), expected=f"<= {max_depth}", got=depth)
    if type(obj) is not dict:
        raise _err("wrong type", path, f"object ({info.name})", type(obj).__name__)
    if info.is_struct:
        args = []
        for f in info.fields:
            p = S.join(path, f.name)
            if f.name not in obj:
                raise _err("struct field is missing", p, f.name, None)
            args.append(_dec_scalar(obj[f.name], f, p))
        if len(obj) != len(info.fields):
            extra = sorted(set(obj) - {f.name for f in info.fields})
            raise _err("unknown struct field", path, [f.name for f in info.fields], extra)
        return info.cls(*args)
    used = 0
    args = []
    for f in info.fields:
        p = S.join(path, f.name)
        kind = f.kind
        if kind == "union":
            t = obj.get(f.name + "_type")
            v = obj.get(f.name)
            used += (f.name + "_type" in obj) + (f.name in obj)
            args.append(None if f.deprecated else _dec_union(t, v, f, p, depth, max_depth))
            continue
        v = obj.get(f.name)
        if f.name in obj:
            used += 1
        if f.deprecated:
            args.append([] if kind == "vector" else (f.default if kind in ("scalar", "enum") else None))
        elif v is None:
            if f.required:
                raise _err("required field is missing", p, f.name, None)
            args.append([] if kind == "vector" else f.default)
        elif kind == "scalar":
            args.append(_dec_scalar(v, f, p))
        elif kind == "enum":
            args.append(_dec_enum(v, f, p))
        elif kind == "string":
            args.append(S.check_str(v, p))
        elif kind in ("table", "struct"):
            args.append(_dec_table(v, S.INFO_BY_CLASS[f.cls], p, depth + 1, max_depth))
        else:
            args.append(_dec_vector(v, f, p, depth, max_depth))
    if used != len(obj):
        known = {f.name for f in info.fields} | {f.name + "_type" for f in info.fields if f.kind == "union"}
        raise _err("unknown field", path, f"fields of {info.name}", sorted(set(obj) - known))
    return info.cls(*args)


def _dec_scalar(v, f, p):
    if f.is_float:
        if type(v) is str:
            x = _NON_FINITE.get(v)
            if x is None:
                raise _err("wrong float spelling", p, '"nan", "inf" or "-inf"', repr(v))
            return x
        return S.check_float(v, p)
    if f.scalar == "bool":
        return S.check_bool(v, p)
    return S.check_int(v, f, p)


def _dec_enum(v, f, p):
    if type(v) is str:
        x = f.enum_values.get(v)
        if x is None:
            raise _err("unknown enum value name", p, f"a value of {f.ref}", repr(v))
        return x
    return S.check_int(v, f, p)


def _dec_union(t, v, f, p, depth, max_depth):
    if t is None:
        if v is not None:
            raise _err("union member without its _type key", (p[0], f.name + "_type"), "member name", None)
        return None
    if type(t) is str:
        if t == "NONE":
            idx = 0
        else:
            idx = next((i + 1 for i, c in enumerate(f.members) if c.__name__ == t), None)
            if idx is None:
                raise _err("unknown union member name", (p[0], f.name + "_type"), f"a member of {f.ref}", repr(t))
    elif type(t) is int:
        idx = t
        if not 0 <= idx <= len(f.members):
            raise _err("union type index unknown to this reader (newer schema minor?)", (p[0], f.name + "_type"),
                       f"0..{len(f.members)}", t)
    else:
        raise _err("wrong type", (p[0], f.name + "_type"), "union member name", type(t).__name__)
    if idx == 0:
        if v is not None:
            raise _err("union member given with type NONE", p, None, type(v).__name__)
        return None
    if v is None:
        raise _err("union type without a member", p, f.members[idx - 1].__name__, None)
    return _dec_table(v, S.INFO_BY_CLASS[f.members[idx - 1]], p, depth + 1, max_depth)


def _dec_vector(v, f, path, depth, max_depth):
    if type(v) is not list:
        raise _err("wrong type", path, "array", type(v).__name__)
    elem = f.elem
    if elem == "string":
        for i, x in enumerate(v):
            if type(x) is not str:
                S.check_str(x, (path, i))
        return v
    if elem in ("table", "struct"):
        info = S.INFO_BY_CLASS[f.cls]
        return [_dec_table(x, info, (path, i), depth + 1, max_depth) for i, x in enumerate(v)]
    if f.is_enum:
        return [_dec_enum(x, f, (path, i)) for i, x in enumerate(v)]
    return [_dec_scalar(x, f, (path, i)) for i, x in enumerate(v)]
