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

from pt2format._generated.model import (
    Argument,
    ArgumentKind,
    CustomObjArgument,
    DeferredUnpack,
    Graph,
    NamedArgument,
    Node,
    NodeMetadata,
    NoneArgument,
    SymBoolArgument,
    SymBoolValue,
    SymFloatArgument,
    SymFloatValue,
    SymIntArgument,
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
from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE, LAYOUT_TO_SCHEMA, device_to_schema
from ._arguments import ArgumentExporter, _class_fqn, _is_custom_obj_val
from ._operators import is_core, operator_schema, target_name
from ._values import map_value

ArgumentKind = _ints(ArgumentKind)

_SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


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


class _Target:
    """A node target's file name, and for an operator overload its schema's arguments (read from torch's
    schema once: `schema.arguments` builds new objects on every access)."""

    __slots__ = ("target", "name", "schema", "is_hop", "arguments", "n_positional", "names", "returns")

    def __init__(self, target, name: str, schema, is_hop: bool):
        self.target, self.name, self.schema, self.is_hop = target, name, schema, is_hop
        params = schema.arguments if schema is not None else ()
        self.arguments = [(a.name, a.kwarg_only, a.real_type) for a in params]
        self.n_positional = sum(1 for a in params if not a.kwarg_only)
        self.names = frozenset(a.name for a in params)
        # What `_outputs` needs of the returns: None (not an overload), "list" (one list return), "one"
        # (one other return) or "many".
        self.returns = None
        if isinstance(target, torch._ops.OpOverload):
            returns = target._schema.returns
            if len(returns) != 1:
                self.returns = "many"
            else:
                self.returns = "list" if isinstance(returns[0].real_type, torch.ListType) else "one"


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


class GraphExporter(ArgumentExporter):
    """Converts the graphs of one program; shares its symbol table, tensor table and metadata converter."""

    def __init__(self, symbols, metadata, operators: dict, custom_objs: dict):
        self.symbols = symbols
        self.metadata = metadata
        self.operators = operators  # Package.operators being collected: target -> OperatorSchema
        self.custom_objs = custom_objs  # constants found inline as arguments: name -> object
        self.st: _GraphState | None = None
        self.treespecs = TreeSpecExporter()  # the program's, when it sets one (namedtuple_defs)
        self._targets: dict[int, _Target] = {}  # id(target) -> what _node needs of it
        self._tensor_metas: dict[tuple, TensorMeta] = {}  # concrete tensor properties -> their TensorMeta

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
        """The TensorMeta of `t`; one shared object per distinct (dtype, sizes, strides, offset, requires_grad,
        device, layout), since a large graph has 20,000 values of a few shapes (the tree is only written,
        never changed in place, so sharing gives the same bytes).

        Concrete properties are looked up before converting. Symbolic ones are converted first and
        shared by what they became (expression indices of this program's pool, which one
        GraphExporter serves), so a dynamic-shape program shares too.
        """
        key = self.metadata.tensor_facts(t)  # None when symbolic or not strided
        if key is not None:
            meta = self._tensor_metas.get(key)
            if meta is not None:
                return meta
        sy = self.symbols
        if t.dtype not in DTYPE_TO_SCALAR_TYPE:
            raise ExportError("dtype has no schema value", path=path, expected="a ScalarType", got=str(t.dtype))
        strided = t.layout == torch.strided
        meta = TensorMeta(
            dtype=DTYPE_TO_SCALAR_TYPE[t.dtype],
            sizes=[sy.sym_int(s) for s in t.shape],
            strides=[sy.sym_int(s) for s in t.stride()] if strided else [],
            storage_offset=sy.sym_int(t.storage_offset()) if strided else None,
            requires_grad=bool(t.requires_grad),
            device=device_to_schema(t.device),
            layout=LAYOUT_TO_SCHEMA[t.layout],
        )
        if key is None:
            o = meta.storage_offset
            key = ("converted", meta.dtype, meta.layout, t.device, meta.requires_grad,
                   tuple((x.expr, x.value) for x in meta.sizes), tuple((x.expr, x.value) for x in meta.strides),
                   None if o is None else (o.expr, o.value))
            shared = self._tensor_metas.get(key)
            if shared is not None:
                return shared
        self._tensor_metas[key] = meta
        return meta

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
    def _target(self, target, path: str) -> _Target:
        """What `_node` needs of a target, worked out once per target (20,000 nodes call a few operators)."""
        t = self._targets.get(id(target))
        if t is not None:
            return t
        name, kind = target_name(target, path)
        if not is_core(target) and name not in self.operators:
            self.operators[name] = operator_schema(target, name, kind)
        schema = target._schema if isinstance(target, torch._ops.OpOverload) else None
        t = _Target(target, name, schema, isinstance(target, torch._ops.HigherOrderOperator))
        self._targets[id(target)] = t  # holds `target`: its id is not reused while the exporter lives
        return t

    def _node(self, n: torch.fx.Node, path: str) -> Node:
        t = self._target(n.target, path)
        node = Node(name=n.name, target=t.name)
        if t.schema is not None:
            node.inputs = self._schema_inputs(t, n, path)
        else:
            node.inputs = [self._named("", a, ArgumentKind.POSITIONAL, None, f"{path}.args[{i}]")
                           for i, a in enumerate(n.args)]
            node.inputs += [self._named(k, a, ArgumentKind.KEYWORD, None, f"{path}.kwargs[{k}]")
                            for k, a in n.kwargs.items()]
        node.outputs, node.unbound_outputs = self._outputs(n, t, path)
        if t.is_hop:
            node.is_hop_single_tensor_return = isinstance(n.meta.get("val"), torch.Tensor)
        deferred = self.st.deferred.get(n)
        if deferred:
            node.deferred_unpacks = [DeferredUnpack(position=i, after=a) for i, a in sorted(deferred.items())]
        unpackers = self.st.unpackers.get(n)
        if not unpackers:  # the common case: no getitem unpacks this node
            node.metadata = self.metadata.convert(n.meta, path)
            return node
        unpackers = sorted(unpackers.items())
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

    def _schema_inputs(self, t: _Target, n: torch.fx.Node, path):
        out = []
        args, kwargs = n.args, n.kwargs
        for i, (name, kwarg_only, real_type) in enumerate(t.arguments):
            if name in kwargs:
                out.append(self._named(name, kwargs[name], ArgumentKind.KEYWORD, real_type, f"{path}.kwargs[{name}]"))
            elif not kwarg_only and i < len(args):
                out.append(self._named(name, args[i], ArgumentKind.POSITIONAL, real_type, f"{path}.args[{i}]"))
        if len(args) > t.n_positional or (kwargs and not t.names.issuperset(kwargs)):
            raise ExportError("arguments do not match the operator schema", path=path, expected=str(t.schema),
                              got=f"{len(args)} positional, keywords {sorted(kwargs)}")
        return out

    def _outputs(self, n: torch.fx.Node, t: _Target, path):
        """(outputs, unbound_outputs) of node `n`, whose target is `t`."""
        val = n.meta.get("val")
        if val is None:
            # Nothing returned. A None output records that FX's meta["val"] was set (to None); no
            # output means it was absent: export graphs have both.
            return ([Argument(NoneArgument())] if "val" in n.meta else []), []
        if t.returns is not None:  # an operator overload
            if t.returns == "one" or (t.returns == "list" and not isinstance(val, (list, tuple))):
                return [Argument(self._value(n.name, val, path))], []
            if t.returns == "list":
                return self._list_output(n, val, path)
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
