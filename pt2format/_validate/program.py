"""Programs: symbols and the sym-expression pool, graphs and their scopes, signatures, state, values."""

from __future__ import annotations

import math
import operator

from pt2format._generated import limits as _limits
from pt2format._generated import model as m
from pt2format._strings import CHECKERS, check_extra_meta_key
from pt2format._symeval import OP_ARITY, SYM_FREE_SIZE, UNKNOWN, SymBudget, evaluate_pool, expanded_sizes
from pt2format.errors import LimitError, Pt2FormatError, ValidationError

from pt2format._validate._common import _fail, _wrap

_EXPR = operator.attrgetter("expr")

_KNOWN_OPS = frozenset(int(k) for k in m.SymOp) - {0}


class _Values:
    """Checks generic `Value` trees: union set, tensor references in range, bounded depth."""

    def __init__(self, n_tensors: int, max_depth: int):
        self.n_tensors = n_tensors
        self.max_depth = max_depth

    def check(self, value, depth: int, identifier_keys: bool = False, objects: bool = False) -> None:
        """`identifier_keys`: string map keys must be identifiers (example inputs: torch pastes them into code).

        `objects`: EnumValue and ObjectValue may appear (tensor subclass contexts only).
        """
        if depth > self.max_depth:
            raise LimitError("value nested too deeply", expected=f"depth <= {self.max_depth}", got=depth)
        v = value.value
        cls = type(v)
        if v is None:
            raise _fail("union value is missing", "value")
        if cls is m.ListValue:
            for i, item in enumerate(v.items):
                try:
                    self.check(item, depth + 1, identifier_keys, objects)
                except Pt2FormatError as e:
                    raise _wrap(e, f"value.items[{i}]")
        elif cls is m.MapValue:
            try:
                self.check_map(v, depth + 1, identifier_keys, objects)
            except Pt2FormatError as e:
                raise _wrap(e, "value")
        elif cls is m.EnumValue or cls is m.ObjectValue:
            if not objects:
                raise _fail("enum and object values appear only in a tensor subclass's context", "value",
                            expected="a plain value", got=cls.__name__)
            if cls is m.ObjectValue:
                self.check_fields(v, depth + 1, identifier_keys)
        elif cls is m.TensorRefValue:
            if v.tensor >= self.n_tensors:
                raise _fail("tensor index out of range", "value.tensor", expected=f"< {self.n_tensors}",
                            got=v.tensor)

    def check_fields(self, obj, depth: int, identifier_keys: bool) -> None:
        """An ObjectValue's fields: each present, names unique (a rebuilt object sets each once)."""
        names = set()
        for i, f in enumerate(obj.fields):
            try:
                if f.name in names:
                    raise _fail("object field names must be unique", "name", got=repr(f.name))
                names.add(f.name)
                if f.value is None:
                    raise _fail("required field is missing", "value")
                self.check(f.value, depth, identifier_keys, True)
            except Pt2FormatError as e:
                raise _wrap(e, f"value.fields[{i}]")

    def check_map(self, mapping, depth: int, identifier_keys: bool = False, objects: bool = False) -> None:
        for i, entry in enumerate(mapping.entries):
            for part in ("key", "value"):
                item = getattr(entry, part)
                try:
                    if item is None:
                        raise _fail("required field is missing")
                    self.check(item, depth, identifier_keys, objects)
                    if part == "key" and identifier_keys:
                        check_identifier_key(item, "value")
                except Pt2FormatError as e:
                    raise _wrap(e, f"entries[{i}].{part}")


def check_identifier_key(key, path: str) -> None:
    """A dict key that torch turns into Python source (kwargs, guard messages): a string key is an identifier."""
    if type(key.value) is m.StringValue:
        CHECKERS["identifier"](key.value.value or "", path)


