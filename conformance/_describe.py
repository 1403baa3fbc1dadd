"""Describe an ExportedProgram as plain JSON data, so two programs can be compared.

The parent describes the program torch exported; the fresh loader process
describes what pt2format.load returned; equal descriptions mean equal
programs for the property described. Everything here reads torch objects
only (never pt2format internals), so the comparison is against torch's own
view of both programs. Object addresses never appear in a description.
"""

from __future__ import annotations

import math
import re
import sys

import torch
import torch.utils._pytree as pytree

from conformance._tensorio import composite_info, composite_parts, lazy_bits, tensor_digest


# --------------------------------------------------------------------------- names

def qualname(obj) -> str:
    """module.qualname of a class or function; strings pass through unchanged."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(obj)
    if isinstance(obj, torch._ops.HigherOrderOperator):
        return f"higher_order.{obj.name()}"
    mod = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__qualname__
    return f"{mod}.{name}" if mod else name


def target_str(target) -> str:
    return qualname(target)


def _fmt_float(x: float) -> str:
    return "f:" + float.hex(x)


def arg_repr(a):
    """A JSON-able rendering of an FX argument. A list renders as a JSON list, a
    tuple as {"()": [...]}: torch gives the two different meanings (an op schema's
    `int[]` vs a tuple output), so a loader that swaps them must show up."""
    if isinstance(a, torch.fx.Node):
        return "%" + a.name
    if isinstance(a, tuple):
        return {"()": [arg_repr(x) for x in a]}
    if isinstance(a, (list, tuple)):
        return [arg_repr(x) for x in a]
    if isinstance(a, dict):
        return {str(k): arg_repr(v) for k, v in a.items()}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return _fmt_float(a)
    if isinstance(a, complex):
        return ["complex", _fmt_float(a.real), _fmt_float(a.imag)]
    if isinstance(a, (torch.dtype, torch.layout, torch.memory_format, torch.device)):
        return f"{type(a).__name__}:{a}"
    if isinstance(a, (torch._ops.OpOverload, torch._ops.OpOverloadPacket, torch._ops.HigherOrderOperator)):
        return "op:" + qualname(a)
    if isinstance(a, slice):
        return ["slice", arg_repr(a.start), arg_repr(a.stop), arg_repr(a.step)]
    if isinstance(a, torch.Tensor):
        return "tensor:" + describe_val(a)
    if callable(a):
        return "fn:" + qualname(a)
    return "obj:" + qualname(type(a))


# --------------------------------------------------------------------------- values

def describe_val(v):
    """node.meta['val'] rendering: dtype, symbolic sizes and strides, device."""
    if isinstance(v, torch.Tensor):
        sizes = ",".join(str(s) for s in v.shape)
        try:
            strides = ",".join(str(s) for s in v.stride())
        except RuntimeError:
            strides = "?"
        return f"{v.dtype}[{sizes}]({strides}){v.device}" + ("grad" if v.requires_grad else "")
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return f"{type(v).__name__}:{v}"
    if isinstance(v, (list, tuple)):
        return [describe_val(x) for x in v]
    if isinstance(v, dict):
        return {str(k): describe_val(x) for k, x in v.items()}
    if isinstance(v, float):
        return _fmt_float(v)
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return "obj:" + custom_obj_class(v)


def custom_obj_class(obj) -> str:
    """Qualified class name of a torchbind object, real or fake."""
    name = getattr(obj, "script_class_name", None)
    if name:
        return str(name)
    if isinstance(obj, torch.ScriptObject):
        try:
            return obj._type().qualified_name()
        except Exception:  # noqa: BLE001 - best effort naming only
            pass
    return qualname(type(obj))


def resolve(name: str):
    """The object a dotted name denotes in already-imported modules (never imports), or None."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        obj = sys.modules.get(".".join(parts[:i]))
        if obj is None:
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except Exception:  # noqa: BLE001 - torch.ops raises on unknown names
            return None
        return obj
    return None


