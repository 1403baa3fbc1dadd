"""The FLATBUFFERS program encoding: generated writer and reader, with reflection twins for error paths.

Writing uses pt2format/_generated/fb_writer.py (schema/codegen/fb_writer.py): one
function per table, deterministic, a scalar written only when it differs from
its default bit for bit, empty vectors and None omitted, strings and vtables
shared, file identifier "P2FP". Reading uses pt2format/_generated/fb_reader.py
(schema/codegen/fb_reader.py): one function per table, every offset, length and
vtable checked against the buffer. The generated code reports offsets only;
on an error the reflection twins (`_fb_writer`, `_fb_generic`), which produce
the same bytes and make the same checks, re-run to name the field path
(the generated modules are always present: regen.py writes them, the drift
test checks them).

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

import struct

from pt2format._codecs import _fb_generic, _fb_writer
from pt2format.errors import EncodingError, LimitError, VersionError

from pt2format._generated.fb_reader import decode as _fast_decode
from pt2format._generated.fb_writer import encode as _fast_encode

# What the generated writer raises on a malformed tree (it checks types only where
# struct.pack would not); the reflection writer then names the field path.
_TREE_ERRORS = (EncodingError, struct.error, TypeError, AttributeError, ValueError, OverflowError, KeyError,
                IndexError)


def encode(package) -> bytes:
    """Encode a Package tree as FlatBuffers bytes; EncodingError with the field path if it does not fit the schema."""
    try:
        return _fast_encode(package)
    except RecursionError:
        raise EncodingError("tree nested too deeply to encode") from None
    except _TREE_ERRORS as fast_error:
        _fb_writer.encode(package)  # raises EncodingError naming the path
        raise EncodingError(f"tree does not fit the schema: {type(fast_error).__name__}: {fast_error}") from fast_error


def decode(data, *, max_depth: int = 128):
    """Decode a FlatBuffers buffer (bytes or memoryview, not copied) into a Package."""
    try:
        return _checked(_fast_decode, data, max_depth)
    except (EncodingError, LimitError, VersionError) as fast_error:
        # The generated reader knows the offset, not the field path: the reflection
        # reader makes the same checks in the same order and names the path.
        try:
            _checked(_fb_generic.decode, data, max_depth)
        except (EncodingError, LimitError, VersionError) as e:
            raise e from None
        raise fast_error


def _checked(fn, data, max_depth):
    try:
        return fn(data, max_depth=max_depth)
    except RecursionError:
        raise LimitError("nesting too deep for the Python stack", expected=f"max_depth <= {max_depth}") from None


__all__ = ["encode", "decode"]