class _Program:
    """Checks one program: symbols, sym-expression pool, graph tree, signature, state."""

    def __init__(self, program, n_tensors: int, max_depth: int, tensors=(), budget: SymBudget | None = None):
        self.p = program
        self.budget = SymBudget() if budget is None else budget
        self.sizes: list = []
        self.n_tensors = n_tensors
        self.tensors = tensors
        self.n_symbols = len(program.symbols)
        self.n_exprs = len(program.sym_exprs)
        self.max_depth = max_depth
        self.values = _Values(n_tensors, max_depth)

    def check(self) -> None:
        p = self.p
        self.check_symbols()
        for i, rc in enumerate(p.range_constraints):
            self.use(rc.expr, f"range_constraints[{i}].expr")
        for field, most in (("input_guards", _limits.MAX_INPUT_GUARDS), ("guard_sources", _limits.MAX_GUARD_SOURCES)):
            n = len(getattr(p, field) or ())
            if n > most:  # SPEC §10: torch compiles every guard; the count is bounded before any is read
                raise LimitError(f"too many {field}", path=field, expected=f"<= {most}", got=n)
        for i, g in enumerate(p.input_guards or ()):
            self.use(g, f"input_guards[{i}]")
        try:
            scope = _Graph(self, p.graph, 0).check()
        except Pt2FormatError as e:
            raise _wrap(e, "graph")
        self.check_signature(scope)
        self.check_state_matches_placeholders()
        for i, entry in enumerate(p.state):
            path = f"state[{i}]"
            if entry.kind == m.StateKind.UNSPECIFIED:
                raise _fail("state kind is UNSPECIFIED", f"{path}.kind")
        for i, obj in enumerate(p.custom_objects):
            self.check_value(obj.state, f"custom_objects[{i}].state")
        if p.example_inputs is not None:
            try:
                self.values.check(p.example_inputs, 0, identifier_keys=True)
            except Pt2FormatError as e:
                raise _wrap(e, "example_inputs")
        for i, entry in enumerate(p.module_call_graph):
            sig = entry.signature
            if sig is None:
                continue
            for group in ("inputs", "outputs"):
                for j, arg in enumerate(getattr(sig, group)):
                    if arg is None or arg.value is None:
                        raise _fail("union value is missing", f"module_call_graph[{i}].signature.{group}[{j}].value")
            for part in ("in_spec", "out_spec"):
                spec = getattr(sig, part)
                if spec is not None:
                    try:
                        self.check_tree_spec(spec, 0)
                    except Pt2FormatError as e:
                        raise _wrap(e, f"module_call_graph[{i}].signature.{part}")

    def check_value(self, value, path: str) -> None:
        if value is None:
            return
        try:
            self.values.check(value, 0)
        except Pt2FormatError as e:
            raise _wrap(e, path)

    def check_tree_spec(self, spec, depth: int) -> None:
        if depth > self.max_depth:
            raise LimitError("tree spec nested too deeply", expected=f"depth <= {self.max_depth}", got=depth)
        module = spec.kind == m.TreeSpecKind.MODULE
        for i, key in enumerate(spec.keys):
            self.check_value(key, f"keys[{i}]")
            try:
                if module:  # 1.1: an nn.Module input's parameter and buffer names, e.g. `lin.weight`
                    if type(key.value) is not m.StringValue:
                        raise _fail("an nn.Module input's keys are parameter and buffer names", "value",
                                    expected="a string", got=type(key.value).__name__)
                    CHECKERS["attr_path"](key.value.value or "", "value.value")
                else:
                    check_identifier_key(key, "value")
            except Pt2FormatError as e:
                raise _wrap(e, f"keys[{i}]")
        self.check_value(spec.context, "context")
        for i, child in enumerate(spec.children):
            try:
                self.check_tree_spec(child, depth + 1)
            except Pt2FormatError as e:
                raise _wrap(e, f"children[{i}]")

    def check_symbols(self) -> None:
        """The pool's rows (symbol names unique: pt2f_keys, generated)."""
        n_symbols = self.n_symbols
        for i, e in enumerate(self.p.sym_exprs):
            kind = e.kind  # declared and not UNSPECIFIED: pt2f_value, generated
            if kind == m.SymExprKind.SYMBOL:
                if e.symbol >= n_symbols:
                    raise _fail("symbol index out of range", f"sym_exprs[{i}].symbol", expected=f"< {n_symbols}",
                                got=e.symbol)
            elif kind == m.SymExprKind.RATIONAL:
                if e.denominator <= 1:
                    raise _fail("rational denominator must be > 1", f"sym_exprs[{i}].denominator",
                                got=e.denominator)
            elif kind == m.SymExprKind.APPLY:
                if e.op not in _KNOWN_OPS:
                    raise _fail("APPLY needs a known op", f"sym_exprs[{i}].op", got=e.op)
                if not e.args:
                    raise _fail("APPLY needs arguments", f"sym_exprs[{i}].args")
                for j, a in enumerate(e.args):
                    if a >= i:
                        raise _fail("argument must refer to an earlier expression (the pool is acyclic)",
                                    f"sym_exprs[{i}].args[{j}]", expected=f"< {i}", got=a)
                if e.op == m.SymOp.IS_MULTIPLE:
                    raise _fail("IS_MULTIPLE is reserved and never written", f"sym_exprs[{i}].op", got="IS_MULTIPLE")
                lo, hi, even = OP_ARITY.get(e.op, (1, None, False))
                n = len(e.args)
                if n < lo or (hi is not None and n > hi) or (even and n % 2):
                    raise _fail("wrong number of operands", f"sym_exprs[{i}].args",
                                expected=f"{lo}" if lo == hi else f">= {lo}" + (", even" if even else ""), got=n)
        self.check_symbol_bounds()

    def check_symbol_bounds(self) -> None:
        """Float ranges and hints are finite; the pool evaluates within the limits of SPEC.md ("Bounds")."""
        hints = []
        for i, sym in enumerate(self.p.symbols):
            is_float = sym.kind == m.SymbolKind.FLOAT
            r = sym.range
            if is_float and r is not None:
                for side, has, v in (("float_lower", r.has_lower, r.float_lower),
                                     ("float_upper", r.has_upper, r.float_upper)):
                    if has and not math.isfinite(v):
                        raise _fail("a present float bound must be finite", f"symbols[{i}].range.{side}", got=v)
            if is_float and sym.has_hint and math.isnan(sym.float_hint):
                raise _fail("float hint is NaN", f"symbols[{i}].float_hint", got=sym.float_hint)
            hints.append((sym.float_hint if is_float else sym.hint) if sym.has_hint else UNKNOWN)
        evaluate_pool(self.p.sym_exprs, hints)
        self.sizes = sizes = expanded_sizes(self.p.sym_exprs)
        charge = self.budget.charge
        for i, size in enumerate(sizes):
            charge(size, f"sym_exprs[{i}]")

    def use(self, i: int, path: str) -> None:
        """Charges a use of pool node `i` (an index already checked) to the file's budget (SPEC.md §11.6)."""
        if i >= 0:
            self.budget.charge(self.sizes[i], path)

    def check_signature(self, scope) -> None:
        sig = self.p.signature
        graph = self.p.graph
        for group, specs, args in (("input_specs", sig.input_specs, graph.inputs),
                                   ("output_specs", sig.output_specs, graph.outputs)):
            if len(specs) != len(args):
                what = "inputs" if group == "input_specs" else "outputs"
                raise _fail(f"one spec per graph {what[:-1]} required", f"signature.{group}",
                            expected=len(args), got=len(specs))
            for i, spec in enumerate(specs):
                path = f"signature.{group}[{i}]"
                s = spec.spec  # set: pt2f_value, generated
                if type(s) is m.InputToConstantInputSpec:
                    self.check_value(s.value, f"{path}.spec.value")
                    continue
                arg = s.arg
                try:
                    if arg is None:
                        raise _fail("required field is missing")
                    scope.check_argument(arg.value if type(arg) is m.Argument else arg)
                except Pt2FormatError as e:
                    raise _wrap(e, f"{path}.spec.arg")

    def check_state_matches_placeholders(self) -> None:
        """A stored parameter, buffer or constant has the dtype and the concrete sizes its placeholder declares.

        torch never compares the two: a file whose weight is declared 16x8 in the
        graph but stored 16x0 (or 8x16) loads, then fails, or worse computes, at the
        first call. Only plain strided tensors are compared; dimensions the graph
        leaves symbolic are not.
        """
        graph_meta = {tv.name: tv.meta for tv in self.p.graph.tensor_values}
        state = {e.name: e.tensor for e in self.p.state}
        for i, spec in enumerate(self.p.signature.input_specs):
            s = spec.spec
            fqn = getattr(s, _STATE_SPEC_NAMES.get(type(s), ""), None)
            if fqn is None or s.arg is None or fqn not in state:
                continue
            meta = graph_meta.get(s.arg.name)
            t = state[fqn]
            if meta is None or meta.layout != m.Layout.STRIDED or t >= len(self.tensors):
                continue
            tensor = self.tensors[t]
            path = f"signature.input_specs[{i}]"
            if tensor.dtype != meta.dtype:
                raise _fail(f"state tensor {fqn!r} has another dtype than its placeholder {s.arg.name!r}",
                            path, expected=_enum_name(m.ScalarType, meta.dtype), got=_enum_name(m.ScalarType, tensor.dtype))
            declared = [d.value if d.expr == -1 else None for d in meta.sizes]
            if len(declared) != len(tensor.sizes) or any(d is not None and d != n for d, n in zip(declared, tensor.sizes)):
                raise _fail(f"state tensor {fqn!r} has other sizes than its placeholder {s.arg.name!r}", path,
                            expected=["s" if d is None else d for d in declared], got=list(tensor.sizes))

    def check_sym(self, sym, path: str) -> None:
        """Charges a SymInt/SymFloat/SymBool use (its index already checked by the field rules) to the budget."""
        if sym is not None:
            e = sym.expr
            if e >= 0 and self.sizes[e] > SYM_FREE_SIZE:
                self.budget.charge(self.sizes[e], f"{path}.expr")


