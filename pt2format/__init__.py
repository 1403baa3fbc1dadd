"""pt2format: a serialization-first exchange format for torch.export programs.

`save` and `load` need torch (they live in pt2format.exporter and
pt2format.loaders and are imported on first use); `read` and `validate` work
on the schema objects alone, so `import pt2format` never imports torch.
"""

from __future__ import annotations

from pt2format.errors import (
    ChecksumError,
    EncodingError,
    ExportError,
    FormatError,
    HeaderError,
    LimitError,
    LoadError,
    Pt2FormatError,
    SegmentError,
    UnsupportedFeatureError,
    ValidationError,
    VersionError,
)

FORMAT_VERSION = (1, 0)
__version__ = "0.1.0"


def save(programs, path, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool = True,
         example_inputs: bool = True) -> None:
    """Save one ExportedProgram, or a dict name -> ExportedProgram, to `path` atomically."""
    from pt2format.exporter import save_programs

    save_programs(programs, path, encoding=encoding, fsync=fsync, progress=progress, example_inputs=example_inputs)


def load(path, *, program: str | None = None, map_location=None, weights: bool = True, copy: bool = False,
         verify_data: bool = False, prefetch: bool = False):
    """Load a torch.export.ExportedProgram from a .pt2f file (mmap-backed, zero-copy by default).

    `prefetch=True` reads the weight pages ahead in a background thread.
    """
    from pt2format.loaders import load_program

    return load_program(path, program=program, map_location=map_location, weights=weights, copy=copy,
                        verify_data=verify_data, prefetch=prefetch)


def read(path, *, verify_data: bool = False, **limits):
    """Open a .pt2f file without torch: the decoded `Package` tree plus zero-copy access to its data."""
    from pt2format._api import read as _read

    return _read(path, verify_data=verify_data, **limits)


def validate(path, **limits) -> None:
    """Check structure, schema, references and every checksum; raise a Pt2FormatError on the first problem."""
    from pt2format._api import validate as _validate

    _validate(path, **limits)


__all__ = [
    "save", "load", "read", "validate", "FORMAT_VERSION",
    "Pt2FormatError", "FormatError", "HeaderError", "ChecksumError", "SegmentError", "EncodingError",
    "LimitError", "VersionError", "UnsupportedFeatureError", "ValidationError", "ExportError", "LoadError",
]
