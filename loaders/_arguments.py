"""`ArgumentValue` union members -> FX node arguments: scalars, lists, value references, subgraphs, operators.

The argument half of `GraphBuilder` (loaders/_graph.py), the inverse of
exporter/_arguments.py. A reference resolves to the FX node that defines the
value; a subgraph or tree spec becomes an attribute of the graph's owner
module, fetched by a get_attr node; an operator name resolves only to an
operator of the allowed namespaces.
"""

from __future__ import annotations

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.fx.graph_module import GraphModule

from pt2format._generated.model import (
    BoolArgument,
    BoolListArgument,
    ComplexArgument,
    CustomObjArgument,
    DeviceArgument,
    FloatArgument,
    FloatListArgument,
    FloatListListArgument,
    GraphArgument,
    IntArgument,
    IntListArgument,
    IntListListArgument,
    LayoutArgument,
    MemoryFormatArgument,
    MixedListArgument,
    NestedTensorListArgument,
    NoneArgument,
    OperatorArgument,
    OptionalTensorArgument,
    OptionalTensorListArgument,
    ScalarTypeArgument,
    StringArgument,
    StringListArgument,
    StringToArgumentMapArgument,
    SymBoolArgument,
    SymBoolListArgument,
    SymFloatArgument,
    SymFloatListArgument,
    SymIntArgument,
    SymIntListArgument,
    TensorArgument,
    TensorListArgument,
    TokenArgument,
    TreeSpecArgument,
)
from pt2format.errors import LoadError
from pt2format.vocab.enums import SCHEMA_TO_LAYOUT, SCHEMA_TO_MEMORY_FORMAT

from ._names import check_identifier
from ._targets import resolve_target
from ._treespec import TreeSpecLoader, find_class
from ._values import device_from_schema, dtype_from_schema

_SCALARS = (IntArgument, FloatArgument, BoolArgument, StringArgument)
_PLAIN_LISTS = (IntListArgument, FloatListArgument, BoolListArgument, StringListArgument)
_SAME = object()


