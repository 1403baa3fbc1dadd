"""ExportedProgram(s) -> one `Package` tree plus the storage payloads, in memory.

Programs are converted in name order and share one tensor table, so a weight
used by several programs is stored once. Nothing here touches the disk; the
save path hands the result to the container writer.
"""

from __future__ import annotations

import warnings

import torch
from torch._guards import detect_fake_mode
import torch.utils._pytree as pytree

from pt2format import _content_minor
from pt2format._generated.model import (
    CustomObject,
    NamedTupleDef,
    Opset,
    Program,
    RangeConstraint,
    StateEntry,
)
from pt2format._options import SAVE
from pt2format.errors import ExportError, Pt2FormatError

from ._arguments import _class_fqn, _is_custom_obj_val
from ._guards import input_guards
from ._graph import GraphExporter
from ._metadata import MetadataExporter
from ._package import new_package, state_kind
from ._signature import module_call_graph, signature
from ._symbols import SymbolTable, value_range
from ._tensors import TensorTable
from ._treespec import TreeSpecExporter
from ._values import plain_pytree, to_value
from ._weights import add_weight_sets


def _shape_env(ep):
    vals = [n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"]
    mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    if mode is not None and mode.shape_env is not None:
        return mode.shape_env
    for n in ep.graph.nodes:  # symbolic scalars without tensors
        v = n.meta.get("val")
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return v.node.shape_env
    return None


def _opsets(operators_used: set[str]) -> list[Opset]:
    versions = {"aten": torch._C._get_max_operator_version()}
    for ns in operators_used:
        versions.setdefault(ns, 1)
    return [Opset(namespace=k, version=v) for k, v in sorted(versions.items())]


@SAVE.lends("example_inputs")
def export_program(ep: torch.export.ExportedProgram, *, name: str = "forward", tensors: TensorTable | None = None,
                   operators: dict | None = None, example_inputs: bool) -> Program:
    """Convert one ExportedProgram to a `Program` table; tensors and operator schemas go to the shared tables."""
    if not isinstance(ep, torch.export.ExportedProgram):
        raise ExportError("expected a torch.export.ExportedProgram", got=type(ep).__name__)
    tensors = TensorTable() if tensors is None else tensors
    operators = {} if operators is None else operators
    try:
        return _ProgramExporter(ep, name, tensors, operators, example_inputs).run()
    except Pt2FormatError as e:
        raise e.with_context(path_prefix=f"programs[{name}]")
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RuntimeError) as e:
        raise ExportError(f"program {name!r} cannot be converted: {type(e).__name__}: {e}",
                          path=f"programs[{name}]") from e


