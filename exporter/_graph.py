"""FX graphs -> `Graph` tables: placeholders, call_function nodes, outputs, value metadata, subgraphs.

The file's graph is the data-flow graph: a node lists all its output values.
FX's `getitem` nodes that unpack a multi-output node are folded into that
node (the value takes the getitem node's name), as torch's serializer does;
outputs FX never unpacked are listed in `Node.unbound_outputs` so the loader
rebuilds exactly the getitem nodes the original graph had.
"""

from __future__ import annotations

import operator

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.export import exported_program as ep_mod

from pt2format._generated.model import (
    TreeSpecArgument,
    DeferredUnpack,
    MixedListArgument,
    Argument,
    ArgumentKind,
    ArgumentMapEntry,
    BoolArgument,
    BoolListArgument,
    ComplexArgument,
    CustomObjArgument,
    DeviceArgument,
    FloatArgument,
    FloatListArgument,
    FloatListListArgument,
    Graph,
    GraphArgument,
    IntArgument,
    IntListArgument,
    IntListListArgument,
    LayoutArgument,
    MemoryFormatArgument,
    NamedArgument,
    NestedTensorListArgument,
    Node,
    NodeMetadata,
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
    SymBoolValue,
    SymFloatArgument,
    SymFloatListArgument,
    SymFloatValue,
    SymIntArgument,
    SymIntListArgument,
    SymIntValue,
    TensorArgument,
    TensorListArgument,
    TensorMeta,
    TensorValue,
    UnpackMetadata,
)
from pt2format.errors import ExportError

from ._treespec import TreeSpecExporter
from pt2format.vocab.enums import ints as _ints
from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE, LAYOUT_TO_SCHEMA, MEMORY_FORMAT_TO_SCHEMA, device_to_schema
from ._operators import is_core, operator_schema, target_name
from ._values import map_value

ArgumentKind = _ints(ArgumentKind)

_SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _is_custom_obj_val(v) -> bool:
    return isinstance(v, (ep_mod.CustomObjArgument, torch.ScriptObject)) or type(v).__name__ == "FakeScriptObject"


def _class_fqn(v) -> str:
    if isinstance(v, ep_mod.CustomObjArgument):
        return v.class_fqn
    if isinstance(v, torch.ScriptObject):
        return v._type().qualified_name()
    return v.script_class_name if hasattr(v, "script_class_name") else type(v).__name__


def _deferred_unpacks(nodes, unpackers, alias) -> dict:
    """Producer -> {position: name of the node its getitem follows} for getitem nodes that do not
    sit in the run of getitems right after their producer (in the order a loader recreates them)."""
    where = {n: i for i, n in enumerate(nodes)}
    out = {}
    for producer, by_idx in unpackers.items():
        first = {idx: users[0] for idx, users in by_idx.items()}
        expected = where[producer] + 1
        run = True
        for idx in sorted(first):
            g = first[idx]
            if run and where[g] == expected:
                expected += 1
                continue
            run = False
            prev = nodes[where[g] - 1]
            if prev.name in alias or prev.op in ("placeholder", "output"):
                continue  # no node of that name in the file to follow: keep the usual place
            out.setdefault(producer, {})[idx] = prev.name
    return out


class _GraphState:
    """Value tables of the graph being converted."""

    def __init__(self, gm: torch.fx.GraphModule, path: str):
        self.gm = gm
        self.path = path
        self.graph = Graph()
        self.node_names = {n.name for n in gm.graph.nodes}
        self.value_names: set[str] = set()
        self.unpackers: dict[torch.fx.Node, dict[int, list[torch.fx.Node]]] = {}
        self.alias: dict[str, str] = {}  # duplicate getitem node -> the first one
        self.deferred: dict[torch.fx.Node, dict[int, str]] = {}  # producer -> position -> node it follows


