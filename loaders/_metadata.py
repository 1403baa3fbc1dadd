"""Structured `NodeMetadata` -> FX node.meta entries (stack_trace, nn_module_stack, from_node, ...).

Callables named in source_fn_stack are looked up (allow-list, then plain
attribute dicts under the `torch` module); names that are not found stay
strings, as torch's own loader leaves them.
"""

from __future__ import annotations

import types

import torch
import torch.utils._pytree as pytree
from torch.fx.traceback import NodeSource, NodeSourceAction

from pt2format._strings import check_extra_meta_key
from pt2format.errors import LoadError
from pt2format.vocab.metadata import derived_tensor_meta, static_tensor_meta, symbolic_key
from pt2format.vocab.operators import BUILTINS

from ._names import check_identifier, check_text
from ._values import from_value

_ACTIONS = {"create": NodeSourceAction.CREATE, "replace": NodeSourceAction.REPLACE}
_MAX_SOURCE_DEPTH = 64


def _lookup_callable(name: str):
    """The function or module class a source_fn_stack entry names, or the name itself.

    Only torch's own modules classes and functions qualify: the walk goes
    through plain `__dict__`s of modules whose name starts with `torch` (no
    `__getattr__` hooks, no attribute of a non-torch module such as
    `torch.os`), and the object found must be defined by torch itself. Anything
    else stays a string, as torch's own loader leaves unknown names.
    """
    fn = BUILTINS.get(name)
    if fn is not None:
        return fn
    if not name.startswith("torch."):
        return name
    obj = torch
    for part in name.split(".")[1:]:
        if not part.isidentifier() or part.startswith("__"):
            return name
        if not (isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] == "torch") and not (
                isinstance(obj, type) and _defined_by_torch(obj)):
            return name
        d = getattr(obj, "__dict__", None)
        if d is None or part not in d:
            return name
        obj = d[part]
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module) and _defined_by_torch(obj):
        return obj
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, torch._ops.OpOverloadPacket)) \
            and _defined_by_torch(obj):
        return obj
    return name


class _DeriveTensorMeta:
    """Marks a node whose tensor_meta is derived from its value once the graph is built."""

    def __repr__(self):
        return "<tensor_meta derived from val>"


DERIVE_TENSOR_META = _DeriveTensorMeta()
DERIVE_TENSOR_META_GRAD = _DeriveTensorMeta()  # the same, with tensor_meta.requires_grad=True
_DESC_MAX_DEPTH = 16


def derive_tensor_meta(node, static_shapes=None, derived=None) -> None:
    """node.meta["tensor_meta"] from node.meta["val"] (tensor values only), as torch's export computes it.

    `static_shapes` (id(value) -> (value, dtype, sizes, strides)) gives the numbers of values the
    loader made from integer sizes and strides: the same derivation, without asking the tensor.
    `derived` (symbolic_key -> (a value holding its SymNodes, TensorMetadata), one graph's) keeps the
    derivation of a symbolic value for the next with the same SymNodes, dtype and requires_grad (each
    costs dozens of symbolic operations; the values of one shared TensorMeta share their SymNodes, see
    loaders/_graph.py).
    """
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        grad = node.meta.get("tensor_meta") is DERIVE_TENSOR_META_GRAD
        known = static_shapes.get(id(val)) if static_shapes else None
        if known is not None and known[0] is val:
            node.meta["tensor_meta"] = static_tensor_meta(known[1], known[2], known[3], grad)
            return
        key = symbolic_key(val, grad) if derived is not None else None
        known = derived.get(key) if key is not None else None
        if known is not None:
            node.meta["tensor_meta"] = known[1]
            return
        tm, static = derived_tensor_meta(val, grad)
        if key is not None and not static:
            derived[key] = (val, tm)  # the value holds the SymNodes of the key
        node.meta["tensor_meta"] = tm
    else:
        node.meta.pop("tensor_meta", None)