def _norm_stack_item(x):
    """Metadata entries naming a function or class: the object's qualified name. A loader
    may keep them as strings; a string naming an importable object compares as that object."""
    if isinstance(x, (list, tuple)):
        return [_norm_stack_item(y) for y in x]
    if isinstance(x, str) and "." in x:
        obj = resolve(x)
        return x if obj is None or isinstance(obj, (str, int, float, bool, type(sys))) else qualname(obj)
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return _fmt_float(x)
    return qualname(x)


def describe_meta(node: torch.fx.Node) -> dict:
    m = node.meta
    out = {}
    if "val" in m:
        out["val"] = describe_val(m["val"])
    if m.get("nn_module_stack"):  # in order, outermost first: a list of pairs, as a dict compares unordered
        out["nn_module_stack"] = [[str(k), _norm_stack_item(v)] for k, v in m["nn_module_stack"].items()]
    if m.get("source_fn_stack"):
        out["source_fn_stack"] = _norm_stack_item(m["source_fn_stack"])
    if m.get("stack_trace"):
        out["stack_trace"] = m["stack_trace"]
    if m.get("torch_fn"):
        out["torch_fn"] = _norm_stack_item(m["torch_fn"])
    if m.get("custom"):
        out["custom"] = arg_repr(m["custom"])
    if m.get("unbacked_bindings"):
        out["unbacked_bindings"] = sorted(str(k) for k in m["unbacked_bindings"])
    if "tensor_meta" in m:
        out["tensor_meta"] = _describe_tensor_meta(m["tensor_meta"])
    if "seq_nr" in m:
        out["seq_nr"] = m["seq_nr"]
    if "original_aten" in m:
        out["original_aten"] = arg_repr(m["original_aten"])
    if "desc" in m:
        out["desc"] = repr(m["desc"])  # torch's descriptors are frozen dataclasses: the repr shows every field
    return out


def _describe_tensor_meta(tm):
    """TensorMetadata (a namedtuple, or a pytree of them) field by field; symbolic sizes as expressions."""
    if isinstance(tm, tuple) and hasattr(tm, "_fields"):
        return {"type": type(tm).__name__, **{f: repr(getattr(tm, f)) for f in tm._fields}}
    if isinstance(tm, (list, tuple)):
        return [_describe_tensor_meta(x) for x in tm]
    if isinstance(tm, dict):
        return {str(k): _describe_tensor_meta(v) for k, v in tm.items()}
    return "obj:" + qualname(type(tm)) + ":" + repr(tm)


# --------------------------------------------------------------------------- graph

