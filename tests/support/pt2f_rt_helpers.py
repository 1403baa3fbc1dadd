"""Shared helpers for the round-trip tests: save/load in memory or through a file, and compare with torch.

Every comparison is against the original torch objects (graph, signature,
state, outputs), never against a second output of our own code.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.fx
from torch.fx.traceback import NodeSource

from pt2format.exporter import export_package
from pt2format.loaders import build_program


def roundtrip_memory(ep, **load_kw):
    """(package, payloads, loaded ep) without touching the disk."""
    pkg, payloads = export_package(ep)
    # Copies: the payloads are views of the original tensors, which the loaded program must not share.
    copies = [memoryview(bytearray(p)) for p in payloads]
    loaded = build_program(pkg, None, lambda i: copies[i], **load_kw)
    return pkg, payloads, loaded


def roundtrip_file(ep, path, *, encoding="flatbuffers", **load_kw):
    import pt2format
    pt2format.save(ep, path, encoding=encoding, progress=False, fsync=False)
    return pt2format.load(path, **load_kw)


# -- structural descriptions of FX objects ------------------------------------------------------

def describe_arg(a):
    """Nodes by name; containers keep list vs tuple; other values as themselves."""
    if isinstance(a, torch.fx.Node):
        return ("node", a.name)
    if isinstance(a, tuple):
        return ("tuple", tuple(describe_arg(x) for x in a))
    if isinstance(a, list):
        return ("list", tuple(describe_arg(x) for x in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, describe_arg(v)) for k, v in a.items()))
    if isinstance(a, float) and math.isnan(a):
        return ("nan",)
    return ("value", type(a).__name__, a)


def describe_val(v):
    if isinstance(v, torch.Tensor):
        return ("tensor", tuple(str(s) for s in v.shape), tuple(str(s) for s in v.stride()), str(v.storage_offset()),
                v.dtype, v.device, v.requires_grad)
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return (type(v).__name__, str(v.node.expr))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(describe_val(x) for x in v))
    if v is None or isinstance(v, (int, float, bool, str)):
        return ("py", type(v).__name__, v)
    return ("other", type(v).__name__, str(v))


def _source(s: NodeSource):
    d = dict(s.to_dict())
    d.pop("graph_id", None)
    d["from_node"] = [_source(x) for x in s.from_node]
    return d


META_KEYS = ("stack_trace", "nn_module_stack", "torch_fn", "custom", "source_fn_stack")


def describe_meta(meta):
    out = {}
    for k in META_KEYS:
        if k in meta:
            v = meta[k]
            if k == "source_fn_stack":
                v = [(n, t if isinstance(t, str) else getattr(t, "__name__", str(t))) for n, t in v]
            out[k] = v
    if meta.get("from_node"):
        out["from_node"] = [_source(s) for s in meta["from_node"]]
    if meta.get("unbacked_bindings"):
        out["unbacked_bindings"] = {str(k): tuple(str(p) for p in v) for k, v in meta["unbacked_bindings"].items()}
    if "val" in meta:
        out["val"] = describe_val(meta["val"])
    return out


def describe_graph(gm: torch.fx.GraphModule, with_meta=True):
    """A list describing every node, recursing into subgraph modules."""
    out = []
    for n in gm.graph.nodes:
        target = n.target if isinstance(n.target, str) else n.target
        entry = [n.op, n.name, target, describe_arg(n.args), describe_arg(dict(n.kwargs))]
        if with_meta and n.op not in ("output",):
            entry.append(describe_meta(n.meta))
        out.append(tuple(entry) if not with_meta else entry)
        if n.op == "get_attr":
            sub = getattr(gm, n.target)
            if isinstance(sub, torch.fx.GraphModule):
                out.append(("subgraph", n.target, describe_graph(sub, with_meta)))
    return out


def assert_same_graph(a: torch.fx.GraphModule, b: torch.fx.GraphModule, with_meta=True):
    da, db = describe_graph(a, with_meta), describe_graph(b, with_meta)
    assert len(da) == len(db), f"node count {len(da)} != {len(db)}\n{[x[1] for x in da]}\n{[x[1] for x in db]}"
    for x, y in zip(da, db):
        assert x == y, f"\noriginal: {x}\nloaded:   {y}"


def ranges(ep):
    return {str(k): (str(v.lower), str(v.upper)) for k, v in ep.range_constraints.items()}


def shape_env_facts(ep):
    """{symbol name: (range, hint)} for every symbol in the placeholders' fake values."""
    from torch._guards import detect_fake_mode
    vals = [n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"]
    mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    env = mode.shape_env if mode is not None else None
    if env is None:
        env = next((v.node.shape_env for v in vals if isinstance(v, torch.SymInt)), None)
    if env is None:
        return {}
    syms = set()
    for v in vals:
        if isinstance(v, torch.Tensor):
            for d in (*v.shape, *v.stride()):
                if isinstance(d, torch.SymInt):
                    syms |= d.node.expr.free_symbols
        elif isinstance(v, torch.SymInt):
            syms |= v.node.expr.free_symbols
    return {s.name: (str(env.var_to_range.get(s)), env.backed_var_to_val.get(s), s.assumptions0) for s in syms}


def assert_same_program(orig, loaded, *, with_meta=True, state=True):
    assert_same_graph(orig.graph_module, loaded.graph_module, with_meta)
    assert shape_env_facts(orig) == shape_env_facts(loaded)
    assert orig.graph_signature.input_specs == loaded.graph_signature.input_specs
    assert orig.graph_signature.output_specs == loaded.graph_signature.output_specs
    assert ranges(orig) == ranges(loaded)
    assert [v.dialect for v in orig.verifiers] == [v.dialect for v in loaded.verifiers]
    assert_same_module_call_graph(orig, loaded)
    if state:
        assert_same_state(orig, loaded)


def assert_same_module_call_graph(orig, loaded):
    assert len(orig.module_call_graph) == len(loaded.module_call_graph)
    for x, y in zip(orig.module_call_graph, loaded.module_call_graph):
        assert x.fqn == y.fqn
        assert (x.signature is None) == (y.signature is None)
        if x.signature is not None:
            sx, sy = x.signature, y.signature
            assert sx.inputs == sy.inputs and sx.outputs == sy.outputs
            assert sx.in_spec == sy.in_spec, f"{sx.in_spec} != {sy.in_spec}"
            assert sx.out_spec == sy.out_spec, f"{sx.out_spec} != {sy.out_spec}"
            assert (sx.forward_arg_names or None) == (sy.forward_arg_names or None)


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a tensor's elements (NaNs and -0.0 compare exactly)."""
    t = t.detach()
    if t.dtype == torch.bool:
        return t.to(torch.uint8).reshape(-1)
    c = t.contiguous().reshape(-1)
    return c.view(torch.uint8) if c.numel() else torch.empty(0, dtype=torch.uint8)


def assert_same_tensor(a, b, what=""):
    assert type(a) is type(b), f"{what}: {type(a)} != {type(b)}"
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride(), what
    assert a.storage_offset() == b.storage_offset(), what
    assert a.requires_grad == b.requires_grad, what
    assert torch.equal(bits(a), bits(b)), f"{what}: bytes differ"


def alias_groups(tensors: dict):
    groups = {}
    for k, t in tensors.items():
        if isinstance(t, torch.Tensor):
            groups.setdefault((t.untyped_storage().data_ptr(), t.device), []).append(k)
    return sorted(sorted(v) for v in groups.values())


def assert_same_state(orig, loaded):
    assert list(orig.state_dict) == list(loaded.state_dict)
    for k in orig.state_dict:
        assert_same_tensor(orig.state_dict[k], loaded.state_dict[k], k)
    assert sorted(orig.constants) == sorted(loaded.constants)
    for k, v in orig.constants.items():
        if isinstance(v, torch.Tensor):
            assert_same_tensor(v, loaded.constants[k], k)
    both = {**{("s", k): v for k, v in orig.state_dict.items()}, **{("c", k): v for k, v in orig.constants.items()}}
    both2 = {**{("s", k): v for k, v in loaded.state_dict.items()},
             **{("c", k): v for k, v in loaded.constants.items()}}
    assert alias_groups(both) == alias_groups(both2)


def outputs_equal(a, b):
    """True when two output trees are the same: the same tree structure (container types,
    keys, order), and leaf by leaf the same type, dtype, shape and bits (NaN equals NaN;
    True is not 1)."""
    fa, sa = torch.utils._pytree.tree_flatten(a)
    fb, sb = torch.utils._pytree.tree_flatten(b)
    if sa != sb or len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if type(x) is not type(y):
            return False
        if isinstance(x, torch.Tensor):
            if x.dtype != y.dtype or x.shape != y.shape or not torch.equal(bits(x), bits(y)):
                return False
        elif x != y and not (isinstance(x, float) and math.isnan(x) and math.isnan(y)):
            return False
    return True


def run_both(orig, loaded, args, kwargs=None):
    """Call both programs' modules; returns (result or exception type) for each."""
    kwargs = kwargs or {}
    out = []
    for ep in (orig, loaded):
        # Each program gets its own copy: programs may mutate their inputs.
        a, k = torch.utils._pytree.tree_map_only(torch.Tensor, torch.clone, (args, kwargs))
        try:
            out.append(("ok", ep.module()(*a, **k)))
        except Exception as e:  # noqa: BLE001 - the exception type is compared
            out.append(("err", type(e)))
    return out


def assert_same_behaviour(orig, loaded, args, kwargs=None):
    (ka, ra), (kb, rb) = run_both(orig, loaded, args, kwargs)
    assert ka == kb, f"original {ka} {ra}, loaded {kb} {rb}"
    if ka == "ok":
        assert outputs_equal(ra, rb)
    else:
        assert ra == rb
    return ka


__all__ = [n for n in dir() if not n.startswith("_")] + ["operator"]
