"""Run a program on recorded inputs and compare what it returns with recorded results.

Shared by the producer (which records torch's results for the original
program) and the fresh loader process (which compares the loaded program's
results with them). Every run starts from the program's initial state:
`ep.module()` shares tensors with the ExportedProgram, so a buffer mutated in
forward would otherwise leak into the next run.
"""

from __future__ import annotations

import sys

import torch
import torch.utils._pytree as pytree

from conformance._describe import describe_treespec, describe_value_tree, first_difference
from conformance._tensorio import TreeWriter, composite_parts, decode, tensor_bytes


def _state_tensors(ep):
    """(name, plain tensor) of the program's state; sparse and subclass tensors give their parts."""
    for name, t in _state_entries(ep):
        yield from _plain(name, t)


def _plain(name, t):
    parts = composite_parts(t)
    if parts is None:
        yield name, t
    elif not t.is_quantized:  # a quantized tensor's int_repr is a copy: nothing to restore into
        for part, p in parts:
            yield from _plain(f"{name}.{part}", p)


def _state_entries(ep):
    if isinstance(ep, torch.nn.Module):  # an unflattened module: its own buffers and parameters
        yield from ep.named_parameters(remove_duplicate=False)
        yield from ep.named_buffers(remove_duplicate=False)  # non-persistent ones too
        return
    for name, t in ep.state_dict.items():
        yield name, t
    for name, t in ep.constants.items():
        if isinstance(t, torch.Tensor):
            yield name, t


_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.int64}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's element bits as a flat integer tensor (a view when `t` is contiguous)."""
    flat = t.detach().reshape(-1)
    if flat.numel() and flat.stride(0) != 1:
        flat = torch.empty(flat.shape, dtype=flat.dtype).copy_(flat)
    return flat.view(_INT_VIEW[t.dtype.itemsize])


def snapshot(ep) -> dict:
    """Copies of every state tensor's bits (of an ExportedProgram, or of a module such as
    torch.export.unflatten's, which may hold its own copies of the program's buffers). The training IR mutates buffers with in-place
    ops (no BUFFER_MUTATION outputs), so any of them may change during a run. Bits, not
    values: sub-byte dtypes (int4, bits1x8 ...) have no copy kernel."""
    return {name: _bits(t).clone() for name, t in _state_tensors(ep) if t.numel() and t.device.type != "meta"}


def restore(ep, snap: dict) -> None:
    """Put the snapshot bits back into the program's own state tensors. Only tensors
    whose bits changed are written: unchanged ones may live in read-only mapped memory."""
    with torch.no_grad():
        for name, t in _state_tensors(ep):
            value = snap.get(name)
            if value is None or t.numel() == 0:
                continue
            current = _bits(t)
            if torch.equal(current, value):
                continue
            if t.is_contiguous():
                t.detach().reshape(-1).view(value.dtype).copy_(value)
            else:
                t.copy_(value.view(t.dtype).reshape(t.shape))


def call(fn, args, kwargs):
    """fn(*args, **kwargs) -> (outputs, inputs after the call) as one tree."""
    with torch.no_grad():
        out = fn(*args, **kwargs)
    return {"outputs": out, "inputs_after": [list(args), kwargs]}


def record(result, writer: TreeWriter) -> dict:
    """Serialize a call result: flattened leaves (bytes on disk) and the tree structure."""
    leaves, spec = pytree.tree_flatten(result["outputs"])
    in_leaves = pytree.tree_leaves(result["inputs_after"])
    return {"leaves": [writer.encode(x) for x in leaves], "spec": describe_treespec(spec),
            "inputs_after": [writer.encode(x) for x in in_leaves]}


def record_shapes(result) -> dict:
    """For random outputs: only dtypes and shapes of the leaves."""
    leaves, spec = pytree.tree_flatten(result["outputs"])
    return {"shapes": [_shape(x) for x in leaves], "spec": describe_treespec(spec)}


def _shape(x):
    if isinstance(x, torch.Tensor):
        return [str(x.dtype), list(x.shape)]
    return type(x).__name__


def same_results(a, b) -> bool:
    """Bitwise equality of two call results (used to detect random programs)."""
    la = pytree.tree_leaves(a["outputs"])
    lb = pytree.tree_leaves(b["outputs"])
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.dtype != y.dtype or x.shape != y.shape or tensor_bytes(x) != tensor_bytes(y):
                return False
        elif first_difference(describe_value_tree(x), describe_value_tree(y)):
            return False
    return True


# --------------------------------------------------------------------------- comparison

