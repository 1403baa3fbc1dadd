"""Run a program on recorded inputs and compare what it returns with recorded results.

Shared by the producer (which records torch's results for the original
program) and the fresh loader process (which compares the loaded program's
results with them). Every run starts from the program's initial state:
`ep.module()` shares tensors with the ExportedProgram, so a buffer mutated in
forward would otherwise leak into the next run.
"""

from __future__ import annotations

import re
import sys

import torch
import torch.utils._pytree as pytree

from conformance._describe import describe_tensor, describe_treespec, describe_value_tree, first_difference
from conformance._tensorio import TreeWriter, composite_parts, decode, lazy_bits, resolved, tensor_bytes


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
    flat = resolved(t).reshape(-1)
    if flat.numel() and flat.stride(0) != 1:
        flat = torch.empty(flat.shape, dtype=flat.dtype).copy_(flat)
    return flat.view(_INT_VIEW[t.dtype.itemsize])


class Snapshot(dict):
    """name -> element bits of each state tensor, plus `requires_grad`: name -> flag of every
    state tensor (with grad mode on, a buffer updated in place from a value that requires
    grad starts to require grad itself; the next run must start without that)."""

    requires_grad: dict


def snapshot(ep) -> Snapshot:
    """Copies of every state tensor's bits (of an ExportedProgram, or of a module such as
    torch.export.unflatten's, which may hold its own copies of the program's buffers), and their
    requires_grad flags. The training IR mutates buffers with in-place ops (no BUFFER_MUTATION
    outputs), so any of them may change during a run. Bits, not values: sub-byte dtypes (int4,
    bits1x8 ...) have no copy kernel."""
    snap = Snapshot()
    snap.requires_grad = {}
    for name, t in _state_tensors(ep):
        snap.requires_grad[name] = bool(t.requires_grad)
        if t.numel() and t.device.type != "meta":
            snap[name] = _bits(t).clone()
    return snap


def restore(ep, snap: dict) -> None:
    """Put the snapshot bits back into the program's own state tensors, and their requires_grad
    flags (a tensor a run made part of an autograd graph is detached in place first). Only
    tensors whose bits changed are written: unchanged ones may live in read-only mapped memory."""
    flags = getattr(snap, "requires_grad", {})
    with torch.no_grad():
        for name, t in _state_tensors(ep):
            _restore_flag(t, flags.get(name))
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


def _restore_flag(t: torch.Tensor, want: bool | None) -> None:
    if want is None or (t.requires_grad == want and t.grad_fn is None):
        return
    if t.grad_fn is not None:
        try:
            t.detach_()
        except RuntimeError:  # a view cannot be detached in place: leave it as the run left it
            return
    if t.is_leaf and t.requires_grad != want:
        t.requires_grad_(want)


def call(fn, args, kwargs, *, grad: bool = True, grads: bool = False):
    """fn(*args, **kwargs) -> (outputs, inputs after the call, buffers after the call) as one tree.

    Grad mode is on, as a user has it by default: whether an output requires grad is
    part of what the program returns (and some kernels round differently with grad
    on, so both sides of a comparison must run in the same mode). `grad=False` is for
    the golden files, whose outputs were recorded under no_grad. The buffers are
    described (bits, strides, storage offset) right after the call, before the next
    run restores them: a module that drops an update of a buffer it does not return
    (BatchNorm's running statistics) differs here and nowhere else. `aliases` says which
    inputs, state tensors and other outputs each output shares storage with (a copy
    with equal values and layout differs nowhere else). `grads=True` also runs one
    backward from the outputs and describes every parameter's `.grad` (outputs cut from
    the autograd graph and made to require grad again differ nowhere else)."""
    with torch.set_grad_enabled(grad):
        out = fn(*args, **kwargs)
    result = {"outputs": out, "inputs_after": [list(args), kwargs], "buffers_after": buffers_after(fn),
              "aliases": aliases(fn, args, kwargs, out)}
    if grads:
        result["grads"] = parameter_grads(fn, out)
    return result


def _storage_of(t):
    """The storage a plain tensor's bytes live in (None for empty, meta, sparse or subclass tensors)."""
    if not isinstance(t, torch.Tensor) or t.device.type == "meta" or composite_parts(t) is not None:
        return None
    st = t.untyped_storage()
    return st.data_ptr() if st.nbytes() else None


def _state_of_module(fn):
    """name -> tensor of a module's parameters, buffers and plain tensor attributes (lifted
    constants of `ep.module()`), tied names included."""
    out = {}
    if not isinstance(fn, torch.nn.Module):
        return out
    for name, t in fn.named_parameters(remove_duplicate=False):
        out[name] = t
    for name, t in fn.named_buffers(remove_duplicate=False):
        out[name] = t
    for prefix, mod in fn.named_modules(remove_duplicate=False):
        for attr, v in vars(mod).items():
            if isinstance(v, torch.Tensor) and not attr.startswith("__"):
                out.setdefault(f"{prefix}.{attr}" if prefix else attr, v)
    return out


