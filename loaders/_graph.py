"""`Graph` tables -> torch.fx graphs with node names, targets, arguments and meta["val"] fake values.

The inverse of exporter/_graph.py: multi-output nodes get their `getitem`
nodes back (except for `Node.unbound_outputs`), subgraphs become GraphModule
attributes reached through get_attr nodes, and every value's fake tensor or
symbolic scalar is made directly from its TensorMeta / SymInt, without
dispatching through the fake mode.
"""

from __future__ import annotations

import operator

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor
from torch.export import exported_program as ep_mod

from pt2format._codecs._runtime import SHARED_GIVE_UP
from pt2format._generated.model import (
    ArgumentKind,
    CustomObjArgument,
    GraphArgument,
    NoneArgument,
    SymBoolArgument,
    SymFloatArgument,
    SymIntArgument,
    TensorArgument,
    TensorListArgument,
    TokenArgument,
)
from pt2format.errors import LoadError, Pt2FormatError
from pt2format.vocab.enums import SCHEMA_TO_LAYOUT

from ._arguments import _SAME, _SCALARS, ArgumentLoader
from ._fake_tensors import FakeTensorMaker
from ._fx_nodes import node_without_walk
from ._metadata import DERIVE_TENSOR_META, DERIVE_TENSOR_META_GRAD, derive_tensor_meta
from ._names import check_constant_string, check_identifier
from ._targets import _cache as _resolved_targets, check_call_binding, resolve_target
from ._values import device_from_schema, dtype_from_schema

_ASSERT_SCALAR = torch.ops.aten._assert_scalar.default
_CONSTRAIN_FOR_SIZE = torch.ops.aten.sym_constrain_range_for_size.default
_FLAT_APPLY = getattr(torch.ops.higher_order, "flat_apply", None)
_META = torch.device("meta")
_EXPR = operator.attrgetter("expr")
_VALUE = operator.attrgetter("value")


def _value_path(path: str, name) -> str:
    """The error path of graph value `name` used at `path` (`name` None: `path` already names it)."""
    return path if name is None else f"{path}<{name}>"


def _has_unbacked(v) -> bool:
    """Whether the SymInt `v` involves an unbacked symbol (one without an example value)."""
    if not isinstance(v, torch.SymInt):
        return False
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols  # symbolic programs only (sympy)

    return bool(free_unbacked_symbols(v.node.expr))


class _Scope:
    """Per-graph state: the FX graph, its owner module, and the value tables by name."""

    def __init__(self, g, path):
        self.g = g
        self.path = path
        self.fx = torch.fx.Graph()
        self.owner = torch.nn.Module()
        self.nodes: dict[str, torch.fx.Node] = {}  # value name -> FX node producing it
        self.tensors = {v.name: v.meta for v in g.tensor_values}
        self.sym_ints = {v.name: v.value for v in g.sym_int_values}
        self.sym_floats = {v.name: v.value for v in g.sym_float_values}
        self.sym_bools = {v.name: v.value for v in g.sym_bool_values}
        self.custom_objs = {v.name: v for v in g.custom_obj_values}
        self.node_names: set[str] = set()  # every FX node created so far
        self.get_attrs: dict[str, torch.fx.Node] = {}  # get_attr node name -> node
        self.pending: dict[str, list] = {}  # node name -> getitem makers to run right after it
        self.subgraphs: dict[str, torch.fx.GraphModule] = {}  # attribute name -> module
        self.reserved = set(self.tensors) | set(self.sym_ints) | set(self.sym_floats) | set(self.sym_bools) \
            | set(self.custom_objs) | {n.name for n in g.nodes if n.name}
        self._auto = 0

    def auto_name(self, base: str) -> str:
        while True:
            name = base if self._auto == 0 else f"{base}_{self._auto}"
            self._auto += 1
            if name not in self.reserved and name not in self.node_names:
                return name


class _PerMeta:
    """TensorMeta object -> what the loader made of it, for the next value that has the same object (a file
    shares one among the values of a shape: pt2f_shared). The object is kept, so its id stays its own. After
    SHARED_GIVE_UP objects without a hit (a file that shares nothing) it keeps nothing more."""

    __slots__ = ("_kept", "_hit")

    def __init__(self):
        self._kept: dict[int, tuple] = {}  # id(TensorMeta) -> (it, what was made of it)
        self._hit = False

    def get(self, m):
        k = self._kept.get(id(m))
        if k is None or k[0] is not m:
            return None
        self._hit = True
        return k[1]

    def put(self, m, made) -> None:
        if len(self._kept) < SHARED_GIVE_UP or self._hit:
            self._kept[id(m)] = (m, made)


