"""Weight sets: state tensors by name -> `Package.weight_sets`, and weights-only packages.

A weight set is a named list of state entries (name, role, tensor) that can
replace the programs' own state at load time: one program, several weight
sets (a base model and its fine-tunes), or a file with no program at all (a
weights-only file that `pt2format.attach_weights` reads). Tensors go through
the package's one `TensorTable`, so a tensor shared by two sets, or by a set
and a program, is stored once.
"""

from __future__ import annotations

import torch

from pt2format._generated.model import Package, StateEntry, WeightSet
from pt2format import _content_minor
from pt2format.errors import ExportError

from ._package import new_package, state_kind
from ._tensors import TensorTable


def state_tensors(source) -> dict:
    """Name -> (tensor, StateKind) of an ExportedProgram's state, or of a dict name -> tensor."""
    if isinstance(source, torch.export.ExportedProgram):
        out = {}
        non_persistent = set(source.graph_signature.non_persistent_buffers)
        for name, t in source.state_dict.items():
            out[name] = (t, state_kind(t, name))
        for name, c in source.constants.items():
            if isinstance(c, torch.Tensor):
                out[name] = (c, state_kind(c, name, constant=True, non_persistent=non_persistent))
        return out
    if isinstance(source, dict):
        out = {}
        for name, t in source.items():
            if not isinstance(name, str) or not name:
                raise ExportError("weight names must be non-empty strings", got=repr(name))
            if not isinstance(t, torch.Tensor):
                raise ExportError("weights must be tensors", path=f"[{name!r}]", got=type(t).__name__)
            out[name] = (t, state_kind(t, name))
        return out
    raise ExportError("a weight set is an ExportedProgram or a dict name -> tensor", got=type(source).__name__)


def weight_set(name: str, source, tensors: TensorTable, kinds: dict | None = None) -> WeightSet:
    """One WeightSet, its entries sorted by name; `kinds` (name -> StateKind) overrides roles from programs."""
    if not isinstance(name, str) or not name:
        raise ExportError("weight set names must be non-empty strings", got=repr(name))
    entries = []
    for fqn, (t, kind) in sorted(state_tensors(source).items()):
        kind = (kinds or {}).get(fqn, kind)
        entries.append(StateEntry(name=fqn, kind=kind, tensor=tensors.add(t, f"weight_sets[{name!r}][{fqn!r}]")))
    return WeightSet(name=name, entries=entries)


def program_state_kinds(programs) -> dict:
    """Name -> StateKind of every state entry of `programs` (schema Program objects)."""
    kinds = {}
    for prog in programs:
        for e in prog.state:
            kinds.setdefault(e.name, e.kind)
    return kinds


def add_weight_sets(package: Package, tensors: TensorTable, sets: dict) -> None:
    """Append `sets` (set name -> ExportedProgram or dict) to `package.weight_sets`, sorted by name."""
    if not isinstance(sets, dict):
        raise ExportError("weight_sets must be a dict name -> ExportedProgram or dict of tensors",
                          got=type(sets).__name__)
    kinds = program_state_kinds(package.programs)
    package.weight_sets = [weight_set(n, sets[n], tensors, kinds) for n in sorted(sets)]
    package.tensors = tensors.tensors
    package.storages = tensors.storages


def export_weights(sets: dict):
    """(Package, payloads) of a weights-only file: no programs, one weight set per entry of `sets`."""
    tensors = TensorTable()
    package = new_package()
    add_weight_sets(package, tensors, sets)
    package.required_features |= tensors.required_features
    _content_minor.label(package)
    return package, tensors.payloads