def aliases(fn, args, kwargs, out) -> list:
    """For each output leaf: the sorted names of what shares its storage, `input[i]` (leaf i of
    the inputs), `state:NAME` (a parameter, buffer or constant of the called module) and
    `output[j]` (another output leaf); None for a leaf that is not a plain tensor."""
    where = {}
    for i, x in enumerate(pytree.tree_leaves([list(args), kwargs])):
        key = _storage_of(x)
        if key is not None:
            where.setdefault(key, []).append(f"input[{i}]")
    for name, t in _state_of_module(fn).items():
        key = _storage_of(t)
        if key is not None:
            where.setdefault(key, []).append(f"state:{name}")
    leaves = pytree.tree_leaves(out)
    keys = [_storage_of(x) for x in leaves]
    for j, key in enumerate(keys):
        if key is not None:
            where.setdefault(key, []).append(f"output[{j}]")
    return [None if key is None else sorted(set(n for n in where[key] if n != f"output[{j}]"))
            for j, key in enumerate(keys)]


def parameter_grads(fn, out) -> dict:
    """One backward from the outputs (the sum of every floating-point output leaf that requires
    grad, in float64): name -> description of each parameter's `.grad` (None when no gradient
    reaches it), or {"error": text} when the backward raises. Grads are cleared before and after."""
    from conformance._describe import describe_tensor

    params = dict(fn.named_parameters(remove_duplicate=False)) if isinstance(fn, torch.nn.Module) else {}
    if not params:
        return {}
    for p in params.values():
        p.grad = None
    leaves = [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor) and x.requires_grad
              and composite_parts(x) is None and (x.is_floating_point() or x.is_complex())]
    try:
        if leaves:
            loss = sum((x.real if x.is_complex() else x).double().sum() for x in leaves)
            loss.backward()
        got = {name: None if p.grad is None else describe_tensor(p.grad) for name, p in params.items()}
    except Exception as e:  # noqa: BLE001 - compared with torch's own outcome
        got = {"error": f"{type(e).__name__}: {_unversioned(str(e).strip())[:300]}"}  # error_text, unversioned
    for p in params.values():
        p.grad = None
    return got


def buffers_after(fn) -> dict:
    """name -> describe_tensor of every buffer of the called module (persistent or not, tied
    names included); {} when `fn` is not a module."""
    if not isinstance(fn, torch.nn.Module):
        return {}
    return {name: describe_tensor(b) for name, b in fn.named_buffers(remove_duplicate=False)}


def layout(x):
    """What the values do not show of an output or input leaf: strides, storage offset,
    requires_grad and the conjugate / negative bits (keys present only when set) of a strided
    tensor; layout and requires_grad of a sparse or subclass one; None for a non-tensor."""
    if not isinstance(x, torch.Tensor):
        return None
    if composite_parts(x) is not None:
        return {"layout": str(x.layout), "requires_grad": bool(x.requires_grad)}
    return {"stride": list(x.stride()), "storage_offset": int(x.storage_offset()),
            "requires_grad": bool(x.requires_grad), **lazy_bits(x)}


def record(result, writer: TreeWriter) -> dict:
    """Serialize a call result: flattened leaves (bytes on disk) and the tree structure."""
    leaves, spec = pytree.tree_flatten(result["outputs"])
    in_leaves = pytree.tree_leaves(result["inputs_after"])
    return {"leaves": [writer.encode(x) for x in leaves], "spec": describe_treespec(spec),
            "inputs_after": [writer.encode(x) for x in in_leaves],
            "layouts": [layout(x) for x in leaves], "inputs_after_layouts": [layout(x) for x in in_leaves],
            "buffers_after": result.get("buffers_after", {}), "aliases": result.get("aliases"),
            **({"grads": result["grads"]} if "grads" in result else {})}


def record_shapes(result) -> dict:
    """For random outputs: dtypes and shapes of the leaves, their layouts, and the buffers'
    dtypes, shapes and layouts (not their bits: a random program may draw into a buffer)."""
    leaves, spec = pytree.tree_flatten(result["outputs"])
    return {"shapes": [_shape(x) for x in leaves], "spec": describe_treespec(spec),
            "layouts": [layout(x) for x in leaves], "aliases": result.get("aliases"),
            "buffers_after": {k: _no_bits(v) for k, v in result.get("buffers_after", {}).items()}}