def custom_meta(mv, path: str) -> dict:
    """A MapValue holding user data (a graph module's meta["custom"]) -> dict."""
    from pt2format._generated.model import Value
    return from_value(Value(mv), path=path)


def build_desc(d, path: str, depth: int = 0):
    """A placeholder's AOT descriptor from its stored dict: the class comes from a fixed table
    (torch's descriptor dataclasses, found by name in that one module), the fields from the dict."""
    import dataclasses

    from torch._functorch._aot_autograd import descriptors

    if depth > _DESC_MAX_DEPTH:
        raise LoadError("desc is nested too deeply", path=path, expected=f"<= {_DESC_MAX_DEPTH}")
    if not isinstance(d, dict) or not isinstance(d.get("type"), str):
        raise LoadError("desc must be a map with a 'type' entry", path=path)
    name = d["type"]
    if name == "list" and depth == 0:  # an output node's descriptors, one per output
        items = d.get("items")
        if set(d) != {"type", "items"} or not isinstance(items, list):
            raise LoadError("a desc list is {'type': 'list', 'items': [...]}", path=path)
        return [build_desc(x, f"{path}.items[{i}]", depth + 1) for i, x in enumerate(items)]
    cls = descriptors.__dict__.get(name) if name.isidentifier() and not name.startswith("_") else None
    bases = (descriptors.AOTInput, descriptors.AOTOutput, descriptors.DifferentiableAOTInput,
             descriptors.DifferentiableAOTOutput)
    if cls in bases or not (isinstance(cls, type) and issubclass(cls, (descriptors.AOTInput, descriptors.AOTOutput))
            and dataclasses.is_dataclass(cls) and cls.__module__ == descriptors.__name__):
        raise LoadError("desc names no AOT descriptor class of torch", path=f"{path}.type", got=name)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for k, v in d.items():
        if k == "type":
            continue
        if k not in fields:
            raise LoadError(f"{name} has no field {k!r}", path=f"{path}.{k}", expected=sorted(fields))
        if isinstance(v, dict):
            v = build_desc(v, f"{path}.{k}", depth + 1)
        elif not (type(v) in (int, str, bool) or v is None):
            raise LoadError("desc fields are ints, strings, booleans or descriptors", path=f"{path}.{k}",
                            got=type(v).__name__)
        kwargs[k] = v
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise LoadError(f"desc cannot be built: {e}", path=path, got=name) from None


def _defined_by_torch(obj) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "torch" or module.startswith(("torch.", "torch._C")))