def compare_result(expected: dict, result, directory: str) -> str | None:
    """None when `result` matches the recorded one, else the first difference."""
    leaves, spec = pytree.tree_flatten(result["outputs"])
    problem = compare_spec(expected["spec"], describe_treespec(spec))
    if problem:
        return f"output structure: {problem}"
    if "shapes" in expected:  # random program: types and shapes only
        got = [_shape(x) for x in leaves]
        if got != expected["shapes"]:
            return f"output shapes: expected {expected['shapes']}, got {got}"
        return None
    problem = _compare_leaves(expected["leaves"], leaves, directory, "output")
    if problem:
        return problem
    return _compare_leaves(expected["inputs_after"], pytree.tree_leaves(result["inputs_after"]), directory,
                           "input after the call")


def _compare_leaves(docs, leaves, directory: str, what: str) -> str | None:
    if len(docs) != len(leaves):
        return f"{what}s: expected {len(docs)} leaves, got {len(leaves)}"
    for i, (doc, got) in enumerate(zip(docs, leaves)):
        want = decode(doc, directory)
        problem = compare_leaf(want, got)
        if problem:
            return f"{what} leaf {i}: {problem}"
    return None


def compare_leaf(want, got) -> str | None:
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"expected a tensor, got {type(got).__name__}"
        if want.dtype != got.dtype or list(want.shape) != list(got.shape):
            return f"expected {want.dtype}{list(want.shape)}, got {got.dtype}{list(got.shape)}"
        if (want.device.type == "meta") != (got.device.type == "meta"):
            return f"expected a tensor on {want.device.type}, got one on {got.device.type}"
        if tensor_bytes(want) != tensor_bytes(got):
            return "values differ: " + _diff_summary(want, got)
        return None
    if isinstance(got, torch.Tensor):
        return f"expected {want!r}, got a tensor"
    problem = first_difference(describe_value_tree(want), describe_value_tree(got))
    if problem:  # strict types: True is not 1, 1 is not 1.0
        return f"expected {want!r} ({type(want).__name__}), got {got!r} ({type(got).__name__})"
    return None


def _diff_summary(want: torch.Tensor, got: torch.Tensor) -> str:
    try:
        a, b = want.detach().double(), got.detach().double()
        neq = (a != b) & ~(a.isnan() & b.isnan())
        return f"{int(neq.sum())} of {a.numel()} elements differ, max abs diff {float((a - b).abs().nan_to_num().max()):.3g}"
    except Exception:  # noqa: BLE001 - dtypes without arithmetic (bits, float8 on some ops)
        return "bytes differ"


def _resolvable(name: str) -> bool:
    """True when `name` (module.qualname) names an object in an already-imported module."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj = mod
        for p in parts[i:]:
            obj = getattr(obj, p, None)
            if obj is None:
                return False
        return True
    return False


def fallback_names(desc: dict) -> list | None:
    """The field names or keys of a described container, when it has them: what a loader
    that cannot import the class must keep (as a dict) in its place."""
    ctx, n = desc["context"], len(desc["children"])
    if isinstance(ctx, list) and len(ctx) == n and all(isinstance(k, str) for k in ctx):
        return ctx  # namedtuple fields, dict keys
    if (isinstance(ctx, list) and len(ctx) == 2 and isinstance(ctx[0], list) and len(ctx[0]) == n
            and all(isinstance(k, str) for k in ctx[0])):
        return ctx[0]  # a dataclass registered with torch.export.register_dataclass: [fields, none_fields]
    return None


def compare_spec(want, got, path: str = "") -> str | None:
    """Compare two described TreeSpecs.

    The container type must be the original's, with the same keys. Only when the
    original class is not importable in this process may a loader fall back to a
    generic container, and then only to the documented one: a dict holding the
    original's field names (or keys) in order, or a tuple when the original has no
    names. Anything else (swapped keys, a tuple in place of a named container) fails.
    """
    where = path or "<root>"
    if want is None or got is None:
        if want is not got:
            return f"{where}: expected {'a leaf' if want is None else want['type']}, " \
                   f"got {'a leaf' if got is None else got['type']}"
        return None
    if want["type"] != got["type"]:
        if _resolvable(want["type"]):
            return f"{where}: expected container {want['type']}, got {got['type']}"
        names = fallback_names(want)
        if names is not None:
            if got["type"] != "builtins.dict":
                return f"{where}: {want['type']} is not importable here, so the loader must fall back to a dict " \
                       f"with its names {names!r}; got {got['type']}"
            if got["context"] != names:
                return f"{where}: {want['type']} fell back to a dict with keys {got['context']!r}; " \
                       f"expected its names {names!r} in order"
        elif got["type"] not in ("builtins.tuple", "builtins.dict"):
            return f"{where}: {want['type']} is not importable here; expected a tuple or dict fallback, " \
                   f"got {got['type']}"
    elif want["context"] != got["context"]:
        return f"{where}: expected keys {want['context']!r}, got {got['context']!r}"
    if len(want["children"]) != len(got["children"]):
        return f"{where}: expected {len(want['children'])} children, got {len(got['children'])}"
    for i, (w, g) in enumerate(zip(want["children"], got["children"])):
        problem = compare_spec(w, g, f"{path}[{i}]")
        if problem:
            return problem
    return None
