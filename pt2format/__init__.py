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
    StaleShardError,
    UnsupportedFeatureError,
    ValidationError,
    VersionError,
)

FORMAT_VERSION = (1, 0)
__version__ = "0.1.0"


def save(programs, path, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool = True,
         example_inputs: bool = True, max_shard_size=None, external_data=None, weight_sets=None) -> None:
    """Save one ExportedProgram, or a dict name -> ExportedProgram, to `path` atomically.

    `max_shard_size` (bytes, or a string such as "5GB") writes the data to
    shard files `<stem>-00001-of-0000N.pt2shard` next to `path`, each written
    atomically and tied to the main file by its package id. `external_data`
    (a safetensors path, or a list) in the directory of `path` makes every
    weight whose name, dtype, shape and bytes match a tensor of that file
    point at it instead of being copied. `weight_sets` (name ->
    ExportedProgram or dict name -> tensor) stores named alternative weights
    for the same program(s); `load(path, weight_set=name)` picks one.
    """
    from pt2format.exporter import save_programs

    save_programs(programs, path, encoding=encoding, fsync=fsync, progress=progress, example_inputs=example_inputs,
                  max_shard_size=max_shard_size, external_data=external_data, weight_sets=weight_sets)


def save_weights(weights, path, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool = True,
                 max_shard_size=None, external_data=None, name: str = "default") -> None:
    """Save weights only (no program): an ExportedProgram's state, a dict name -> tensor, or a dict of such sets.

    The file is read back by `attach_weights(ep, path)` or
    `load(program_file, ...)` followed by `attach_weights`.
    """
    from pt2format.exporter import save_weights as _save_weights

    _save_weights(weights, path, encoding=encoding, fsync=fsync, progress=progress, max_shard_size=max_shard_size,
                  external_data=external_data, name=name)


def load(path, *, program: str | None = None, map_location=None, weights: bool = True, copy: bool = False,
         verify_data: bool = False, weight_set: str | None = None):
    """Load a torch.export.ExportedProgram from a .pt2f file (mmap-backed, zero-copy by default).

    `weights=False` builds the state on the meta device and reads no data;
    attach weights later with `attach_weights`. `weight_set` loads the
    program with one of the file's named weight sets instead of its own state.
    `verify_data=True` checks every data checksum first, shards in parallel.
    """
    from pt2format.loaders import load_program

    return load_program(path, program=program, map_location=map_location, weights=weights, copy=copy,
                        verify_data=verify_data, weight_set=weight_set)


def attach_weights(ep, source, *, program: str | None = None, weight_set: str | None = None, map_location=None,
                   copy: bool = False, strict: bool = True):
    """Give `ep` (for example from `load(path, weights=False)`) the weights of `source`; returns `ep`.

    `source` is a `.pt2f` file (its program's state, or weight set
    `weight_set`; a weights-only file's only set), a safetensors file, or a
    dict name -> tensor. Every state entry must be present with the same
    dtype and shape, else a LoadError lists the differences and `ep` is not
    changed; `strict=True` also refuses names `ep` does not have.
    """
    from pt2format.loaders import attach_weights as _attach

    return _attach(ep, source, program=program, weight_set=weight_set, map_location=map_location, copy=copy,
                   strict=strict)


def read(path, *, verify_data: bool = False, **limits):
    """Open a .pt2f file without torch: the decoded `Package` tree plus zero-copy access to its data."""
    from pt2format._api import read as _read

    return _read(path, verify_data=verify_data, **limits)


def validate(path, **limits) -> None:
    """Check structure, schema, references and every checksum; raise a Pt2FormatError on the first problem."""
    from pt2format._api import validate as _validate

    _validate(path, **limits)


__all__ = [
    "save", "load", "read", "validate", "save_weights", "attach_weights", "FORMAT_VERSION",
    "Pt2FormatError", "FormatError", "HeaderError", "StaleShardError", "ChecksumError", "SegmentError", "EncodingError",
    "LimitError", "VersionError", "UnsupportedFeatureError", "ValidationError", "ExportError", "LoadError",
]