class GraphBuilder(ArgumentLoader):
    """Builds the FX graphs of one program."""

    def __init__(self, shape, fake_mode, metadata, constants: dict):
        self.shape = shape
        self.fake_mode = fake_mode
        self._fake = FakeTensorMaker(fake_mode)
        self.metadata = metadata
        self.constants = constants  # custom objects by name, for arguments that are not placeholders
        self.custom_meta: dict[int, dict] = {}  # id(fx graph) -> its graph module's meta["custom"]
        # id(fake value) -> (the value, dtype, sizes, strides) for strided values of integer sizes and strides:
        # their tensor_meta is derived from these numbers (see derive_tensor_meta)
        self.static_shapes: dict[int, tuple] = {}
        self._heads: dict[tuple, tuple] = {}  # (dtype, layout, device type, index) numbers -> checked objects
        # TensorMeta -> _static_meta's numbers
        self._static_metas = _PerMeta()
        # TensorMeta -> (sizes, strides, offset, static) of a symbolic one: its SymInts, made once for the
        # values that share it (pt2f_shared), as torch's traced values of one shape share their SymNodes
        self._symbolic_metas = _PerMeta()
        self.sc: _Scope | None = None

    def argument(self, member, path: str):
        """An Argument union member outside any graph (a signature's constant) -> its Python value."""
        return self._arg(member, path)

    # -- graphs ----------------------------------------------------------------
    def build(self, g, path: str, constant_input_names=None, *, release_nodes: bool = False):
        """(fx.Graph, owner module holding subgraph attributes) for the Graph table `g`.

        `release_nodes`: the caller owns `g` and needs its nodes no more, so each Node table is dropped
        from `g.nodes` once its FX node is built. The memory it frees is then what the next FX nodes
        take, instead of fresh memory the kernel must fault in page by page.
        """
        if g is None:
            raise LoadError("missing graph", path=path)
        outer, self.sc = self.sc, _Scope(g, path)
        try:
            sc = self.sc
            md = g.input_metadata
            if md and len(md) != len(g.inputs):
                raise LoadError("input_metadata must match inputs", path=f"{path}.input_metadata",
                                expected=len(g.inputs), got=len(md))
            for i, a in enumerate(g.inputs):
                node = self._placeholder(a, i, constant_input_names, f"{path}.inputs[{i}]")
                if md:
                    node.meta.update(self.metadata.load(md[i], f"{path}.input_metadata[{i}]"))
            nodes = g.nodes
            for i in range(len(nodes)):
                n = nodes[i]
                if release_nodes:
                    nodes[i] = None
                p = f"{path}.nodes[{i}]"
                try:
                    self._node(n, p)
                except Pt2FormatError:
                    raise
                except (TypeError, ValueError, RuntimeError, AttributeError, KeyError, IndexError) as e:
                    raise LoadError(f"cannot rebuild node {n.name!r}: {type(e).__name__}: {e}", path=p) from None
            if sc.pending:
                raise LoadError("deferred getitem nodes follow a node the graph does not have", path=path,
                                got=sorted(sc.pending)[:5])
            outs = [self._arg(a.value if a is not None else None, f"{path}.outputs[{i}]")
                    for i, a in enumerate(g.outputs)]
            if g.is_single_tensor_return:
                if len(outs) != 1:
                    raise LoadError("a single-tensor return needs exactly one output", path=path, got=len(outs))
                result = outs[0]
            else:
                result = outs if g.is_list_return else tuple(outs)
            out = sc.fx.output(result)
            if g.output_metadata is not None:
                out.meta.update(self.metadata.load(g.output_metadata, f"{path}.output_metadata"))
            derived: dict = {}  # one graph's symbolic derivations: the shape environment is the same for all
            for node in sc.fx.nodes:
                tm = node.meta.get("tensor_meta")
                if tm is DERIVE_TENSOR_META or tm is DERIVE_TENSOR_META_GRAD:
                    derive_tensor_meta(node, self.static_shapes, derived)
            if g.custom_meta is not None:
                self.custom_meta[id(sc.fx)] = self.metadata.custom(g.custom_meta, f"{path}.custom_meta")
            return sc.fx, sc.owner
        finally:
            self.sc = outer

    def _define(self, name: str, node: torch.fx.Node, path: str):
        sc = self.sc
        if name in sc.nodes:
            raise LoadError(f"value {name!r} is defined twice", path=path)
        sc.nodes[name] = node

    def _create(self, op, target, args, kwargs, name, path) -> torch.fx.Node:
        name = check_identifier(name, path, ".name")
        if name == "self":  # a get_attr node named after its attribute; `self` would shadow the module in forward()
            raise LoadError("a node cannot be named 'self'", path=f"{path}.name", got="'self'")
        sc = self.sc
        if name in sc.node_names:
            raise LoadError(f"node name {name!r} is used twice", path=path)
        sc.node_names.add(name)
        # Without create_node's walk for raw SymInt/SymFloat/SymBool leaves (a tenth of a large load):
        # `_arg` never makes one (symbolic values are nodes).
        node = node_without_walk(sc.fx, op, target, args, kwargs, name)
        if node.name != name:
            # FX renames candidates that shadow builtins; the file's name wins, as in torch's loader
            # (FX's code generation renames its variables again, so the source stays valid).
            node.name = name
            sc.fx._graph_namespace._used_names.add(name)
        for make in sc.pending.pop(name, ()):
            make()  # deferred getitem nodes that follow this one (Node.deferred_unpacks)
        return node

    # -- values ----------------------------------------------------------------
    def value_meta(self, name: str, path: str):
        """The fake value of the graph value `name`."""
        sc = self.sc
        m = sc.tensors.get(name)
        if m is not None or name in sc.tensors:  # a value without metadata: fake_tensor's error names it
            return self.fake_tensor(m, path, name)
        if name in sc.sym_ints:
            return self.shape.sym_int(sc.sym_ints[name], f"{path}<{name}>")
        if name in sc.sym_bools:
            return self.shape.sym_bool(sc.sym_bools[name], f"{path}<{name}>")
        if name in sc.sym_floats:
            return self.shape.sym_float(sc.sym_floats[name], f"{path}<{name}>")
        if name in sc.custom_objs:
            c = sc.custom_objs[name]
            return ep_mod.CustomObjArgument(name=c.name, class_fqn=c.class_fqn)
        raise LoadError(f"value {name!r} has no entry in the graph's value tables", path=path)

    def fake_tensor(self, m, path, name=None):
        """The fake value of TensorMeta `m`; errors name `path<name>` (formatted only when needed)."""
        known = self._static_metas.get(m)
        if known is None:
            head = self._checked_head(m, path, name)
            known = self._static_meta(m, *head)
            if known is None:
                return self._general_fake_tensor(m, _value_path(path, name), *head)
        dtype, device, sizes, strides, requires_grad = known
        meta = torch.empty_strided(sizes, strides, dtype=dtype, device=_META)
        if requires_grad:
            meta.requires_grad_(True)
        fake = self._fake(meta, device)
        if not meta.is_quantized:
            self.static_shapes[id(fake)] = (fake, dtype, sizes, strides)
        return fake

    def _checked_head(self, m, path, name):
        if m is None:
            raise LoadError("missing tensor metadata", path=_value_path(path, name))
        d = m.device
        try:
            head = self._heads.get((m.dtype, m.layout, d.type, d.index)) if d is not None else None
        except TypeError:  # an unhashable field (a tree built in memory): _head names it
            head = None
        if head is None:
            head = self._head(m, _value_path(path, name))
        return head

    def _static_meta(self, m, dtype, device, layout):
        """(dtype, device, sizes, strides, requires_grad) of a strided TensorMeta whose numbers are all concrete,
        kept for the next value with the same object (a file shares one among the values of a shape:
        pt2f_shared); None for any other."""
        ms, mst, off = m.sizes, m.strides, m.storage_offset
        try:  # every size and stride concrete (expr < 0): their values, no path strings, no symbols
            static = max(map(_EXPR, ms), default=-1) < 0 and max(map(_EXPR, mst), default=-1) < 0
        except AttributeError:  # a missing entry: the general path names it
            return None
        if not (static and layout is torch.strided and len(ms) == len(mst) and (
                off is None or (off.expr < 0 and off.value == 0))):
            return None
        known = (dtype, device, tuple(map(_VALUE, ms)), tuple(map(_VALUE, mst)), bool(m.requires_grad))
        self._static_metas.put(m, known)
        return known

    def _head(self, m, path):
        """(dtype, device, layout) of TensorMeta `m`, checked; cached by the file's numbers for the next values."""
        d = m.device
        head = (dtype_from_schema(m.dtype, f"{path}.dtype"), device_from_schema(d, f"{path}.device"),
                SCHEMA_TO_LAYOUT.get(int(m.layout)))
        if len(self._heads) < 256:
            self._heads[(m.dtype, m.layout, d.type, d.index)] = head
        return head

    def _general_fake_tensor(self, m, path, dtype, device, layout):
        """Any value: symbolic sizes, strides or offset, sparse layouts, and the errors of a bad TensorMeta."""
        known = self._symbolic_metas.get(m)
        if known is not None:  # a shared symbolic TensorMeta seen before: its SymInts again
            return self._strided_fake(m, dtype, device, *known)
        sy = self.shape.sym_int
        sizes = [s.value if s is not None and s.expr < 0 else sy(s, f"{path}.sizes[{i}]")
                 for i, s in enumerate(m.sizes)]
        static = all(s is not None and s.expr < 0 for s in m.sizes)
        if layout in (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc):
            # A sparse value's metadata is its layout and dense shape (no nnz): an empty sparse fake.
            try:
                meta = torch.empty(sizes, dtype=dtype, layout=layout, device="meta")
            except RuntimeError as e:
                raise LoadError(f"sparse tensor value cannot be rebuilt: {e}", path=path) from None
            if m.requires_grad:
                meta.requires_grad_(True)
            # Sparse kernels have no meta implementations: running the program under this mode
            # (run_decompositions) needs the fallback to real kernels that export's own mode allows.
            self.fake_mode.allow_fallback_kernels = True
            return FakeTensor(self.fake_mode, meta, device)
        if layout is not torch.strided:
            raise LoadError("only strided and COO/CSR/CSC tensor values can be rebuilt", path=path,
                            expected="STRIDED, SPARSE_COO, SPARSE_CSR or SPARSE_CSC", got=m.layout)
        strides = [s.value if s is not None and s.expr < 0 else sy(s, f"{path}.strides[{i}]")
                   for i, s in enumerate(m.strides)]
        static = static and all(s is not None and s.expr < 0 for s in m.strides)
        if len(strides) != len(sizes):
            raise LoadError("sizes and strides differ in length", path=path, expected=len(sizes), got=len(strides))
        offset = sy(m.storage_offset, f"{path}.storage_offset") if m.storage_offset is not None else 0
        if not static or type(offset) is not int:
            self._symbolic_metas.put(m, (sizes, strides, offset, static))
        return self._strided_fake(m, dtype, device, sizes, strides, offset, static)

    def _strided_fake(self, m, dtype, device, sizes, strides, offset, static):
        if type(offset) is int and offset == 0:  # never `==` on a SymInt: an unbacked offset cannot be guarded
            meta = torch.empty_strided(sizes, strides, dtype=dtype, device="meta")
        elif _has_unbacked(offset):
            # An offset torch cannot bound (select/unbind at an unbacked index): a storage sized from it
            # would add a range to the symbol that torch's program does not have. Meta views skip the
            # bounds check, so the view is made on the sizes' own storage.
            meta = torch.empty_strided(sizes, strides, dtype=dtype, device="meta").as_strided(sizes, strides, offset)
        else:
            extent = offset + 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
            meta = torch.empty((extent,), dtype=dtype, device="meta").as_strided(sizes, strides, offset)
        if m.requires_grad:
            meta.requires_grad_(True)
        fake = self._fake(meta, device)
        if static and not meta.is_quantized:
            self.static_shapes[id(fake)] = (fake, dtype, tuple(sizes), tuple(strides))
        return fake

    # -- placeholders ------------------------------------------------------------
    def _placeholder(self, a, i, constant_names, path):
        v = a.value if a is not None else None
        if isinstance(v, (TensorArgument, SymIntArgument, SymFloatArgument, SymBoolArgument, CustomObjArgument,
                          TokenArgument)) and v.name is not None:
            name = v.name
            node = self._create("placeholder", name, (), {}, name, path)
            node.meta["val"] = self.value_meta(name, path)
            self._define(name, node, path)
            return node
        # A constant user input: its name is in the signature.
        name = constant_names[i] if constant_names and i < len(constant_names) and constant_names[i] else f"arg{i}"
        node = self._create("placeholder", name, (), {}, name, path)
        node.meta["val"] = check_constant_string(self._arg(v, path), path)
        self._define(name, node, path)
        return node

    # -- nodes -----------------------------------------------------------------
    def _node(self, n, path):
        target = _resolved_targets.get(n.target)
        if target is None:
            target = resolve_target(n.target, f"{path}.target")
        args, kwargs = [], {}
        nodes = self.sc.nodes
        for j, na in enumerate(n.inputs):
            # The common arguments inline, without a path string: a tensor defined earlier, a scalar.
            # Any other argument, and every error, goes through `_arg`.
            v = na.value
            t = type(v)
            if t is TensorArgument and (val := nodes.get(v.name)) is not None:
                pass
            elif t in _SCALARS:
                val = v.value
            else:
                val = self._arg(v, f"{path}.inputs[{j}]")
            if na.is_tuple and isinstance(val, list):
                val = tuple(val)
            if na.kind == ArgumentKind.KEYWORD:
                kwargs[check_identifier(na.name, f"{path}.inputs[{j}].name")] = val
            else:
                if kwargs:
                    raise LoadError("a positional argument follows a keyword argument", path=f"{path}.inputs[{j}]")
                args.append(val)
        check_call_binding(target, len(args), kwargs, path)
        if target is _FLAT_APPLY:
            self._check_flat_apply(args, path)
        meta = self.metadata.load(n.metadata, f"{path}.metadata")
        if "nn_module_stack" not in meta:
            meta["nn_module_stack"] = {}  # an empty stack is not stored; torch's loader restores it the same way
        node = self._create("call_function", target, tuple(args), kwargs, n.name, path)
        node.meta.update(meta)
        self._outputs(n, node, target, meta, path)
        ub = meta.get("unbacked_bindings")
        if ub and not any(type(na.value) is GraphArgument for na in n.inputs):
            self._size_like(ub)
        if target is _ASSERT_SCALAR and args and isinstance(args[0], torch.fx.Node):
            cond = args[0].meta.get("val")
            if isinstance(cond, torch.SymBool):
                self.shape.shape_env.guard_or_defer_runtime_assert(cond.node.expr, "", node)
        elif target is _CONSTRAIN_FOR_SIZE and args and isinstance(args[0], torch.fx.Node):
            s = args[0].meta.get("val")
            if isinstance(s, torch.SymInt):
                self.shape.shape_env._constrain_range_for_size(s.node.expr)

    def _size_like(self, bindings):
        """Mark the sizes an operator binds as size-like, as torch's fake kernels did when they made them.

        The file keeps no size-like flag: torch's operators make every unbacked output size with
        `new_dynamic_size` (nonzero, boolean indexing, unique, custom ops, also when wrapped in
        auto_functionalized or with_effects), which marks it size-like. Higher-order ops that run
        subgraphs (cond, while_loop, map, scan) make their output sizes plain unbacked, and `item()`
        binds no size (one made size-like by `torch._check_is_size` has its
        `sym_constrain_range_for_size` node, replayed in `_node`). Size-oblivious reasoning when the
        loaded program is traced again depends on the flag.
        """
        from torch.fx.experimental.symbolic_shapes import CallMethodKey  # loaded with the bindings' key paths

        env = self.shape.shape_env
        for sym, keypath in bindings.items():
            if any(isinstance(k, CallMethodKey) and k.name == "size" for k in keypath):
                env.size_like.add(sym)

    def _outputs(self, n, node, target, meta, path):
        outs = n.outputs
        hop = isinstance(target, torch._ops.HigherOrderOperator)
        if not outs:
            if hop:
                # A higher-order op returning nothing (a no_grad region whose results are unused)
                # has meta["val"] == (); torch's verifier requires it (torch's own loader drops it).
                node.meta["val"] = ()
            return
        if len(outs) == 1 and not hop and not n.unbound_outputs and not n.deferred_unpacks \
                and not n.unpack_metadata and outs[0] is not None and type(outs[0].value) is TensorArgument:
            # The common node: one tensor output, nothing unbound, deferred or with metadata of its own.
            self._unpack_meta = None
            name = outs[0].value.name
            if name is None:
                raise LoadError("node output must name its value", path=f"{path}.outputs[0]")
            node.meta["val"] = self.value_meta(name, path)
            self._define(name, node, path)
            return
        single = len(outs) == 1 and (not hop or n.is_hop_single_tensor_return
                                     or isinstance(outs[0].value if outs[0] is not None else None, NoneArgument))
        v = outs[0].value if single and outs[0] is not None else None
        # positions are list positions when the only output is an operator's list (Node.unbound_outputs)
        listed = v.names if isinstance(v, TensorListArgument) and isinstance(target, torch._ops.OpOverload) else None
        unbound = set(n.unbound_outputs)
        self._unpack_meta = {u.position: u.metadata for u in n.unpack_metadata} if n.unpack_metadata else None
        deferred = {}
        for k, d in enumerate(n.deferred_unpacks):
            after = check_identifier(d.after, f"{path}.deferred_unpacks[{k}].after")
            if d.position >= len(outs if listed is None else listed) or d.position in unbound \
                    or d.position in deferred:
                raise LoadError("deferred getitem position is out of range, unbound or repeated",
                                path=f"{path}.deferred_unpacks[{k}].position", got=d.position)
            deferred[d.position] = after
        if single:
            if listed is not None:
                node.meta["val"] = self._unpack_list(node, listed, unbound, meta, path, top_level=True,
                                                     deferred=deferred)
                return
            if isinstance(v, NoneArgument):
                node.meta["val"] = None
                return
            name = getattr(v, "name", None)
            if name is None:
                raise LoadError("node output must name its value", path=f"{path}.outputs[0]")
            node.meta["val"] = self.value_meta(name, path)
            self._define(name, node, path)
            return
        vals = []
        for i, a in enumerate(outs):
            p = f"{path}.outputs[{i}]"
            v = a.value if a is not None else None
            if isinstance(v, TensorListArgument):
                if i in unbound:
                    holder = None
                else:
                    holder = self._getitem(node, i, self.sc.auto_name("getitem"), meta, p, i)
                vals.append(self._unpack_list(holder, v.names, set(), meta, p))
                if holder is not None:
                    holder.meta["val"] = vals[-1]
            elif isinstance(v, NoneArgument):
                vals.append(None)
                if i not in unbound:
                    self._getitem(node, i, self.sc.auto_name("getitem"), meta, p, i).meta["val"] = None
            else:
                name = getattr(v, "name", None)
                if name is None:
                    raise LoadError("node output must name its value", path=p)
                val = self.value_meta(name, p)
                vals.append(val)
                if i in deferred:
                    self._defer(deferred[i], node, i, name, val, meta, p)
                elif i not in unbound:
                    g = self._getitem(node, i, name, meta, p, i)
                    g.meta["val"] = val
                    self._define(name, g, p)
        node.meta["val"] = tuple(vals)

    def _defer(self, after, node, i, name, val, meta, path):
        """Create the getitem of output `i` right after the node named `after` (created later)."""
        sc = self.sc
        if after in sc.node_names:
            raise LoadError("a deferred getitem must follow a node created after its producer", path=path, got=after)
        unpack_meta = self._unpack_meta

        def make():
            saved, self._unpack_meta = self._unpack_meta, unpack_meta
            try:
                g = self._getitem(node, i, name, meta, path, i)
            finally:
                self._unpack_meta = saved
            g.meta["val"] = val
            self._define(name, g, path)

        sc.pending.setdefault(after, []).append(make)

    def _unpack_list(self, holder, names, unbound, meta, path, top_level=False, deferred=None):
        vals = []
        for j, name in enumerate(names):
            val = self.value_meta(name, path)
            vals.append(val)
            if deferred and j in deferred:
                self._defer(deferred[j], holder, j, name, val, meta, path)
            elif holder is not None and j not in unbound:
                g = self._getitem(holder, j, name, meta, path, j if top_level else None)
                g.meta["val"] = val
                self._define(name, g, path)
        return vals

    def _getitem(self, node, idx, name, meta, path, position=None):
        g = self._create("call_function", operator.getitem, (node, idx), {}, name, path)
        own = self._unpack_meta.get(position, _SAME) if self._unpack_meta and position is not None else _SAME
        if own is _SAME:
            g.meta.update(meta)  # getitem nodes usually share their producer's metadata
        else:
            g.meta.update(self.metadata.load(own, f"{path}.unpack_metadata[{position}]"))
            g.meta.setdefault("nn_module_stack", {})
        return g