class GraphExporter:
    """Converts the graphs of one program; shares its symbol table, tensor table and metadata converter."""

    def __init__(self, symbols, metadata, operators: dict, custom_objs: dict):
        self.symbols = symbols
        self.metadata = metadata
        self.operators = operators  # Package.operators being collected: target -> OperatorSchema
        self.custom_objs = custom_objs  # constants found inline as arguments: name -> object
        self.st: _GraphState | None = None
        self.treespecs = TreeSpecExporter()  # the program's, when it sets one (namedtuple_defs)

    # -- graphs --------------------------------------------------------------
    def export(self, gm: torch.fx.GraphModule, path: str = "graph", constant_input_names=None) -> Graph:
        outer, self.st = self.st, _GraphState(gm, path)
        try:
            st = self.st
            nodes = list(gm.graph.nodes)
            for n in nodes:  # find the getitem nodes that unpack multi-output nodes
                if n.op == "call_function" and n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node) \
                        and self._is_multi(n.args[0]) and isinstance(n.args[1], int):
                    by_idx = st.unpackers.setdefault(n.args[0], {})
                    lst = by_idx.setdefault(n.args[1], [])
                    if lst:
                        st.alias[n.name] = lst[0].name
                    lst.append(n)
            st.deferred = _deferred_unpacks(nodes, st.unpackers, st.alias)
            input_md = []
            for i, n in enumerate(nodes):
                p = f"{path}.nodes[{n.name}]"
                if n.op == "placeholder":
                    st.graph.inputs.append(Argument(self._placeholder(n, p)))
                    input_md.append(self.metadata.convert(n.meta, p))
                elif n.op == "call_function":
                    if n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node) \
                            and n.args[0] in st.unpackers:
                        continue  # folded into its producer
                    st.graph.nodes.append(self._node(n, p))
                elif n.op == "output":
                    self._output(n, p)
                    st.graph.output_metadata = self.metadata.convert(n.meta, p)
                elif n.op == "get_attr":
                    continue  # emitted where used (GraphArgument)
                else:
                    raise ExportError(f"FX node kind {n.op!r} cannot be saved", path=p,
                                      expected="placeholder/call_function/get_attr/output", got=n.op)
            if any(md is not None for md in input_md):
                st.graph.input_metadata = [md if md is not None else NodeMetadata() for md in input_md]
            custom = gm.meta.get("custom")
            if isinstance(custom, dict):  # the user's data; other graph_module.meta entries are derived
                st.graph.custom_meta = map_value(dict(custom), path=f"{path}.meta[custom]")
            return st.graph
        finally:
            self.st = outer

    @staticmethod
    def _is_multi(n: torch.fx.Node) -> bool:
        return n.op == "call_function" and isinstance(n.meta.get("val"), (tuple, list))

    # -- values --------------------------------------------------------------
    def _fresh_name(self, base: str) -> str:
        st = self.st
        name, k = base, 0
        while name in st.node_names or name in st.value_names:
            k += 1
            name = f"{base}_{k}"
        return name

    def _claim(self, name: str, path: str):
        if name in self.st.value_names:
            raise ExportError(f"value name {name!r} is defined twice", path=path)
        self.st.value_names.add(name)

    def tensor_meta(self, t: torch.Tensor, path: str) -> TensorMeta:
        sy = self.symbols
        if t.dtype not in DTYPE_TO_SCALAR_TYPE:
            raise ExportError("dtype has no schema value", path=path, expected="a ScalarType", got=str(t.dtype))
        strided = t.layout == torch.strided
        return TensorMeta(
            dtype=DTYPE_TO_SCALAR_TYPE[t.dtype],
            sizes=[sy.sym_int(s) for s in t.shape],
            strides=[sy.sym_int(s) for s in t.stride()] if strided else [],
            storage_offset=sy.sym_int(t.storage_offset()) if strided else None,
            requires_grad=bool(t.requires_grad),
            device=device_to_schema(t.device),
            layout=LAYOUT_TO_SCHEMA[t.layout],
        )

    def _value(self, name: str, v, path: str):
        """Register the value `name` (meta `v`) and return the argument that names it."""
        g = self.st.graph
        if v is None:
            return NoneArgument()
        self._claim(name, path)
        if isinstance(v, torch.Tensor):
            g.tensor_values.append(TensorValue(name=name, meta=self.tensor_meta(v, path)))
            return TensorArgument(name=name)
        if isinstance(v, (torch.SymBool, bool)):
            g.sym_bool_values.append(SymBoolValue(name=name, value=self.symbols.sym_bool(v)))
            return SymBoolArgument(name=name)
        if isinstance(v, (torch.SymInt, int)):
            g.sym_int_values.append(SymIntValue(name=name, value=self.symbols.sym_int(v)))
            return SymIntArgument(name=name)
        if isinstance(v, (torch.SymFloat, float)):
            g.sym_float_values.append(SymFloatValue(name=name, value=self.symbols.sym_float(v)))
            return SymFloatArgument(name=name)
        if _is_custom_obj_val(v):
            arg = CustomObjArgument(name=name, class_fqn=_class_fqn(v))
            g.custom_obj_values.append(arg)
            return CustomObjArgument(name=name, class_fqn=arg.class_fqn)
        raise ExportError("value has no schema type", path=path, expected="Tensor/SymInt/SymFloat/SymBool/custom object",
                          got=type(v).__name__)

    # -- placeholders and outputs -------------------------------------------------
    def _placeholder(self, n: torch.fx.Node, path: str):
        v = n.meta.get("val")
        if isinstance(v, (torch.Tensor, *_SYM_TYPES)) or _is_custom_obj_val(v):
            return self._value(n.name, v, path)
        # A constant user input: the placeholder's name lives in the signature.
        return self.argument(v, None, path)

    def _output(self, n: torch.fx.Node, path: str):
        g = self.st.graph
        (res,) = n.args
        if isinstance(res, torch.fx.Node):
            g.is_single_tensor_return = True
            g.outputs = [Argument(self.argument(res, None, path))]
        else:
            g.is_list_return = isinstance(res, list)
            g.outputs = [Argument(self.argument(a, None, f"{path}[{i}]")) for i, a in enumerate(res)]

    # -- nodes ---------------------------------------------------------------
    def _node(self, n: torch.fx.Node, path: str) -> Node:
        target = n.target
        name, kind = target_name(target, path)
        if not is_core(target) and name not in self.operators:
            self.operators[name] = operator_schema(target, name, kind)
        node = Node(name=n.name, target=name)
        if isinstance(target, torch._ops.OpOverload):
            node.inputs = self._schema_inputs(target._schema, n, path)
        else:
            node.inputs = [self._named("", a, ArgumentKind.POSITIONAL, None, f"{path}.args[{i}]")
                           for i, a in enumerate(n.args)]
            node.inputs += [self._named(k, a, ArgumentKind.KEYWORD, None, f"{path}.kwargs[{k}]")
                            for k, a in n.kwargs.items()]
        node.outputs, node.unbound_outputs = self._outputs(n, path)
        if isinstance(target, torch._ops.HigherOrderOperator):
            node.is_hop_single_tensor_return = isinstance(n.meta.get("val"), torch.Tensor)
        node.deferred_unpacks = [DeferredUnpack(position=i, after=a)
                                 for i, a in sorted(self.st.deferred.get(n, {}).items())]
        unpackers = sorted(self.st.unpackers.get(n, {}).items())
        node.metadata = self.metadata.convert(
            n.meta, path, unpacked_tensor_meta=any("tensor_meta" in u[0].meta for _, u in unpackers))
        for idx, users in unpackers:
            md = self.metadata.convert(users[0].meta, f"{path}.getitem[{idx}]")
            if md is not None and node.metadata is not None and node.metadata.tensor_meta \
                    and not isinstance(users[0].meta.get("val"), torch.Tensor):
                md.tensor_meta = True  # derived only for tensor values: a non-tensor getitem matches its producer
            if md != node.metadata:
                node.unpack_metadata.append(UnpackMetadata(position=idx, metadata=md))
        return node

    def _named(self, name, a, kind, arg_type, path) -> NamedArgument:
        return NamedArgument(name=name, value=self.argument(a, arg_type, path), kind=kind,
                             is_tuple=type(a) is tuple)

    def _schema_inputs(self, schema, n: torch.fx.Node, path):
        out = []
        args, kwargs = n.args, n.kwargs
        for i, sa in enumerate(schema.arguments):
            if sa.name in kwargs:
                out.append(self._named(sa.name, kwargs[sa.name], ArgumentKind.KEYWORD, sa.real_type,
                                       f"{path}.kwargs[{sa.name}]"))
            elif not sa.kwarg_only and i < len(args):
                out.append(self._named(sa.name, args[i], ArgumentKind.POSITIONAL, sa.real_type,
                                       f"{path}.args[{i}]"))
        n_pos = sum(1 for sa in schema.arguments if not sa.kwarg_only)
        extra = set(kwargs) - {sa.name for sa in schema.arguments}
        if len(args) > n_pos or extra:
            raise ExportError("arguments do not match the operator schema", path=path, expected=str(schema),
                              got=f"{len(args)} positional, keywords {sorted(kwargs)}")
        return out

    def _outputs(self, n: torch.fx.Node, path):
        """(outputs, unbound_outputs) of node `n`."""
        val = n.meta.get("val")
        target = n.target
        if val is None:
            # Nothing returned. A None output records that FX's meta["val"] was set (to None); no
            # output means it was absent: export graphs have both.
            return ([Argument(NoneArgument())] if "val" in n.meta else []), []
        if isinstance(target, torch._ops.OpOverload):
            returns = target._schema.returns
            if len(returns) == 1:
                rt = returns[0].real_type
                if isinstance(rt, torch.ListType) and isinstance(val, (list, tuple)):
                    return self._list_output(n, val, path)
                return [Argument(self._value(n.name, val, path))], []
            return self._multi_output(n, val, path)
        if isinstance(val, (tuple, list)):
            return self._multi_output(n, val, path)
        return [Argument(self._value(n.name, val, path))], []

    def _unpacked_name(self, producer, idx, path) -> str | None:
        users = self.st.unpackers.get(producer, {}).get(idx)
        return users[0].name if users else None

    def _list_output(self, n, val, path):
        names, unbound = [], []
        for j, m in enumerate(val):
            name = self._unpacked_name(n, j, path)
            if name is None:
                unbound.append(j)
                name = self._fresh_name(f"{n.name}_unused_{j}")
            if not isinstance(m, torch.Tensor):
                raise ExportError("list outputs must hold tensors", path=path, expected="Tensor", got=type(m).__name__)
            self._value(name, m, path)
            names.append(name)
        return [Argument(TensorListArgument(names=names))], unbound

    def _multi_output(self, n, val, path):
        outs, unbound = [], []
        for i, m in enumerate(val):
            users = self.st.unpackers.get(n, {}).get(i)
            if not users:
                unbound.append(i)
            if isinstance(m, (list, tuple)):
                inner = users[0] if users else None
                names = []
                for j, e in enumerate(m):
                    name = self._unpacked_name(inner, j, path) if inner is not None else None
                    name = name or self._fresh_name(f"{n.name}_unused_{i}_{j}")
                    if not isinstance(e, torch.Tensor):
                        raise ExportError("nested list outputs must hold tensors", path=path, expected="Tensor",
                                          got=type(e).__name__)
                    self._value(name, e, path)
                    names.append(name)
                outs.append(Argument(TensorListArgument(names=names)))
            elif m is None:
                outs.append(Argument(NoneArgument()))
            else:
                name = users[0].name if users else self._fresh_name(f"{n.name}_unused_{i}")
                outs.append(Argument(self._value(name, m, path)))
        return outs, unbound

    # -- arguments -----------------------------------------------------------
    def argument(self, a, arg_type, path):
        """A Python/FX argument -> an ArgumentValue union member."""
        if isinstance(a, torch.fx.Node):
            return self._node_ref(a, path)
        t = type(a)
        if a is None:
            return NoneArgument()
        if t is bool:
            return BoolArgument(a)
        if t is int:
            return IntArgument(a)
        if t is float:
            return FloatArgument(a)
        if t is str:
            return StringArgument(a)
        if t is complex:
            return ComplexArgument(a.real, a.imag)
        if isinstance(a, torch.dtype):
            return ScalarTypeArgument(DTYPE_TO_SCALAR_TYPE[a])
        if isinstance(a, torch.device):
            return DeviceArgument(device_to_schema(a))
        if isinstance(a, torch.memory_format):
            return MemoryFormatArgument(MEMORY_FORMAT_TO_SCHEMA[a])
        if isinstance(a, torch.layout):
            return LayoutArgument(LAYOUT_TO_SCHEMA[a])
        if isinstance(a, (list, tuple)):
            return self._list(a, arg_type, path)
        if isinstance(a, dict):
            entries = []
            for k, v in a.items():
                if not isinstance(k, str):
                    raise ExportError("dict arguments need string keys", path=path, expected="str", got=type(k).__name__)
                entries.append(ArgumentMapEntry(key=k, value=Argument(self.argument(v, None, f"{path}[{k!r}]"))))
            return StringToArgumentMapArgument(entries=entries)
        if isinstance(a, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
            name, kind = target_name(a, path)
            if not is_core(a) and name not in self.operators:
                self.operators[name] = operator_schema(a, name, kind)
            return OperatorArgument(name=name)
        if _is_custom_obj_val(a):
            name = f"_custom_obj_{len(self.custom_objs)}"
            self.custom_objs[name] = a
            return CustomObjArgument(name=name, class_fqn=_class_fqn(a))
        raise ExportError("argument has no schema type", path=path, expected="a torch schema argument type",
                          got=f"{t.__module__}.{t.__qualname__}")

    def _node_ref(self, a: torch.fx.Node, path):
        if a.op == "get_attr":
            attr = getattr(self.st.gm, a.target, None) if isinstance(a.target, str) else None
            if isinstance(attr, torch.fx.GraphModule):
                return GraphArgument(name=a.target, graph=self.export(attr, f"{self.st.path}.{a.target}"),
                                     metadata=self.metadata.convert(a.meta, path),
                                     node_name=a.name if a.name != a.target else None)
            if _is_custom_obj_val(attr):
                return CustomObjArgument(name=a.target, class_fqn=_class_fqn(attr))
            if isinstance(attr, pytree.TreeSpec):  # a flat_apply node's input or function spec
                return TreeSpecArgument(name=a.target, spec=self.treespecs.convert(attr, f"{path}.spec"),
                                        metadata=self.metadata.convert(a.meta, path),
                                        node_name=a.name if a.name != a.target else None)
            raise ExportError("get_attr of something other than a subgraph", path=path, expected="GraphModule",
                              got=type(attr).__name__)
        name = self.st.alias.get(a.name, a.name)
        v = a.meta.get("val")
        if isinstance(v, torch.Tensor) or v is None:
            return TensorArgument(name=name)
        if isinstance(v, (torch.SymBool, bool)):
            return SymBoolArgument(name=name)
        if isinstance(v, (torch.SymInt, int)):
            return SymIntArgument(name=name)
        if isinstance(v, (torch.SymFloat, float)):
            return SymFloatArgument(name=name)
        if _is_custom_obj_val(v):
            return CustomObjArgument(name=name, class_fqn=_class_fqn(v))
        if isinstance(v, (list, tuple)):
            raise ExportError("a multi-output node is used directly; only its getitem values can be", path=path,
                              got=a.name)
        raise ExportError("node value has no schema type", path=path, got=type(v).__name__)

    def _sym_kind(self, a):
        """'int' / 'float' / 'bool' for symbolic nodes and Python scalars, else None."""
        if isinstance(a, torch.fx.Node):
            v = a.meta.get("val")
            if isinstance(v, (torch.SymBool, bool)):
                return "bool"
            if isinstance(v, (torch.SymInt, int)):
                return "int"
            if isinstance(v, (torch.SymFloat, float)):
                return "float"
            return None
        t = type(a)
        return {bool: "bool", int: "int", float: "float"}.get(t)

    def _list(self, a, arg_type, path):
        if len(a) == 0:
            return self._empty_list(arg_type)
        types = {type(x) for x in a}
        if types == {bool}:
            return BoolListArgument(list(a))
        if types == {int}:
            return IntListArgument(list(a))
        if types == {float}:
            return FloatListArgument(list(a))
        if types == {str}:
            return StringListArgument(list(a))
        if all(isinstance(x, torch.fx.Node) for x in a):
            kinds = {self._sym_kind(x) for x in a}
            if kinds == {None}:
                return TensorListArgument(names=[self._node_ref(x, path).name for x in a])
        kinds = {self._sym_kind(x) for x in a}
        if kinds == {"int"}:
            return SymIntListArgument(items=[
                SymIntArgument(name=self._node_ref(x, path).name) if isinstance(x, torch.fx.Node) else SymIntArgument(value=x)
                for x in a])
        if kinds == {"float"}:
            return SymFloatListArgument(items=[
                SymFloatArgument(name=self._node_ref(x, path).name) if isinstance(x, torch.fx.Node)
                else SymFloatArgument(value=x) for x in a])
        if kinds == {"bool"}:
            return SymBoolListArgument(items=[
                SymBoolArgument(name=self._node_ref(x, path).name) if isinstance(x, torch.fx.Node)
                else SymBoolArgument(value=x) for x in a])
        if all(x is None or (isinstance(x, torch.fx.Node) and self._sym_kind(x) is None) for x in a):
            return OptionalTensorListArgument(items=[
                OptionalTensorArgument(name=None if x is None else self._node_ref(x, path).name) for x in a])
        if all(isinstance(x, (list, tuple)) for x in a):
            if all(isinstance(y, torch.fx.Node) for x in a for y in x):
                return NestedTensorListArgument(lists=[
                    TensorListArgument(names=[self._node_ref(y, path).name for y in x]) for x in a])
            if all(type(y) is int for x in a for y in x):
                return IntListListArgument(lists=[IntListArgument(list(x)) for x in a])
            if all(type(y) is float for x in a for y in x):
                return FloatListListArgument(lists=[FloatListArgument(list(x)) for x in a])
        if not any(isinstance(x, (list, tuple)) for x in a):
            # No typed list fits (a while_loop's carried (0, x)): each element is a whole argument.
            return MixedListArgument(items=[Argument(self.argument(x, None, f"{path}[{i}]")) for i, x in enumerate(a)])
        raise ExportError("list argument mixes types the schema cannot express", path=path,
                          got=sorted(t.__name__ for t in types))

    @staticmethod
    def _empty_list(arg_type):
        t = arg_type
        if isinstance(t, torch.OptionalType):
            t = t.getElementType()
        if isinstance(t, torch.ListType):
            e = t.getElementType()
            if isinstance(e, torch.OptionalType):
                e = e.getElementType()
            if isinstance(e, torch.BoolType):
                return BoolListArgument()
            if isinstance(e, (torch.IntType, torch.SymIntType)):
                return IntListArgument()
            if isinstance(e, torch.FloatType):
                return FloatListArgument()
            if isinstance(e, torch.StringType):
                return StringListArgument()
        return TensorListArgument()
