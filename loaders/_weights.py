"""Weights apart from programs: attach state tensors to an ExportedProgram from a .pt2f or safetensors file.

`pt2format.load(path, weights=False)` gives a program whose state lives on
the meta device; `attach_weights(ep, source)` fills it from the same file,
from another `.pt2f` holding the same state entries (its program's state or
one of its weight sets), from a safetensors file, or from a dict of tensors.
Tensors from files are zero-copy views of a private (copy-on-write) map.
Every state entry must be found with the dtype and shape the program
expects; otherwise nothing is changed and a LoadError lists what differs.
"""

from __future__ import annotations

import mmap
import os
import warnings

import torch

from pt2format._options import ATTACH_WEIGHTS
from pt2format._source import open_regular, read_regular
from pt2format.errors import LoadError, Pt2FormatError

from ._state import StateLoader, _map_device
from ._values import dtype_from_schema

_SAFETENSORS_MAGIC_HINT = b"{"


def _program_state(ep) -> dict:
    """Name -> (container dict, current tensor) for every tensor of ep's state."""
    out = {}
    for name, t in ep.state_dict.items():
        out[name] = ("state_dict", t)
    for name, c in ep.constants.items():
        if isinstance(c, torch.Tensor):
            out[name] = ("constants", c)
    return out


def _is_safetensors(path: str) -> bool:
    with open_regular(path) as f:  # never a FIFO, device or directory
        head = f.read(9)
    return len(head) == 9 and head[8:9] == _SAFETENSORS_MAGIC_HINT


def _from_safetensors(path: str, *, use_mmap: bool) -> dict:
    """Name -> zero-copy tensor over a private map of a safetensors file (`use_mmap=False`: a private copy)."""
    from pt2format._external import read_safetensors_header

    entries, _, _ = read_safetensors_header(path)
    if use_mmap:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if size else None
    else:
        buf, st = read_regular(path)
        size = st.st_size
        mm = buf if size else None
    need = max((e.end for e in entries.values()), default=0)
    if need > size:  # changed since its header was read
        raise LoadError("safetensors file shrank after its header was read", file=path,
                        expected=f">= {need} bytes", got=size)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = torch.frombuffer(mm, dtype=torch.uint8) if mm is not None else torch.empty(0, dtype=torch.uint8)
    for name, e in entries.items():
        if e.dtype is None:
            raise LoadError("safetensors dtype has no pt2format equivalent", file=path, path=repr(name))
        from pt2format._generated import model as m

        dtype = dtype_from_schema(m.ScalarType[e.dtype], repr(name))
        u8 = base[e.begin:e.end]
        out[name] = u8.view(dtype).reshape(e.shape) if e.end > e.begin else torch.empty(e.shape, dtype=dtype)
    return out


def _from_pt2f(source, *, program: str | None, weight_set: str | None, map_location, copy: bool,
               allow_subclasses, use_mmap: bool) -> dict:
    """Name -> tensor of a program's state or of a weight set of a .pt2f file (path, bytes or file object)."""
    from pt2format._api import read

    f = read(source, copy_on_write=True, mmap=use_mmap)
    try:
        return tensors_of(f, program=program, weight_set=weight_set, map_location=map_location, copy=copy,
                          allow_subclasses=allow_subclasses)
    except Pt2FormatError as e:
        raise e.with_context(file=f.path)
    finally:
        f.close()  # tensors keep their views (and so the map) alive


def tensors_of(f, *, program: str | None, weight_set: str | None, map_location, copy: bool,
               allow_subclasses) -> dict:
    """Name -> tensor of a program's state or of weight set `weight_set` of the open PackageFile `f`."""
    pkg = f.package
    if weight_set is not None:
        sets = {ws.name: ws for ws in pkg.weight_sets}
        if weight_set not in sets:
            raise LoadError(f"no weight set named {weight_set!r}", path="weight_sets", expected=sorted(sets),
                            got=weight_set)
        entries = sets[weight_set].entries
    elif pkg.programs:
        from pt2format._find import find_program

        entries = find_program(pkg, program).state
    elif len(pkg.weight_sets) == 1:
        entries = pkg.weight_sets[0].entries
    else:
        raise LoadError("file has no program and several weight sets: name one with weight_set=",
                        expected=sorted(ws.name for ws in pkg.weight_sets))
    loader = StateLoader(pkg, f.storage_view, map_location=map_location, copy=copy, allow_subclasses=allow_subclasses)
    return {e.name: loader.tensor(e.tensor, e.name) for e in entries}