class _Graph:
    """Checks one graph and its subgraphs; value names are scoped to the graph that declares them."""

    def __init__(self, program: _Program, graph, depth: int):
        if depth > program.max_depth:
            raise LimitError("subgraphs nested too deeply", expected=f"depth <= {program.max_depth}", got=depth)
        self.prog = program
        self.g = graph
        self.depth = depth
        self.tensors = self._names(graph.tensor_values, "tensor_values")
        self.sym_ints = self._names(graph.sym_int_values, "sym_int_values")
        self.sym_floats = self._names(graph.sym_float_values, "sym_float_values")
        self.sym_bools = self._names(graph.sym_bool_values, "sym_bool_values")
        self.custom_objs = self._names(graph.custom_obj_values, "custom_obj_values")

    @staticmethod
    def _names(values, path: str) -> set:
        names = {v.name for v in values}
        if len(names) != len(values):
            raise _fail("duplicate value names", path, expected=f"{len(values)} unique names", got=len(names))
        return names

    def check(self) -> "_Graph":
        g = self.g
        prog = self.prog
        concrete = set()  # id of each TensorMeta found concrete: values of a shape share one (pt2f_shared)
        for i, tv in enumerate(g.tensor_values):
            meta = tv.meta
            if id(meta) in concrete:
                continue
            try:  # every size, stride and offset concrete (expr < 0): check_sym charges nothing, no path needed
                off = meta.storage_offset
                if (off is None or off.expr < 0) and max(map(_EXPR, meta.sizes), default=-1) < 0 \
                        and max(map(_EXPR, meta.strides), default=-1) < 0:
                    concrete.add(id(meta))
                    continue
            except (AttributeError, TypeError):  # a missing entry or field: the general path below
                pass
            path = f"tensor_values[{i}].meta"  # dtype not UNSPECIFIED: pt2f_value, generated
            for d, s in enumerate(meta.sizes):
                prog.check_sym(s, f"{path}.sizes[{d}]")
            for d, s in enumerate(meta.strides):
                prog.check_sym(s, f"{path}.strides[{d}]")
            prog.check_sym(meta.storage_offset, f"{path}.storage_offset")
        for group in ("sym_int_values", "sym_float_values", "sym_bool_values"):
            for i, v in enumerate(getattr(g, group)):
                prog.check_sym(v.value, f"{group}[{i}].value")
        for group in ("inputs", "outputs"):
            for i, arg in enumerate(getattr(g, group)):
                try:
                    self.check_argument(arg.value)
                except Pt2FormatError as e:
                    raise _wrap(e, f"{group}[{i}].value")
        for i, meta in enumerate(g.input_metadata):
            self.check_metadata(meta, f"input_metadata[{i}]")
        self.check_metadata(g.output_metadata, "output_metadata")
        node_names = set()
        for i, node in enumerate(g.nodes):
            try:
                self.check_node(node)
            except Pt2FormatError as e:
                raise _wrap(e, f"nodes[{i}]")
            node_names.add(node.name)
        if len(node_names) != len(g.nodes):
            raise _fail("duplicate node names", "nodes", expected=f"{len(g.nodes)} unique names", got=len(node_names))
        return self

    def check_node(self, node) -> None:
        for j, arg in enumerate(node.inputs):
            try:
                self.check_argument(arg.value)
            except Pt2FormatError as e:
                raise _wrap(e, f"inputs[{j}].value")
        for j, arg in enumerate(node.outputs):
            try:
                self.check_argument(arg.value)
            except Pt2FormatError as e:
                raise _wrap(e, f"outputs[{j}].value")
        self.check_metadata(node.metadata, "metadata")
        for j, unpack in enumerate(node.unpack_metadata):
            self.check_metadata(unpack.metadata, f"unpack_metadata[{j}].metadata")

    def check_metadata(self, meta, path: str) -> None:
        """One NodeMetadata (of a node, getitem, placeholder, output or get_attr): indices, values, sorted extra."""
        if meta is None:
            return
        if meta.custom is not None:
            try:
                self.prog.values.check_map(meta.custom, 1)
            except Pt2FormatError as e:
                raise _wrap(e, f"{path}.custom")
        for j, e in enumerate(meta.extra):
            check_extra_meta_key(e.key, f"{path}.extra[{j}].key")

    def check_argument(self, v) -> None:
        """Check one ArgumentValue member: set, and every name it uses declared in this graph."""
        cls = type(v)
        if cls is m.TensorArgument:
            if v.name not in self.tensors:
                raise _undeclared("tensor", v.name, "name")
        elif v is None:
            raise _fail("union value is missing")
        elif cls in _OPTIONAL_NAME:  # name absent means None / a concrete value
            scope, what = _OPTIONAL_NAME[cls]
            if v.name is not None and v.name not in getattr(self, scope):
                raise _undeclared(what, v.name, "name")
        elif cls in _OPTIONAL_NAME_LIST:
            scope, what = _OPTIONAL_NAME_LIST[cls]
            names = getattr(self, scope)
            for i, item in enumerate(v.items):
                if item.name is not None and item.name not in names:
                    raise _undeclared(what, item.name, f"items[{i}].name")
        elif cls is m.TensorListArgument:
            for i, name in enumerate(v.names):
                if name not in self.tensors:
                    raise _undeclared("tensor", name, f"names[{i}]")
        elif cls is m.NestedTensorListArgument:
            for i, lst in enumerate(v.lists):
                for j, name in enumerate(lst.names):
                    if name not in self.tensors:
                        raise _undeclared("tensor", name, f"lists[{i}].names[{j}]")
        elif cls is m.CustomObjArgument:
            if v.name not in self.custom_objs:
                raise _undeclared("custom object", v.name, "name")
        elif cls is m.GraphArgument:
            self.check_metadata(v.metadata, "metadata")
            try:
                _Graph(self.prog, v.graph, self.depth + 1).check()
            except Pt2FormatError as e:
                raise _wrap(e, "graph")
        elif cls is m.TreeSpecArgument:  # 1.1: a flat_apply node's spec, fetched with get_attr
            self.check_metadata(v.metadata, "metadata")
            try:
                self.prog.check_tree_spec(v.spec, 0)
            except Pt2FormatError as e:
                raise _wrap(e, "spec")
        elif cls is m.MixedListArgument:  # 1.1: each item is a whole Argument, in this graph's scope
            for i, item in enumerate(v.items):
                try:
                    self.check_argument(item.value)
                except Pt2FormatError as e:
                    raise _wrap(e, f"items[{i}].value")
        elif cls is m.StringToArgumentMapArgument:
            for i, entry in enumerate(v.entries):
                try:
                    if entry.value is None:
                        raise _fail("required field is missing")
                    self.check_argument(entry.value.value)
                except Pt2FormatError as e:
                    raise _wrap(e, f"entries[{i}].value")


# Argument kinds whose `name` may be absent, and the graph scope a present name must be declared in.
_OPTIONAL_NAME = {
    m.OptionalTensorArgument: ("tensors", "tensor"), m.SymIntArgument: ("sym_ints", "SymInt"),
    m.SymFloatArgument: ("sym_floats", "SymFloat"), m.SymBoolArgument: ("sym_bools", "SymBool"),
}
_OPTIONAL_NAME_LIST = {
    m.OptionalTensorListArgument: ("tensors", "tensor"), m.SymIntListArgument: ("sym_ints", "SymInt"),
    m.SymFloatListArgument: ("sym_floats", "SymFloat"), m.SymBoolListArgument: ("sym_bools", "SymBool"),
}


_STATE_SPEC_NAMES = {m.InputToParameterSpec: "parameter_name", m.InputToBufferSpec: "buffer_name",
                     m.InputToTensorConstantSpec: "tensor_constant_name"}


def _enum_name(enum, value) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def _undeclared(what: str, name, path: str) -> ValidationError:
    return _fail(f"{what} {name!r} is not declared in this graph", path, expected="a name from the graph's values",
                 got=repr(name))
