"""The three program-section codecs behind one interface: encode(package, encoding), decode(data, encoding).

FlatBuffers (default), MessagePack and JSON encode the same `Package` tree
(SPEC.md section 4); decoding any of them and re-encoding in another gives an
equal tree. Decoders accept bytes or a memoryview (a view over the mapped
file is not copied by the FlatBuffers and MessagePack decoders) and raise only
Pt2FormatError subclasses on bad input.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

from pt2format._generated import limits as _limits
from pt2format.errors import EncodingError, LimitError

ENCODINGS = ("flatbuffers", "msgpack", "json")
DEFAULT_MAX_DEPTH = _limits.MAX_DEPTH
# The program section of a 20,000-node program is ~10-30 MB; 1 GiB is far beyond any real one.
DEFAULT_MAX_BYTES = _limits.MAX_PROGRAM_BYTES


def _codec(encoding: str):
    if encoding == "flatbuffers":
        from pt2format._codecs import flatbuffers as c
    elif encoding == "msgpack":
        from pt2format._codecs import msgpack as c
    elif encoding == "json":
        from pt2format._codecs import json as c
    else:
        raise EncodingError("unknown program encoding", expected=" | ".join(ENCODINGS), got=repr(encoding))
    return c


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector: codecs build acyclic trees of up to millions of
    objects, and collections triggered by those allocations cost 3-6x the decode itself
    at 20,000 nodes. Reference counting still frees everything."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def encode(package, encoding: str) -> bytes:
    """Encode a `Package` tree; EncodingError (with the field path) when the tree does not fit the schema."""
    c = _codec(encoding)
    try:
        with _gc_paused():
            return c.encode(package)
    except RecursionError:
        raise EncodingError("tree nested too deeply for Python's stack to encode",
                            expected="a tree of sane depth") from None


def decode(data, encoding: str, *, max_depth: int = DEFAULT_MAX_DEPTH,
           max_bytes: int = DEFAULT_MAX_BYTES, json_schema: bool = False):
    """Decode a program section into a `Package`.

    `max_depth` bounds table nesting (the root is depth 1); `max_bytes` bounds the
    section size. For JSON, `json_schema=True` also runs the jsonschema pass
    (slow: a Python pass over every object; validate() uses it); the decoder's own checks of
    types, ranges, names, required fields and unknown or duplicate keys run
    either way. Bad input raises EncodingError (with field path and offset) or
    LimitError, never another exception type.
    """
    c = _codec(encoding)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise EncodingError("program data must be bytes-like", expected="bytes or memoryview",
                            got=type(data).__name__)
    if isinstance(data, memoryview) and (data.ndim != 1 or data.itemsize != 1 or not data.contiguous):
        if not data.contiguous:
            raise EncodingError("program data must be a contiguous buffer", expected="contiguous memoryview")
        data = data.cast("B")
    n = len(data)
    if n > max_bytes:
        raise LimitError("program section larger than max_bytes", expected=f"<= {max_bytes} bytes", got=n)
    try:
        with _gc_paused():
            if encoding == "json":
                return c.decode(data, max_depth=max_depth, validate_schema=json_schema)
            return c.decode(data, max_depth=max_depth)
    except RecursionError:
        raise LimitError("program nested too deeply for Python's stack",
                         expected=f"depth <= {max_depth}") from None


__all__ = ["ENCODINGS", "DEFAULT_MAX_DEPTH", "DEFAULT_MAX_BYTES", "encode", "decode"]