def _no_bits(desc: dict) -> dict:
    out = {k: v for k, v in desc.items() if k != "sha256"}
    if "parts" in out:
        out["parts"] = {k: _no_bits(v) for k, v in out["parts"].items()}
    return out


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
    if "shapes" in expected:  # random program: types, shapes and layouts only
        got = [_shape(x) for x in leaves]
        if got != expected["shapes"]:
            return f"output shapes: expected {expected['shapes']}, got {got}"
        problem = compare_buffers(expected.get("buffers_after"), result.get("buffers_after", {}))
        return problem or compare_aliases(expected.get("aliases"), result.get("aliases")) or \
            compare_layouts(expected, leaves)
    problem = _compare_leaves(expected["leaves"], leaves, directory, "output")
    if problem:
        return problem
    in_leaves = pytree.tree_leaves(result["inputs_after"])
    problem = _compare_leaves(expected["inputs_after"], in_leaves, directory, "input after the call")
    if problem:
        return problem
    problem = compare_buffers(expected.get("buffers_after"), result.get("buffers_after", {}))
    if problem:
        return problem
    problem = compare_aliases(expected.get("aliases"), result.get("aliases"))
    if problem:
        return problem
    if "grads" in expected:
        problem = compare_grads(expected["grads"], result.get("grads"))
        if problem:
            return problem
    return compare_layouts(expected, leaves, in_leaves)


def compare_aliases(want: list | None, got: list | None) -> str | None:
    """What each output leaf shares storage with (inputs, state, other outputs), as torch's run."""
    if want is None:
        return None
    if got is None or len(got) != len(want):
        return f"output aliasing: expected {want}, got {got}"
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            return (f"output leaf {i} shares storage with {w or 'nothing'} in torch's run, with "
                    f"{g or 'nothing'} here (an alias returned as a copy, or a copy returned as an alias)")
    return None


def _unversioned(error: str) -> str:
    """An error text without autograd's version counts ("is at version 6; expected version 5"):
    they count the in-place updates of a buffer since it was made, so they tell how many calls the
    runner made on each program before this one, not how the program behaves."""
    return re.sub(r"version \d+", "version N", error)


def compare_grads(want: dict, got: dict | None) -> str | None:
    """Every parameter's `.grad` after one backward from the outputs, bit for bit, as torch's."""
    got = got or {}
    if "error" in want or "error" in got:
        if want.get("error") != got.get("error"):
            return f"backward from the outputs: torch gave {want.get('error', 'gradients')!r}, here " \
                   f"{got.get('error', 'gradients')!r}"
        return None
    for name, w in want.items():
        if name not in got:
            return f"gradients: parameter {name!r} missing from the called module"
        g = got[name]
        if (w is None) != (g is None):
            return (f"gradients: after one backward from the outputs, parameter {name!r} has "
                    f"{'no .grad' if g is None else 'a .grad'}; torch's has {'none' if w is None else 'one'} "
                    "(outputs cut from the autograd graph?)")
        d = first_difference(w, g) if w is not None else None
        if d:
            return f"gradients: parameter {name!r}.grad differs from torch's: {d}"
    return None


class LayoutDifference(str):
    """A difference in strides, storage offset or requires_grad with equal values: the one kind
    of output difference conformance/explained.toml may list (when torch itself shows it)."""


def compare_layouts(expected: dict, leaves, in_leaves=None) -> LayoutDifference | None:
    """Strides, storage offset and requires_grad of every output leaf and input after the call."""
    for what, want, got in (("output", expected.get("layouts"), leaves),
                            ("input after the call", expected.get("inputs_after_layouts"), in_leaves)):
        if want is None or got is None:
            continue
        for i, (w, x) in enumerate(zip(want, got)):
            g = layout(x)
            if w != g:
                d = first_difference(w, g)
                return LayoutDifference(f"{what} leaf {i} has the same values but another layout: {d}")
    return None


def compare_buffers(want: dict | None, got: dict) -> str | None:
    """Every buffer of the called module after the call, bit for bit (names, dtype, shape,
    strides, storage offset, digest) against the original's after the same call."""
    if want is None:
        return None
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    if missing or extra:
        return f"buffers after the call: missing {missing}, unexpected {extra}"
    for name, w in want.items():
        g = got[name] if "sha256" in _flat_keys(w) else _no_bits(got[name])  # random program: no bits
        d = first_difference(w, g)
        if d:
            return f"buffer {name!r} after the call differs from the original's after the same call: {d}"
    return None


def _flat_keys(desc: dict) -> set:
    keys = set(desc)
    for p in desc.get("parts", {}).values():
        keys |= _flat_keys(p)
    return keys


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
    original's field names (or keys) in order, or a tuple (and only a tuple) when the
    original has no names. Anything else (swapped keys, a tuple in place of a named
    container, a dict with keys a name-less container never had) fails.
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
        elif got["type"] != "builtins.tuple":  # no names to keep: a dict's keys would be invented
            return f"{where}: {want['type']} is not importable here and its context has no field names, so the " \
                   f"loader must fall back to a tuple; got {got['type']}" + (
                       f" with keys {got['context']!r}" if got["type"] == "builtins.dict" else "")
    elif want["context"] != got["context"]:
        return f"{where}: expected keys {want['context']!r}, got {got['context']!r}"
    if len(want["children"]) != len(got["children"]):
        return f"{where}: expected {len(want['children'])} children, got {len(got['children'])}"
    for i, (w, g) in enumerate(zip(want["children"], got["children"])):
        problem = compare_spec(w, g, f"{path}[{i}]")
        if problem:
            return problem
    return None