def _fill_tied(state: dict, new: dict) -> None:
    """A name missing from `new` whose tensor is tied (same storage and view) to a present one takes that one.

    Hugging Face safetensors files store tied weights once (`lm_head.weight`
    tied to the embedding), while the program names both.
    """
    def key(t):
        return (t.untyped_storage()._cdata, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
    present = {}
    for name, (_, old) in state.items():
        if name in new:
            present.setdefault(key(old), name)
    for name, (_, old) in state.items():
        if name not in new:
            other = present.get(key(old))
            if other is not None:
                new[name] = new[other]


@ATTACH_WEIGHTS.lends("program", "weight_set", "map_location", "copy", "allow_subclasses", "mmap")
def read_weights(source, *, program: str | None, weight_set: str | None, map_location, copy: bool, allow_subclasses,
                 mmap: bool) -> dict:
    """Name -> tensor from a dict of tensors, a path (.pt2f or safetensors), or a .pt2f as bytes or a file object.

    `mmap=False`: a path is read, not mapped. The options default as for
    `pt2format.attach_weights`, which reads its source through here.
    """
    from pt2format._source import is_pathlike

    if isinstance(source, dict):
        return dict(source)
    if is_pathlike(source) and _is_safetensors(os.fspath(source)):
        path = os.fspath(source)
        if weight_set is not None:
            raise LoadError("a safetensors file has no weight sets", file=path, got=weight_set)
        tensors = _from_safetensors(path, use_mmap=mmap)
        if map_location is not None or copy:
            tensors = {k: _placed(v, map_location, copy, f"{path}: {k}") for k, v in tensors.items()}
        return tensors
    return _from_pt2f(source, program=program, weight_set=weight_set, map_location=map_location, copy=copy,
                      allow_subclasses=allow_subclasses, use_mmap=mmap)


def _placed(t, map_location, copy: bool, where: str):
    """`t` where `map_location` puts it, with the meanings it has for a `.pt2f` source (loaders/_state.py):
    a device string or ``torch.device``, a dict (full device string first, then device type) or torch.load's
    callable ``f(storage, location)`` returning the storage to use (None: keep it)."""
    if callable(map_location):
        src = t.clone() if copy else t
        mapped = map_location(src.untyped_storage(), str(src.device))
        if mapped is None:
            return src
        if not isinstance(mapped, torch.UntypedStorage) or mapped.nbytes() != src.untyped_storage().nbytes():
            raise LoadError("map_location callable must return an UntypedStorage of the same size", path=where,
                            got=type(mapped).__name__)
        return torch.empty(0, dtype=t.dtype, device=mapped.device).set_(mapped, t.storage_offset(), t.shape,
                                                                         t.stride())
    try:
        device = _map_device(map_location, t.device)
    except TypeError as e:
        raise LoadError(str(e), path=where, got=type(map_location).__name__) from e
    moved = t.to(device)
    return moved.clone() if copy and moved is t else moved


@ATTACH_WEIGHTS.implements
def attach_weights(ep, source, *, program, weight_set, map_location, copy, strict, allow_subclasses, mmap):
    """Replace every state tensor of `ep` by the tensor of the same name from `source`; returns `ep`.

    Names, dtypes and shapes are checked first, for every entry: on any
    difference a LoadError lists them and `ep` is left unchanged. `strict`
    also refuses tensors in `source` that `ep` does not use. Parameters stay
    Parameters (same requires_grad); tensors that were tied (one storage) in
    `ep` are tied to the first one attached when the source has only one.
    """
    new = read_weights(source, program=program, weight_set=weight_set, map_location=map_location, copy=copy,
                       allow_subclasses=allow_subclasses, mmap=mmap)
    from pt2format._source import is_pathlike

    return attach_tensors(ep, new, where=os.fspath(source) if is_pathlike(source) else None, strict=strict)


def attach_tensors(ep, new: dict, *, where=None, strict: bool):
    """`attach_weights` with the tensors already read (name -> tensor); `where` names their file in errors."""
    state = _program_state(ep)
    new = dict(new)
    _fill_tied(state, new)
    problems = []
    missing = [n for n in state if n not in new]
    if missing:
        problems.append(f"missing: {', '.join(sorted(missing))}")
    for name, (_, old) in sorted(state.items()):
        t = new.get(name)
        if t is None:
            continue
        if t.dtype != old.dtype:
            problems.append(f"{name}: dtype {t.dtype}, expected {old.dtype}")
        elif tuple(t.shape) != tuple(old.shape):
            problems.append(f"{name}: shape {tuple(t.shape)}, expected {tuple(old.shape)}")
    if strict:
        extra = sorted(set(new) - set(state))
        if extra:
            problems.append(f"not in the program: {', '.join(extra)}")
    if problems:
        raise LoadError("weights do not match the program's state: " + "; ".join(problems), file=where,
                        expected=f"{len(state)} state tensors with the program's names, dtypes and shapes",
                        got=f"{len(problems)} difference(s)")
    for name, (where_, old) in state.items():
        t = new[name]
        if isinstance(old, torch.nn.Parameter):
            t = torch.nn.Parameter(t, requires_grad=old.requires_grad)
        else:
            t = t.detach()
        if where_ == "state_dict":
            ep.state_dict[name] = t
        else:
            ep.constants[name] = t
    return ep
