"""The FLATBUFFERS program encoding: one generated writer and one generated reader.

Writing uses pt2format/_generated/fb_writer.py (schema/codegen/fb_writer.py): one
function per table, deterministic, a scalar written only when it differs from
its default bit for bit, empty vectors and None omitted, strings and vtables
shared, file identifier "P2FP". Reading uses pt2format/_generated/fb_reader.py
(schema/codegen/fb_reader.py): one function per table, every offset, length and
vtable checked against the buffer. There is no second, reflective codec: each
generated table function notes the field it was working on when an error passes
through it, and `_runtime.locate` turns those notes into the field path.

Safety choices (the same in both readers):
- every offset, vtable, string and vector is bounds-checked; the first bad one
  raises EncodingError naming the field path and the offset;
- tables nest at most `max_depth` deep (LimitError);
- vectors may be shared by many offsets, so every vector visit spends its
  length + 1 from a budget of `len(buffer) + 64`: a buffer whose offsets fan
  out into more objects than it has bytes is rejected (LimitError) instead of
  expanding exponentially;
- a union type index outside the reader's union (a member added by a newer
  minor version) raises VersionError (SPEC.md section 8): the model cannot hold
  an unknown member, and dropping it would change the program;
- strings must be NUL-terminated valid UTF-8; a required field must be present.
Field alignment is not checked (the reader does not need it).
"""

from __future__ import annotations

from pt2format._generated import limits as _limits
from pt2format._codecs._runtime import ENCODE_ERRORS, PATH_ERRORS, encode_error, locate
from pt2format._generated.fb_reader import decode as _fast_decode
from pt2format.errors import EncodingError, LimitError


# What the generated writer raises on a malformed tree (it checks types only where
# struct.pack would not); `encode_error` names the field path the writer noted on the way out.
def encode(package) -> bytes:
    """Encode a Package tree as FlatBuffers bytes; EncodingError with the field path if it does not fit the schema.

    The generated writer (200 KB of Python, a noticeable import) is imported on
    the first encode: a program that only loads never pays for it.
    """
    from pt2format._generated.fb_writer import encode as _fast_encode

    try:
        return _fast_encode(package)
    except RecursionError:
        raise EncodingError("tree nested too deeply to encode") from None
    except ENCODE_ERRORS as e:
        raise encode_error(e) from None  # the generated writer noted the field path on the way out


def decode(data, *, max_depth: int = _limits.MAX_DEPTH):
    """Decode a FlatBuffers buffer (bytes or memoryview, not copied) into a Package."""
    try:
        return _checked(_fast_decode, data, max_depth)
    except PATH_ERRORS as e:
        raise locate(e)  # the generated reader noted the field path on the way out


def _checked(fn, data, max_depth):
    try:
        return fn(data, max_depth=max_depth)
    except RecursionError:
        raise LimitError("nesting too deep for the Python stack", expected=f"max_depth <= {max_depth}") from None


__all__ = ["encode", "decode"]