def _get_attr(gm, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def describe_graph(gm: torch.fx.GraphModule, *, meta: bool) -> dict:
    """Nodes in order (name, op, target, args, kwargs), recursing into subgraph modules."""
    nodes, subgraphs = [], {}
    for n in gm.graph.nodes:
        entry = [n.name, n.op, target_str(n.target), arg_repr(n.args), arg_repr(n.kwargs)]
        if meta:
            entry = [n.name, describe_meta(n)]
        nodes.append(entry)
        if n.op == "get_attr":
            sub = _get_attr(gm, n.target)
            if isinstance(sub, torch.fx.GraphModule):
                subgraphs[n.target] = describe_graph(sub, meta=meta)
    out = {"nodes": nodes, "subgraphs": subgraphs}
    if meta and "custom" in gm.meta:  # the user's data in graph_module.meta; the other entries are derived
        out["module_meta_custom"] = arg_repr(gm.meta["custom"])
    return out


_ON_NODE = re.compile(r"on node '([A-Za-z_][A-Za-z0-9_]*)'")


def positional_names(desc: dict) -> dict:
    """A graph description with intermediate node names replaced by their position.

    Names torch picks while re-tracing (run_decompositions) depend on counters
    outside the program (the exporting session's ShapeEnv), so decomposed
    graphs are compared up to this renaming; placeholders keep their names.
    """
    mapping = {}
    for i, entry in enumerate(desc["nodes"]):
        if entry[1] != "placeholder":
            mapping["%" + entry[0]] = f"%#{i}"

    def sub(a):
        if isinstance(a, str):
            # a runtime assertion's message names a node of the trace that inserted it ("... on node
            # 'le_1'"), not always one of this graph: an intermediate name too
            return mapping.get(a) or _ON_NODE.sub("on node '…'", a)
        if isinstance(a, list):
            return [sub(x) for x in a]
        if isinstance(a, dict):
            return {k: sub(v) for k, v in a.items()}
        return a

    nodes = [[mapping.get("%" + e[0], "%" + e[0])[1:], e[1], e[2], sub(e[3]), sub(e[4])] for e in desc["nodes"]]
    return {"nodes": nodes, "subgraphs": {k: positional_names(v) for k, v in desc["subgraphs"].items()}}


def decomposed_meta(gm: torch.fx.GraphModule) -> dict:
    """Node metadata of a graph made by a re-trace (run_decompositions), comparable across
    processes: nodes by position (placeholders by name), as `positional_names` does for the
    graph, and without `seq_nr` (a process-wide autograd counter the re-trace draws from) or
    the `custom` key `_torchdynamo_disable_method` (which of torch's tracing entry points the
    re-trace went through: "trace" in a process that exported before, "dispatch_trace" in a
    fresh one, for the same program)."""
    nodes, subgraphs = [], {}
    for i, n in enumerate(gm.graph.nodes):
        meta = {k: v for k, v in describe_meta(n).items() if k != "seq_nr"}
        if isinstance(meta.get("custom"), dict):
            meta["custom"] = {k: v for k, v in meta["custom"].items() if k != "_torchdynamo_disable_method"}
            if not meta["custom"]:
                del meta["custom"]
        nodes.append([n.name if n.op == "placeholder" else f"#{i}", meta])
        if n.op == "get_attr":
            sub = _get_attr(gm, n.target)
            if isinstance(sub, torch.fx.GraphModule):
                subgraphs[n.target] = decomposed_meta(sub)
    return {"nodes": nodes, "subgraphs": subgraphs}


#: The node metadata a re-trace copies from the node it decomposes (provenance), compared on a
#: decomposed graph; `val`, `tensor_meta` and `unbacked_bindings` are recomputed by the re-trace
#: from its ShapeEnv (a loaded program's simplifies `Min(4, 4*s27)` to `4` where the exporting
#: process's does not) and are checked through the results on every input set instead.
PROVENANCE_KEYS = ("nn_module_stack", "source_fn_stack", "stack_trace", "torch_fn", "custom", "original_aten", "desc")
_EVAL_KEY = re.compile(r"<eval_with_key>\.\d+")


def provenance_meta(desc: dict) -> dict:
    """`decomposed_meta` reduced to PROVENANCE_KEYS, with the process-wide counter in
    `<eval_with_key>.N` file names (code torch generated in this process) left out."""
    def node(meta):
        out = {k: v for k, v in meta.items() if k in PROVENANCE_KEYS}
        if isinstance(out.get("stack_trace"), str):
            out["stack_trace"] = _EVAL_KEY.sub("<eval_with_key>", out["stack_trace"])
        return out

    return {"nodes": [[name, node(meta)] for name, meta in desc["nodes"]],
            "subgraphs": {k: provenance_meta(v) for k, v in desc["subgraphs"].items()}}


# --------------------------------------------------------------------------- signature

def _spec_arg(arg) -> list:
    kind = type(arg).__name__
    out = [kind, getattr(arg, "name", None)]
    if hasattr(arg, "value"):
        out.append(arg_repr(arg.value))
    if hasattr(arg, "class_fqn"):
        out.append(arg.class_fqn)
    return out


def describe_signature(ep) -> dict:
    sig = ep.graph_signature

    def spec(s):
        return [s.kind.name, _spec_arg(s.arg), s.target, getattr(s, "persistent", None)]

    return {
        "inputs": [spec(s) for s in sig.input_specs],
        "outputs": [spec(s) for s in sig.output_specs],
        "verifiers": [getattr(v, "dialect", qualname(v)) for v in getattr(ep, "verifiers", [])],
    }


def describe_range_constraints(ep) -> dict:
    return {str(k): str(v) for k, v in sorted(ep.range_constraints.items(), key=lambda kv: str(kv[0]))}


def describe_treespec(spec) -> dict | None:
    """{type, context, children} for a pytree TreeSpec; None for a leaf."""
    if spec is None:
        return None
    if spec.is_leaf():
        return None
    t = spec.type
    ctx = spec.context
    if isinstance(ctx, type) and hasattr(ctx, "_fields"):  # namedtuple: context is the class
        tname, ctx = qualname(ctx), list(ctx._fields)
    else:
        tname = qualname(t)
        ctx = _ctx_repr(ctx)
    return {"type": tname, "context": ctx, "children": [describe_treespec(c) for c in spec.children()]}


def _ctx_repr(ctx):
    if ctx is None or isinstance(ctx, (bool, int, str)):
        return ctx
    if isinstance(ctx, float):
        return _fmt_float(ctx)
    if isinstance(ctx, (list, tuple)):
        return [_ctx_repr(c) for c in ctx]
    if isinstance(ctx, dict):
        return {str(k): _ctx_repr(v) for k, v in ctx.items()}
    if isinstance(ctx, type):
        return qualname(ctx)
    text = str(ctx)
    return "obj:" + qualname(type(ctx)) if " at 0x" in text else text


def describe_module_call_graph(ep) -> list:
    out = []
    for e in ep.module_call_graph:
        sig = e.signature
        d = {"fqn": e.fqn}
        if sig is not None:
            d["inputs"] = [_spec_arg(a) for a in sig.inputs]
            d["outputs"] = [_spec_arg(a) for a in sig.outputs]
            d["in_spec"] = describe_treespec(sig.in_spec)
            d["out_spec"] = describe_treespec(sig.out_spec)
            names = getattr(sig, "forward_arg_names", None)
            d["forward_arg_names"] = None if names is None else list(names)  # None and [] differ in torch
        out.append(d)
    return out


# --------------------------------------------------------------------------- state

def _storage_identity(t: torch.Tensor):
    """The StorageImpl behind a tensor (empty storages included)."""
    return t.untyped_storage()._cdata


def _storage_key(t: torch.Tensor):
    if composite_parts(t) is not None and not t.is_quantized:
        return None  # no storage of its own; its parts are described one by one
    st = t.untyped_storage()
    if st.nbytes() == 0:
        return None
    return st.data_ptr()


def describe_tensor(t: torch.Tensor) -> dict:
    parts = composite_parts(t)
    if parts is not None:  # sparse, quantized or a wrapper subclass: its parts bit for bit
        return {"dtype": str(t.dtype), "shape": list(t.shape), "requires_grad": bool(t.requires_grad),
                "parameter": isinstance(t, torch.nn.Parameter), **composite_info(t),
                "parts": {name: describe_tensor(p) for name, p in parts}}
    out = {"dtype": str(t.dtype), "shape": list(t.shape), "stride": list(t.stride()),
           "storage_offset": t.storage_offset(), "requires_grad": bool(t.requires_grad),
           "parameter": isinstance(t, torch.nn.Parameter), "sha256": tensor_digest(t), **lazy_bits(t)}
    if t.device.type == "meta":
        out["device"] = "meta"  # no data to digest: a loader giving real tensors (or none) must differ
    return out


def describe_state(ep) -> dict:
    """Every state tensor bit for bit, which of them share storage, and custom objects."""
    tensors, objects, groups = {}, {}, {}
    entries = [("state_dict", k, v) for k, v in ep.state_dict.items()]
    entries += [("constants", k, v) for k, v in ep.constants.items()]
    for where, name, v in entries:
        key = f"{where}:{name}"
        if isinstance(v, torch.Tensor):
            tensors[key] = describe_tensor(v)
            sk = _storage_key(v)
            if sk is not None:
                groups.setdefault(sk, []).append(key)
        else:
            objects[key] = describe_custom_obj(v)
    aliases = sorted(sorted(g) for g in groups.values() if len(g) > 1)
    return {"tensors": tensors, "alias_groups": aliases, "objects": objects}


def describe_custom_obj(obj) -> dict:
    state = None
    getstate = getattr(obj, "__getstate__", None)
    if isinstance(obj, torch.ScriptObject) and getstate is not None:
        try:
            state = describe_value_tree(getstate())
        except Exception as e:  # noqa: BLE001 - a class without pickle support
            state = f"<no state: {type(e).__name__}>"
    return {"class": custom_obj_class(obj), "state": state}


def describe_value_tree(v):
    """Tensors by digest, scalars exact, containers recursively (example inputs, object state)."""
    if isinstance(v, torch.Tensor):
        return {"tensor": describe_tensor(v)}
    if isinstance(v, (list, tuple)):
        return [describe_value_tree(x) for x in v]
    if isinstance(v, dict):
        return {str(k): describe_value_tree(x) for k, x in v.items()}
    if isinstance(v, float):
        return _fmt_float(v)
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return "obj:" + qualname(type(v))


def describe_program(ep) -> dict:
    """All static properties compared after a round trip, keyed by check name."""
    return {
        "graph": describe_graph(ep.graph_module, meta=False),
        "meta": describe_graph(ep.graph_module, meta=True),
        "signature": describe_signature(ep),
        "range_constraints": describe_range_constraints(ep),
        "module_call_graph": describe_module_call_graph(ep),
        "state": describe_state(ep),
        "example_inputs": describe_value_tree(ep.example_inputs) if ep.example_inputs is not None else None,
    }


def _with_storage(t: torch.Tensor) -> list:
    """`t`, or for a sparse or subclass tensor the plain tensors (with storages) it is made of."""
    parts = composite_parts(t)
    if parts is None:
        return [t]
    if t.is_quantized:  # its own storage holds the integers; per-channel parameters are tensors of their own
        return [t] + [p for _, p in parts[1:]]
    return [q for _, p in parts for q in _with_storage(p)]


def storage_keys(ep) -> tuple[set, set]:
    """Distinct storages of the state and example inputs (what the file must hold once each):
    (non-empty ones, empty ones). A writer may merge empty storages: they hold no bytes."""
    vals = list(ep.state_dict.values()) + [v for v in ep.constants.values() if isinstance(v, torch.Tensor)]
    if ep.example_inputs is not None:
        vals += [x for x in pytree.tree_leaves(ep.example_inputs) if isinstance(x, torch.Tensor)]
    vals = [p for t in vals for p in _with_storage(t)]
    full = {_storage_identity(t) for t in vals if t.untyped_storage().nbytes()}
    empty = {_storage_identity(t) for t in vals if not t.untyped_storage().nbytes()}
    return full, empty


def cross_program_aliases(eps: dict) -> list:
    """Groups of state tensors of different programs of one file that share a storage
    (`program:state_dict:name`, `program:constants:name`), sorted: what a loader must keep
    shared, so a cache one program writes is the cache another reads."""
    groups = {}
    for pname, ep in eps.items():
        entries = [("state_dict", k, v) for k, v in ep.state_dict.items()]
        entries += [("constants", k, v) for k, v in ep.constants.items() if isinstance(v, torch.Tensor)]
        for where, name, t in entries:
            key = _storage_key(t)
            if key is not None:
                groups.setdefault(key, []).append((pname, f"{pname}:{where}:{name}"))
    return sorted(sorted(k for _, k in g) for g in groups.values() if len({p for p, _ in g}) > 1)


# --------------------------------------------------------------------------- diffs

def first_difference(a, b, path: str = "") -> str | None:
    """Path and values of the first place where two JSON-like trees differ, or None.

    Types must match exactly: `True` and `1` (or `1` and `1.0`) compare equal in
    Python but are different values in a program (a bool flag vs an int size), so
    they are a difference here."""
    if type(a) is not type(b):
        return f"{path or '<root>'}: expected {_short(a)} ({type(a).__name__}), got {_short(b)} ({type(b).__name__})"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in b:
                return f"{path}.{k}: missing (expected {_short(a[k])})"
            if k not in a:
                return f"{path}.{k}: unexpected {_short(b[k])}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return f"{path}: expected {len(a)} items, got {len(b)}"
        return None
    if a != b and not (isinstance(a, float) and math.isnan(a) and math.isnan(b)):
        return f"{path or '<root>'}: expected {_short(a)}, got {_short(b)}"
    return None


def _short(v, limit: int = 160) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."