class MetadataLoader:
    def __init__(self, shape):
        self.shape = shape  # ShapeBuilder
        self._fn_cache: dict[str, object] = {}

    def load(self, md, path: str) -> dict:
        meta: dict = {}
        if md is None:
            return meta
        if md.stack_trace is not None:
            meta["stack_trace"] = check_text(md.stack_trace, path, ".stack_trace")
        if md.nn_module_stack:
            meta["nn_module_stack"] = {e.key: (e.path, e.type_name) for e in md.nn_module_stack}
        if md.source_fn_stack:
            meta["source_fn_stack"] = [(e.name, self._callable(e.target)) for e in md.source_fn_stack]
        if md.torch_fn is not None:
            meta["torch_fn"] = (md.torch_fn.name, md.torch_fn.target)
        if md.custom is not None:
            from pt2format._generated.model import Value
            meta["custom"] = from_value(Value(md.custom), path=f"{path}.custom")
        if md.from_node:
            meta["from_node"] = [self._source(s, f"{path}.from_node[{i}]", 0) for i, s in enumerate(md.from_node)]
        if md.unbacked_bindings:
            meta["unbacked_bindings"] = {
                self._unbacked_symbol(b.symbol, f"{path}.unbacked_bindings[{i}].symbol"):
                    self._keypath(b.path, f"{path}.unbacked_bindings[{i}]")
                for i, b in enumerate(md.unbacked_bindings)
            }
        if md.tensor_meta:
            # replaced from meta["val"] once the graph is built
            meta["tensor_meta"] = DERIVE_TENSOR_META_GRAD if md.tensor_meta_requires_grad else DERIVE_TENSOR_META
        if md.has_seq_nr:
            meta["seq_nr"] = md.seq_nr
        if md.original_aten is not None:
            from ._targets import resolve_target
            meta["original_aten"] = resolve_target(md.original_aten, f"{path}.original_aten")
        if md.desc is not None:
            from pt2format._generated.model import Value
            meta["desc"] = build_desc(from_value(Value(md.desc), path=f"{path}.desc"), f"{path}.desc")
        for i, e in enumerate(md.extra):
            # Never over a structured entry: torch compiles some of them (val) into guard code.
            key = check_extra_meta_key(e.key, f"{path}.extra[{i}].key")
            if key in meta:
                raise LoadError("extra metadata key repeats a structured entry", path=f"{path}.extra[{i}].key", got=key)
            meta[key] = e.value
        return meta

    def custom(self, mv, path: str) -> dict:
        return custom_meta(mv, path)

    def _callable(self, name):
        if name is None:
            return None
        fn = self._fn_cache.get(name)
        if fn is None:
            fn = self._fn_cache[name] = _lookup_callable(name)
        return fn

    def _source(self, s, path, depth) -> NodeSource:
        if depth > _MAX_SOURCE_DEPTH:
            raise LoadError("from_node provenance is nested too deeply", path=path, expected=f"<= {_MAX_SOURCE_DEPTH}")
        ns = NodeSource.__new__(NodeSource)
        ns._action_string = None
        ns._dict = None
        ns.pass_name = s.pass_name or ""
        actions = []
        for a in s.actions:
            if a not in _ACTIONS:
                raise LoadError("unknown provenance action", path=path, expected=sorted(_ACTIONS), got=a)
            actions.append(_ACTIONS[a])
        ns.action = actions
        ns.node_info = NodeSource.NodeInfo(s.name or "", s.target or "", s.graph_id)
        ns.from_node = [self._source(x, f"{path}.from_node[{i}]", depth + 1) for i, x in enumerate(s.from_node)]
        return ns

    def _symbol(self, idx, path):
        if idx >= len(self.shape.symbols):
            raise LoadError("symbol index out of range", path=path, expected=f"< {len(self.shape.symbols)}", got=idx)
        return self.shape.symbols[idx]

    def _unbacked_symbol(self, idx, path):
        """torch tells unbacked symbols by their name (`u3`, `zuf0`); a binding to another one fails in its passes."""
        from torch.utils._sympy.symbol import SymT, prefix_str, symbol_is_type

        sym = self._symbol(idx, path)
        if not symbol_is_type(sym, (SymT.UNBACKED_INT, SymT.UNBACKED_FLOAT)):
            raise LoadError(f"unbacked binding to symbol {sym.name!r}, which torch does not treat as unbacked",
                            path=path, expected=f"a name starting with {prefix_str[SymT.UNBACKED_INT]!r} or "
                                                f"{prefix_str[SymT.UNBACKED_FLOAT]!r}", got=sym.name)
        return sym

    def _keypath(self, entries, path):
        # Unbacked bindings exist only in symbolic programs: symbolic_shapes (and sympy) load with them.
        from torch.fx.experimental.symbolic_shapes import CallMethodKey, ConvertIntKey, DivideByKey, InnerTensorKey

        out = []
        for e in entries:
            k = e.kind
            if k in ("size", "stride", "storage_offset"):
                out.append(CallMethodKey(k))
            elif k == "index":
                out.append(pytree.SequenceKey(e.index))
            elif k == "key":
                out.append(pytree.MappingKey(e.name))
            elif k == "attr":
                out.append(InnerTensorKey(check_identifier(e.name, path)))
            elif k == "item":
                out.append(ConvertIntKey())
            elif k == "divide_by":
                out.append(DivideByKey(e.index))
            else:
                raise LoadError("unknown key path step", path=path,
                                expected="size/stride/storage_offset/index/key/attr/item/divide_by", got=k)
        return tuple(out)