class _ProgramExporter:
    def __init__(self, ep, name, tensors, operators, example_inputs):
        self.ep, self.name, self.tensors, self.operators = ep, name, tensors, operators
        self.want_examples = example_inputs
        self.shape_env = _shape_env(ep)
        self.symbols = SymbolTable(self.shape_env, getattr(ep, "_pt2format_guard_only_symbols", None))
        self.custom_objs: dict = {}
        self.graphs = GraphExporter(self.symbols, MetadataExporter(self.symbols), operators, self.custom_objs)
        self.treespecs = TreeSpecExporter()
        self.graphs.treespecs = self.treespecs  # specs fetched by get_attr share the namedtuple table

    def run(self) -> Program:
        ep = self.ep
        prog = Program(name=self.name)
        prog.graph = self.graphs.export(ep.graph_module, "graph")
        prog.signature = signature(ep.graph_signature, self.graphs)
        prog.module_call_graph = module_call_graph(ep.module_call_graph, self.graphs, self.treespecs)
        prog.range_constraints = [RangeConstraint(expr=self.symbols.expr(k), range=value_range(v))
                                  for k, v in ep.range_constraints.items()]
        prog.input_guards, prog.guard_sources = input_guards(ep, self.symbols, self.shape_env)
        prog.state, prog.custom_objects = self._state()
        if self.want_examples and ep.example_inputs is not None:
            prog.example_inputs = self._example_inputs(ep.example_inputs)
        if prog.input_guards and prog.example_inputs is None:
            warnings.warn(f"pt2format: program {self.name!r} is saved without example inputs: its "
                          f"{len(prog.input_guards)} input guard(s) are stored, but torch's module() compiles "
                          "guards only for a program with example inputs", stacklevel=4)
        prog.symbols = self.symbols.symbols
        prog.sym_exprs = self.symbols.exprs
        namespaces = {t.split(".")[2] for t in self.operators if t.startswith("torch.ops.") and
                      not t.startswith("torch.ops.higher_order.")}
        prog.opsets = _opsets(namespaces)
        prog.verifiers = [v.dialect for v in ep.verifiers]
        saved = getattr(ep, "_pt2format_saved_guards_code", None)  # loaded from a file: its text, verbatim
        guards = saved if saved is not None else getattr(ep, "_guards_code", None)
        prog.guards_code = [str(g) for g in (guards or [])]
        prog.namedtuple_defs = [NamedTupleDef(type_name=k, field_names=list(v))
                                for k, v in sorted(self.treespecs.namedtuples.items())]
        return prog

    def _tensor_ref(self, t, path):
        return self.tensors.add(t, path)

    def _state(self):
        ep = self.ep
        entries: list[StateEntry] = []
        objects: list[CustomObject] = []
        non_persistent = set(ep.graph_signature.non_persistent_buffers)
        for fqn, t in ep.state_dict.items():
            path = f"state_dict[{fqn!r}]"
            if not isinstance(t, torch.Tensor):
                raise ExportError("state_dict entries must be tensors", path=path, got=type(t).__name__)
            entries.append(StateEntry(name=fqn, kind=state_kind(t, fqn), tensor=self.tensors.add(t, path)))
        constants = dict(ep.constants)
        for k, v in self.custom_objs.items():
            constants.setdefault(k, v)
        for fqn, c in constants.items():
            path = f"constants[{fqn!r}]"
            if isinstance(c, torch.Tensor):
                kind = state_kind(c, fqn, constant=True, non_persistent=non_persistent)
                entries.append(StateEntry(name=fqn, kind=kind, tensor=self.tensors.add(c, path)))
            elif _is_custom_obj_val(c):
                objects.append(self._custom_object(fqn, c, path))
            else:
                raise ExportError("constant has no schema type", path=path, expected="Tensor or custom object",
                                  got=type(c).__name__)
        return entries, objects

    def _custom_object(self, fqn, obj, path) -> CustomObject:
        if not isinstance(obj, torch.ScriptObject):
            raise ExportError("only real torchbind objects can be saved", path=path, expected="torch.ScriptObject",
                              got=type(obj).__name__)
        if not obj._has_method("__getstate__"):
            raise ExportError("custom object has no __getstate__ (def_pickle)", path=path, got=_class_fqn(obj))
        state = obj.__getstate__()
        if isinstance(state, tuple) and len(state) == 2 and state[1] == _class_fqn(obj):
            state = state[0]  # ScriptObject.__getstate__ returns (class state, qualified name)
        return CustomObject(name=fqn, class_fqn=_class_fqn(obj),
                            state=to_value(state, tensor_ref=self._tensor_ref, path=f"{path}.state"))

    def _example_inputs(self, example_inputs):
        modules = [type(x).__name__ for x in pytree.tree_leaves(example_inputs) if isinstance(x, torch.nn.Module)]
        if modules:  # checked first: a failed conversion would leave the tensors it had added
            warnings.warn(f"pt2format: example inputs of program {self.name!r} are not saved: they hold "
                          f"nn.Module instances ({', '.join(modules)}), which are code, not data", stacklevel=4)
            return None
        try:
            args, kwargs = example_inputs
            return to_value(plain_pytree((tuple(args), dict(kwargs))), tensor_ref=self._tensor_ref,
                            path="example_inputs")
        except ExportError as e:
            warnings.warn(f"pt2format: example inputs of program {self.name!r} are not saved: {e}", stacklevel=4)
            return None


@SAVE.lends("example_inputs", "weight_sets")
def export_package(programs, *, example_inputs: bool, weight_sets: dict | None):
    """(Package, payloads): one ExportedProgram (saved as "forward") or a dict name -> ExportedProgram.

    `weight_sets` (name -> ExportedProgram or dict name -> tensor) adds named
    alternative weights (see exporter._weights), sharing the tensor table.
    """
    if isinstance(programs, torch.export.ExportedProgram):
        programs = {"forward": programs}
    if not isinstance(programs, dict) or not programs:
        raise ExportError("expected an ExportedProgram or a non-empty dict name -> ExportedProgram",
                          got=type(programs).__name__)
    for k in programs:
        if not isinstance(k, str) or not k:
            raise ExportError("program names must be non-empty strings", got=repr(k))
    tensors = TensorTable()
    operators: dict = {}
    progs = [export_program(programs[k], name=k, tensors=tensors, operators=operators, example_inputs=example_inputs)
             for k in sorted(programs)]
    package = new_package(
        programs=progs,
        tensors=tensors.tensors,
        storages=tensors.storages,
        operators=[operators[k] for k in sorted(operators)],
    )
    if weight_sets:
        add_weight_sets(package, tensors, weight_sets)
    package.required_features |= tensors.required_features
    _content_minor.label(package)
    return package, tensors.payloads
