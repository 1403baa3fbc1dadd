"""The MSGPACK program encoding: positional arrays by field id (SPEC.md section 4).

A table is an array indexed by field id, `nil` for absent or default fields,
trailing `nil`s dropped; a union field takes two positions (type index at
`id - 1`, member at `id`); a struct is an array of all its fields; enums are
ints; `[ubyte]` is bin. Decoding unpacks with msgpack's C extension under
limits derived from the data size, then the generated decoder
(pt2format/_generated/msgpack_codec.py) checks every value's type while it
builds the model objects, so a hostile buffer can only produce a
Pt2FormatError, with the field path the generated code noted on the way out.
"""

from __future__ import annotations

import msgpack as _msgpack

from pt2format._generated import limits as _limits
from pt2format._codecs._runtime import ENCODE_ERRORS, PATH_ERRORS, encode_error, locate
from pt2format.errors import EncodingError, LimitError

from pt2format._generated import msgpack_codec as _gen

_DEFAULT_MAX_DEPTH = _limits.MAX_DEPTH


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------

def encode(package) -> bytes:
    """Encode a Package tree; raises EncodingError (with the field path) for a malformed tree."""
    try:
        tree = _gen.encode_tree(package)
    except RecursionError:
        raise EncodingError("tree nested too deeply to encode") from None
    except ENCODE_ERRORS as e:
        raise encode_error(e) from None  # the generated encoder noted the field path on the way out
    try:
        return _msgpack.packb(tree, use_bin_type=True)
    except UnicodeEncodeError as e:
        raise EncodingError(f"string is not encodable as UTF-8 (lone surrogate?): {e.reason}") from None
    except (ValueError, TypeError, OverflowError) as e:  # the generated encoder checked every value; kept as a net
        raise EncodingError(f"msgpack cannot pack the tree: {e}") from e


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
    try:
        return _gen.decode_tree(tree, max_depth)
    except RecursionError:
        raise LimitError("nesting too deep for the Python stack", expected=f"max_depth <= {max_depth}") from None
    except PATH_ERRORS as e:
        raise locate(e)  # the generated decoder noted the field path on the way out


__all__ = ["encode", "decode"]