class ArgumentLoader:
    """Rebuilds node arguments; mixed into `GraphBuilder`, whose scope (`sc`), subgraph `build`, metadata
    loader and constants it uses."""

    def _ref(self, name, path):
        node = self.sc.nodes.get(name)
        if node is None:
            raise LoadError(f"argument refers to undefined value {name!r}", path=path)
        return node

    def _arg(self, v, path):
        t = type(v)
        if t in _SCALARS:
            return v.value
        if t is TensorArgument or t is TokenArgument:
            return self._ref(v.name, path)
        if t is NoneArgument:
            return None
        if t in _PLAIN_LISTS:
            return list(v.values)
        if t is TensorListArgument:
            return [self._ref(x, f"{path}[{i}]") for i, x in enumerate(v.names)]
        if t is SymIntArgument or t is SymFloatArgument or t is SymBoolArgument:
            return self._ref(v.name, path) if v.name is not None else v.value
        if t is SymIntListArgument or t is SymFloatListArgument or t is SymBoolListArgument:
            return [self._ref(x.name, f"{path}[{i}]") if x.name is not None else x.value
                    for i, x in enumerate(v.items)]
        if t is OptionalTensorArgument:
            return None if v.name is None else self._ref(v.name, path)
        if t is OptionalTensorListArgument:
            return [None if x.name is None else self._ref(x.name, f"{path}[{i}]") for i, x in enumerate(v.items)]
        if t is ScalarTypeArgument:
            return dtype_from_schema(v.value, path)
        if t is DeviceArgument:
            return device_from_schema(v.value, path)
        if t is MemoryFormatArgument:
            mf = SCHEMA_TO_MEMORY_FORMAT.get(int(v.value))
            if mf is None:
                raise LoadError("unknown memory format", path=path, got=v.value)
            return mf
        if t is LayoutArgument:
            lay = SCHEMA_TO_LAYOUT.get(int(v.value))
            if lay is None:
                raise LoadError("unknown layout", path=path, got=v.value)
            return lay
        if t is ComplexArgument:
            return complex(v.real, v.imag)
        if t is GraphArgument:
            return self._subgraph(v, path)
        if t is NestedTensorListArgument:
            return [[self._ref(x, path) for x in lst.names] for lst in v.lists]
        if t is IntListListArgument:
            return [tuple(lst.values) for lst in v.lists]
        if t is FloatListListArgument:
            return [list(lst.values) for lst in v.lists]
        if t is CustomObjArgument:
            node = self.sc.nodes.get(v.name)
            if node is not None:
                return node
            obj = self.constants.get(v.name)
            if obj is None:
                raise LoadError(f"custom object {v.name!r} is neither a graph input nor a constant", path=path)
            return obj
        if t is OperatorArgument:
            return resolve_target(v.name, path)
        if t is StringToArgumentMapArgument:
            out = {}
            for i, e in enumerate(v.entries):
                if not isinstance(e.key, str):
                    raise LoadError("map argument keys must be strings", path=f"{path}.entries[{i}]")
                out[e.key] = self._arg(e.value.value if e.value is not None else None, f"{path}[{e.key!r}]")
            return out
        if t is TreeSpecArgument:
            return self._treespec_attr(v, path)
        if t is MixedListArgument:
            return [self._arg(x.value if x is not None else None, f"{path}[{i}]") for i, x in enumerate(v.items)]
        raise LoadError("unknown or missing argument", path=path, got=t.__name__)

    def _get_attr_names(self, v, path):
        """(attribute name, get_attr node name, the node already made for it or None): one attribute may be
        fetched by several get_attr nodes, but one node name never stands for two attributes."""
        name = check_identifier(v.name, f"{path}.name")
        node_name = check_identifier(v.node_name, f"{path}.node_name") if v.node_name is not None else name
        existing = self.sc.get_attrs.get(node_name)
        if existing is not None and existing.target != name:
            raise LoadError(f"get_attr node {node_name!r} is defined twice", path=path)
        return name, node_name, existing

    def _treespec_attr(self, v, path):
        """A get_attr of a pytree structure (a flat_apply node's input or function spec), as torch records it."""
        sc = self.sc
        name, node_name, existing = self._get_attr_names(v, path)
        if existing is not None:
            return existing
        spec = TreeSpecLoader("").load(v.spec, f"{path}.spec")
        held = sc.owner.__dict__.get(name, _SAME)
        if held is _SAME:
            if name in sc.subgraphs:
                raise LoadError(f"attribute {name!r} is both a subgraph and a tree spec", path=f"{path}.name")
            setattr(sc.owner, name, spec)
        elif held != spec:
            raise LoadError(f"attribute {name!r} holds two different tree specs", path=f"{path}.name")
        node = self._create("get_attr", name, (), {}, node_name, path)
        node.meta.update(self.metadata.load(v.metadata, f"{path}.metadata"))
        node.meta.setdefault("nn_module_stack", {})
        sc.get_attrs[node_name] = node
        return node

    def _check_flat_apply(self, args, path):
        """flat_apply calls torch's `_call_custom_autograd_function_in_pre_dispatch`, which imports the
        autograd.Function named by its first argument when the program runs: the name must be a class of an
        already-imported module (nothing is imported by a name from a file, now or later)."""
        if len(args) < 2 or not all(isinstance(a, torch.fx.Node) and a.op == "get_attr" for a in args[:2]):
            raise LoadError("flat_apply takes its function and input specs as get_attr nodes", path=path)
        func_spec, in_spec = (getattr(self.sc.owner, a.target, None) for a in args[:2])
        if not isinstance(func_spec, pytree.TreeSpec) or not isinstance(in_spec, pytree.TreeSpec):
            raise LoadError("flat_apply takes its function and input specs as get_attr nodes", path=path)
        if in_spec.num_leaves != len(args) - 2:
            raise LoadError("flat_apply's input spec does not fit its arguments", path=path,
                            expected=in_spec.num_leaves, got=len(args) - 2)
        (call_args, _kwargs) = pytree.tree_unflatten(list(args[2:]), in_spec)
        cls_name = call_args[0] if isinstance(call_args, (list, tuple)) and call_args else None
        cls = find_class(cls_name, f"{path}.inputs[2]") if isinstance(cls_name, str) else None
        if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
            raise LoadError("flat_apply names an autograd.Function that is not imported in this process",
                            path=f"{path}.inputs[2]", expected="an imported torch.autograd.Function subclass",
                            got=cls_name if isinstance(cls_name, str) else type(cls_name).__name__)

    def _subgraph(self, v: GraphArgument, path):
        sc = self.sc
        name, node_name, existing = self._get_attr_names(v, path)
        if existing is not None:
            return existing
        if name not in sc.subgraphs:  # one attribute may be fetched by several get_attr nodes
            fx_graph, owner = self.build(v.graph, f"{path}.graph")
            # torch's GraphModule, compiled at once: dynamo refuses to trace into a _LazyGraphModule's forward,
            # so a lazy branch would break a fullgraph torch.compile of the loaded module
            sc.subgraphs[name] = gm = GraphModule(owner, fx_graph)
            if id(fx_graph) in self.custom_meta:
                gm.meta["custom"] = self.custom_meta.pop(id(fx_graph))
            sc.owner.register_module(name, gm)
        node = self._create("get_attr", name, (), {}, node_name, path)
        node.meta.update(self.metadata.load(v.metadata, f"{path}.metadata"))
        node.meta.setdefault("nn_module_stack", {})  # as for call_function nodes: empty stacks are not stored
        sc.get_attrs[node_name] = node
        return node
