"""pt2format: a serialization-first exchange format for torch.export programs.

`save`, `load`, `from_torch` and `to_torch` need torch (they live in
pt2format.exporter and pt2format.loaders and are imported on first use);
`read`, `open` (with `framework="np"`) and `validate` work on the schema
objects alone, so `import pt2format` never imports torch.

Every function that takes a file accepts a path (``str`` or
``os.PathLike``), and also a binary file object or, for reading, a
bytes-like object. Paths are memory-mapped (zero-copy); bytes and file
objects are read into memory, without mmap. ``mmap=False`` (on ``read``,
``load``, ``load_module``, ``open``, ``validate`` and ``attach_weights``)
reads a path into memory too, for files another process may truncate or
rewrite while they are in use (see SECURITY.md: a mapped file that shrinks
ends the process with SIGBUS).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any, Union

from pt2format.errors import (
    ChecksumError,
    EncodingError,
    ExportError,
    FallbackWarning,
    FormatError,
    OpsetWarning,
    HeaderError,
    LimitError,
    LoadError,
    Pt2FormatError,
    SegmentError,
    StaleShardError,
    StringClassError,
    TorchArchiveError,
    UnsupportedFeatureError,
    ValidationError,
    VersionError,
)

if TYPE_CHECKING:  # pragma: no cover - annotations only; importing pt2format never imports torch
    import torch.export

    from pt2format._api import PackageFile
    from pt2format._open import LazyFile

# The schema version this package reads and writes: the newest `X.Y (date)` line of the
# schema's header comment, emitted by schema/regen.py.
from pt2format._generated.minors import SCHEMA_VERSION as FORMAT_VERSION  # noqa: E402
__version__ = "0.1.0"

#: What every reading function accepts: a path, a bytes-like object, or a binary file object.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
#: What `save` accepts: a path or a writable binary file object.
Target = Union[str, "os.PathLike[str]", IO[bytes]]


def save(programs: torch.export.ExportedProgram | Mapping[str, torch.export.ExportedProgram], f: Target, *,
         encoding: str = "flatbuffers", fsync: bool = True, progress: bool | None = None,
         example_inputs: bool = True, extra_files: Mapping[str, bytes | str] | None = None,
         metadata: Mapping[str, str] | None = None, max_shard_size: int | str | None = None,
         external_data=None, weight_sets: Mapping[str, Any] | None = None) -> None:
    """Save one ExportedProgram, or several sharing their weights, to a `.pt2f` file.

    Args:
        programs: an ``ExportedProgram`` (saved as program ``"forward"``) or a
            dict name -> ``ExportedProgram``. Storages are deduplicated across
            programs, so shared (tied) weights are stored once.
        f: a path, or a writable binary file object. A path is written
            atomically (temporary file, fsync, rename): an existing file is
            replaced only by a complete one. A symlink is written through to
            its target, and an existing file keeps its permission bits. A file
            object receives exactly the bytes the file would hold, from its
            current position (not atomically).
        encoding: the program section's encoding: ``"flatbuffers"`` (default,
            zero-copy in any language), ``"msgpack"`` or ``"json"``.
        fsync: flush the file (and its directory) to disk before returning.
            The rename is atomic either way.
        progress: a progress bar (bytes written) on stderr; ``None`` (default)
            shows it only when stderr is a terminal, and only for saves that
            take over a second.
        example_inputs: also store each program's example inputs.
        extra_files: name -> bytes (or str, stored as UTF-8), as in
            ``torch.export.save``: files kept beside the programs, in the data
            section. Names are 1-255 bytes of UTF-8 without control characters.
        metadata: str -> str, as in safetensors: small strings for people and
            tools (at most 1 MiB in all); shown by ``pt2format inspect``.
        max_shard_size: bytes (or a string such as ``"5GB"``): write the data
            to shard files ``<stem>-00001-of-0000N.pt2shard`` next to the file,
            each written atomically and tied to the main file by its package id.
        external_data: a safetensors path (or a list) in the same directory:
            every weight whose name, dtype, shape and bytes match a tensor of
            that file points at it instead of being copied.
        weight_sets: name -> ``ExportedProgram`` or dict name -> tensor: named
            alternative weights for the same program(s); ``load(path,
            weight_set=name)`` picks one.

    Raises:
        ExportError: a program cannot be expressed in the schema.
        TypeError, ValueError: an argument has the wrong type or value.
        OSError: the file cannot be written (the error names ``f``).
    """
    from pt2format.exporter import save_programs

    save_programs(programs, f, encoding=encoding, fsync=fsync, progress=progress, example_inputs=example_inputs,
                  extra_files=extra_files, metadata=metadata, max_shard_size=max_shard_size,
                  external_data=external_data, weight_sets=weight_sets)


def load(f: Source, *, program: str | None = None, map_location: Any = None, weights: bool = True,
         copy: bool = False, verify_data: bool = False, extra_files: dict[str, bytes] | None = None,
         metadata: dict[str, str] | None = None, weight_set: str | None = None,
         prefetch: bool = False, allow_subclasses: Iterable[type] = (),
         mmap: bool = True) -> torch.export.ExportedProgram:
    """Load a ``torch.export.ExportedProgram`` from a `.pt2f` file.

    Args:
        f: a path (memory-mapped: weights are zero-copy views of the file,
            copy-on-write, so writes never reach it), a bytes-like object or a
            binary file object (read into memory, no mmap).
        program: which program to load; default: the only one, or
            ``"forward"``. A file with several programs and no ``"forward"``
            needs it.
        map_location: remaps devices as ``torch.load`` does: a device string,
            a ``torch.device``, a dict (``{"cuda:0": "cpu"}`` maps by full
            device string first, then by device type), or a callable
            ``f(storage, location)`` returning the storage to use.
        weights: ``False`` builds the program with meta-device parameters and
            buffers and reads no weight bytes (for inspecting or transforming a
            graph); such a program cannot run until real weights are set.
        copy: give every tensor its own memory instead of viewing the file.
        verify_data: check every data checksum before building anything
            (reads every byte once; off by default so loading stays
            zero-copy). The header and program section are always checked.
        extra_files: a dict, filled in (cleared first) with the file's extra
            files, name -> bytes; like ``torch.export.load``'s argument, but
            every file is returned and values are bytes, not text.
        metadata: a dict, filled in (cleared first) with the file's metadata.
        weight_set: load the program with this named weight set of the file
            instead of its own state (see ``attach_weights``).
        prefetch: read the weight pages ahead in a background thread, so the
            first call does not fault them in one by one.
        allow_subclasses: tensor subclass classes (traceable wrapper
            subclasses, e.g. ``[TwoTensor]``) whose saved tensors may be
            rebuilt, and the enum, dataclass and namedtuple classes their
            flatten contexts hold, matched by qualified name. Classes on
            torch's safe-globals list (``torch.serialization.add_safe_globals``,
            the list ``torch.load(weights_only=True)`` trusts; torchao adds
            its own) are trusted too. The file names its classes; pt2format
            never imports them: import the class yourself and trust it. A
            subclass tensor of any other class is a ``LoadError`` naming the
            class; with ``weights=False`` it becomes a plain meta tensor.
        mmap: ``False`` reads a path (and its shard and external files) into
            memory instead of mapping it: weights then live in the process's
            own memory, so another process truncating or rewriting the file
            cannot crash or change the program (a mapped file that shrinks
            ends the process with SIGBUS at the next access, as for every
            mmap reader). A file that shrinks while it is being read is a
            ``FormatError``. Costs one read of the whole file and its size
            in memory; ``prefetch`` has nothing to do then.

    Returns:
        The rebuilt ``ExportedProgram``.

    Raises:
        FormatError: the bytes are not a valid `.pt2f` file (a torch `.pt2`
            archive is named as such, with the command that converts it).
        VersionError: the file needs a newer reader.
        ValidationError: the program breaks an invariant of the format.
        LoadError: the program cannot be rebuilt with this torch (for example
            an unknown operator), or ``program`` names no program.

    Warns:
        FallbackWarning: a pytree class named in the file is not importable;
            a stand-in class with its name and fields (or, when none fits, a
            generic container) is used (reported at the caller's line).
        OpsetWarning: the file's ``aten`` operator version is newer than this
            torch's.
    """
    from pt2format.loaders import load_program

    return load_program(f, program=program, map_location=map_location, weights=weights, copy=copy,
                        verify_data=verify_data, extra_files=extra_files, metadata=metadata,
                        weight_set=weight_set, prefetch=prefetch, allow_subclasses=allow_subclasses, mmap=mmap)


def load_module(f: Source, *, program: str | None = None, map_location: Any = None, copy: bool = False,
                verify_data: bool = False, prefetch: bool = False, allow_subclasses=(),
                mmap: bool = True, device_mesh: Any = None, placements: Any = None) -> torch.nn.Module:
    """The callable, unlifted module of a program: what ``load(f, ...).module()`` returns, built directly.

    No ExportedProgram is rebuilt and none of ``module()``'s passes runs:
    the graph comes from the file without fake values, parameters and
    buffers are views of a private map of the file (a buffer the program
    mutates changes in this process only), and inputs are checked before the
    graph runs as torch's guards would check them (sizes, ranges of dynamic
    and derived dims, constants, the inputs' pytree structure), from
    validated values: nothing from the file is compiled or parsed. Outputs,
    mutated buffers and rejected inputs match ``ExportedProgram.module()``
    bit for bit on the conformance corpus (tests/loaders/test_load_module.py).

    A program the fast path does not build (effect tokens, symbolic float or
    bool inputs, no example inputs or root call signature) falls back to
    ``load(f, ...).module()``; the module's ``pt2format_fallback`` attribute
    names the reason (None on the fast path). Arguments are ``load``'s
    (``allow_subclasses`` and ``mmap`` included);
    ``prefetch=True`` reads the weight pages ahead in a background thread so
    the first call does not fault them in one by one.

    ``device_mesh`` (a ``torch.distributed.DeviceMesh``) loads the program
    sharded, on every rank of the mesh: its parameters, buffers and tensor
    constants become ``DTensor``s placed by ``placements``, a dict from
    name pattern (``fnmatch``, e.g. ``"*.q_proj.weight"``) to a ``Placement``
    (``Shard(0)``, ``Shard(1)``, ``Replicate()``; one per mesh dimension),
    first match wins, ``Replicate()`` for the rest. Each rank reads only its
    slices, through ``torch.distributed.checkpoint`` and
    ``pt2format.dcp.StorageReader``. The module takes and returns plain
    (replicated) tensors. A ``Shard`` whose dimension the mesh does not
    divide is a ``LoadError``; any error is raised on every rank. See
    docs/distributed.md.
    """
    if device_mesh is not None:
        from pt2format.loaders._sharded import load_sharded_module

        return load_sharded_module(f, device_mesh=device_mesh, placements=placements, program=program,
                                   verify_data=verify_data, mmap=mmap, allow_subclasses=allow_subclasses)
    if placements is not None:
        raise ValueError("placements needs a device_mesh")
    from pt2format.loaders import load_module as _load_module

    return _load_module(f, program=program, map_location=map_location, copy=copy, verify_data=verify_data,
                        prefetch=prefetch, allow_subclasses=allow_subclasses, mmap=mmap)


def save_weights(weights, path, *, encoding: str = "flatbuffers", fsync: bool = True, progress: bool = True,
                 max_shard_size=None, external_data=None, name: str = "default") -> None:
    """Save weights only (no program): an ExportedProgram's state, a dict name -> tensor, or a dict of such sets.

    The file is read back by `attach_weights(ep, path)` or
    `load(program_file, ...)` followed by `attach_weights`.
    """
    from pt2format.exporter import save_weights as _save_weights

    _save_weights(weights, path, encoding=encoding, fsync=fsync, progress=progress, max_shard_size=max_shard_size,
                  external_data=external_data, name=name)


def attach_weights(ep, source, *, program: str | None = None, weight_set: str | None = None, map_location=None,
                   copy: bool = False, strict: bool = True, allow_subclasses: Iterable[type] = (),
                   mmap: bool = True):
    """Give `ep` (for example from `load(path, weights=False)`) the weights of `source`; returns `ep`.

    `source` is a `.pt2f` file (its program's state, or weight set
    `weight_set`; a weights-only file's only set), a safetensors file, or a
    dict name -> tensor. Every state entry must be present with the same
    dtype and shape, else a LoadError lists the differences and `ep` is not
    changed; `strict=True` also refuses names `ep` does not have.
    `allow_subclasses` and `mmap` are as for `load`.
    """
    from pt2format.loaders import attach_weights as _attach

    return _attach(ep, source, program=program, weight_set=weight_set, map_location=map_location, copy=copy,
                   strict=strict, allow_subclasses=allow_subclasses, mmap=mmap)


def read(f: Source, *, verify_data: bool = False, max_program_bytes: int = 1 << 30, max_depth: int = 128,
         copy_on_write: bool = False, json_schema: bool = False, mmap: bool = True) -> PackageFile:
    """Open a `.pt2f` file without torch: the decoded ``Package`` tree plus zero-copy access to its data.

    Args:
        f: a path (memory-mapped), a bytes-like object or a binary file
            object (read into memory, no mmap).
        verify_data: check every data checksum now.
        max_program_bytes: refuse a program section larger than this.
        max_depth: refuse schema trees nested deeper than this.
        copy_on_write: map privately so data views are writable (writes stay
            in memory).
        json_schema: also run the jsonschema library over a JSON program (slow;
            ``validate`` does it).
        mmap: ``False`` reads a path (and its shard and external files, when
            first needed) into memory instead of mapping it, for files
            another process may truncate (see ``load``); a file that shrinks
            while it is read is a ``FormatError``.

    Returns:
        A ``pt2format.PackageFile``: ``.package`` is the
        ``pt2format.schema.Package`` tree; ``.storage_view(i)`` the bytes of
        storage ``i``. Use it as a context manager.
    """
    from pt2format._api import read as _read

    return _read(f, verify_data=verify_data, max_program_bytes=max_program_bytes, max_depth=max_depth,
                 copy_on_write=copy_on_write, json_schema=json_schema, mmap=mmap)


def open(f: Source, *, framework: str = "pt", copy_on_write: bool = False,  # noqa: A001 - safetensors' name
         verify_data: bool = False, mmap: bool = True, device: Any = None) -> LazyFile:
    """Open a `.pt2f` file lazily, like safetensors' ``safe_open``: nothing is built until asked for.

    ::

        with pt2format.open("model.pt2f") as f:
            f.programs()                 # ["forward"]
            f.signature("forward")       # pt2format.schema.GraphSignature
            f.keys()                     # state entry names
            w = f.get_tensor("linear.weight")   # zero-copy torch tensor ("np": numpy array)
            rows = f.get_slice("linear.weight")[0:512, :]   # reads only those rows' bytes
            f.metadata(), f.extra_files()

    Args:
        f: a path (memory-mapped), a bytes-like object or a binary file object.
        framework: ``"pt"`` (torch tensors) or ``"np"`` (numpy arrays, no
            torch needed) for ``get_tensor``.
        copy_on_write: make tensors writable (writes stay in memory).
        verify_data: check every data checksum now.
        mmap: ``False`` reads a path into memory instead of mapping it (see
            ``load``); ``get_tensor`` then views that memory.
        device: where ``get_tensor`` and ``get_slice`` put tensors (a device
            string or ``torch.device``; default: zero-copy CPU views).
            A slice is copied to the device directly from the mapped bytes.

    Returns:
        A ``pt2format.LazyFile``.
    """
    from pt2format._open import LazyFile

    return LazyFile(f, framework=framework, copy_on_write=copy_on_write, verify_data=verify_data, mmap=mmap,
                    device=device)


def validate(f: Source, *, max_program_bytes: int = 1 << 30, max_depth: int = 128, mmap: bool = True) -> None:
    """Check everything: header, program, schema, references, shard files and every data checksum.

    Raises the first problem as a ``Pt2FormatError`` naming the file, section,
    offset or field path; returns None when the file is sound. ``mmap=False``
    reads the file into memory instead of mapping it (see ``load``).
    """
    from pt2format._api import validate as _validate

    _validate(f, max_program_bytes=max_program_bytes, max_depth=max_depth, mmap=mmap)


def from_torch(f: Source, dst: Target, *, encoding: str = "flatbuffers", fsync: bool = True,
               progress: bool | None = None, metadata: Mapping[str, str] | None = None) -> None:
    """Convert a torch.export ``.pt2`` archive to a `.pt2f` file (extra files included).

    The archive is read with ``torch.export.load``, which parses torch's JSON
    and sympy strings: this is as safe as ``torch.export.load`` on that file,
    and no safer. Convert only archives you would load with torch. This is
    the only function that hands a file to torch's loader; ``read``,
    ``load``, ``open`` and ``convert`` refuse a torch archive instead.

    Raises:
        TorchArchiveError: ``f`` is not a zip, is a damaged one, or
            ``torch.export.load`` raised (its exception is the ``__cause__``).
        FormatError: a path that is not a regular file (FIFO, device, ...).
    """
    from pt2format._interop import from_torch as _from_torch

    _from_torch(f, dst, encoding=encoding, fsync=fsync, progress=progress, metadata=metadata)


def to_torch(f: Source, dst: Target, *, program: str | None = None, allow_subclasses: Iterable[type] = ()) -> None:
    """Convert one program of a `.pt2f` file to a torch.export ``.pt2`` archive (``torch.export.save``).

    ``program`` picks the program (default: the only one, or ``"forward"``);
    extra files must be UTF-8 text, as torch requires; metadata is dropped.
    ``allow_subclasses`` is ``load``'s: the tensor subclasses that may be rebuilt.
    """
    from pt2format._interop import to_torch as _to_torch

    _to_torch(f, dst, program=program, allow_subclasses=allow_subclasses)


def __getattr__(name: str):
    # The handle classes and the schema module are public but imported on first use (keeps import light).
    if name == "LazyFile":
        from pt2format._open import LazyFile

        return LazyFile
    if name == "PackageFile":
        from pt2format._api import PackageFile

        return PackageFile
    if name == "schema":
        import importlib

        return importlib.import_module("pt2format.schema")
    raise AttributeError(f"module 'pt2format' has no attribute {name!r}")


__all__ = [
    "save", "load", "load_module", "read", "open", "validate", "from_torch", "to_torch", "save_weights", "attach_weights",
    "FORMAT_VERSION", "__version__", "LazyFile", "PackageFile", "FallbackWarning", "OpsetWarning",
    "Pt2FormatError", "FormatError", "HeaderError", "StaleShardError", "ChecksumError", "SegmentError",
    "EncodingError", "LimitError", "VersionError", "UnsupportedFeatureError", "ValidationError", "StringClassError",
    "ExportError", "LoadError", "TorchArchiveError",
]
