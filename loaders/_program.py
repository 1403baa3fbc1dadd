"""A decoded `Package` + storage views -> a torch.export.ExportedProgram (graph, state, signature, shapes).

Nothing from the file runs: targets come from registry lookups, symbolic
expressions are built from structured nodes, names are checked before they
reach FX code generation, and guard strings are kept as text only (the
rebuilt program's `_guards_code` is printed from the structured guards, see
_guards.py, because `ExportedProgram.module()` compiles it).
"""

from __future__ import annotations

import torch
from torch._export.verifier import load_verifier
from torch._export.verifier import Verifier
from torch.export.exported_program import ExportedProgram, _common_getitem_elimination_pass
from torch.fx._lazy_graph_module import _LazyGraphModule

import pt2format
from pt2format._generated.model import (
    BoolArgument,
    FloatArgument,
    IntArgument,
    NoneArgument,
    StringArgument,
)
from pt2format._options import LOAD
from pt2format.errors import LoadError, Pt2FormatError, VersionError

from ._fake_mode import fake_mode
from pt2format._find import find_program
from ._graph import GraphBuilder
from ._coherence import check_coherence
from ._guards import derive_guards, has_stored_guards, stored_guards
from ._metadata import MetadataLoader
from pt2format._nogc import no_gc as _no_gc
from ._opsets import check_opsets, name_torch_versions
from ._signature import module_call_graph, signature
from ._state import StateLoader, program_state
from ._symbols import ShapeBuilder, value_ranges
from ._treespec import TreeSpecLoader
from ._verifier import validate
from ._values import example_inputs as load_example_inputs


class LoadedProgram(ExportedProgram):
    """The program `pt2format.load` returns: torch's ExportedProgram; `module()` is its one override in kind.

    Every other method, property and attribute is torch's, and the state is an
    ordinary instance's (`__dict__`), so `copy.copy`, `copy.deepcopy`,
    pickling and torch's own passes see what they see on torch's program; a
    copy's `module()` is built from the copy's state, as torch's is.

    `module()` is torch's `ExportedProgram.module`, called inside two blocks:
    - `deferred_codegen()` (_deferred.py): the GraphModules it builds compile
      their code on first need rather than at once (the first output does not
      wait for four code generations); the code, once generated, is torch's;
    - the collector held off while it copies the graph (`no_gc`, see
      pt2format/_nogc.py).
    and, when the program has nn.Module inputs, it registers their classes
    while the module runs (`module_input_hooks`): torch takes them from the
    example inputs, which a file cannot hold (a module is not data), ours from
    the input spec (`_pt2format_module_types`). tests/roundtrip/test_user_operations.py
    compares what a user observes with torch's loaded program.

    `run_decompositions()` and `_update()` (through which torch's passes
    derive programs) are torch's, their result handed to `_derived`: torch's
    constructor recomputes `_guards_code` from the shape environment, which
    holds an exported program's guards but not a loaded one's (they are in
    the file), so a derived program keeps this one's guards, as an exported
    program's derived programs keep theirs.
    """

    _CARRIED = ("_pt2format_module_types", "_pt2format_input_guards", "_pt2format_guard_only_symbols",
                "_pt2format_saved_guards_code")

    def run_decompositions(self, *args, **kwargs) -> ExportedProgram:
        return self._derived(ExportedProgram.run_decompositions(self, *args, **kwargs))

    def _update(self, *args, **kwargs) -> ExportedProgram:
        return self._derived(ExportedProgram._update(self, *args, **kwargs))

    def _derived(self, ep):
        """`ep`, derived by torch from this program with the same user inputs, as a LoadedProgram with its
        guards (this program's, then any torch found anew) and what the exporter and `module()` read."""
        if type(ep) is not ExportedProgram or _in_spec(ep) != _in_spec(self):
            return ep
        ep.__class__ = LoadedProgram
        ep._guards_code = [*self._guards_code, *(g for g in ep._guards_code if g not in self._guards_code)]
        for name in self._CARRIED:
            if name in self.__dict__:
                ep.__dict__[name] = self.__dict__[name]
        return ep

    def module(self, check_guards=True) -> torch.fx.GraphModule:
        from ._deferred import deferred_codegen

        with deferred_codegen(), _no_gc(lasting=True):
            m = ExportedProgram.module(self, check_guards=check_guards)
        types = self.__dict__.get("_pt2format_module_types")
        if types:
            from ._treespec import module_input_hooks

            module_input_hooks(m, types)
        return m


def _in_spec(ep):
    return next((e.signature.in_spec for e in ep.module_call_graph if e.fqn == "" and e.signature), None)


def _exported_program(root, graph, sig, state_dict, ranges, mcg, example_inputs, constants, verifiers):
    """ExportedProgram.__init__, step for step, except that the graph module compiles its code lazily.

    torch's constructor generates and compiles the forward source at once;
    half of a GPT-2 load is that. A _LazyGraphModule does it on first use
    (a call, `.code`, printing), exactly as torch.compile's graph modules do.
    tests/roundtrip/test_roundtrip_features.py checks the attributes against
    a program torch constructed.
    """
    graph._codegen = torch.fx.graph.CodeGen()
    ep = LoadedProgram.__new__(LoadedProgram)
    ep._graph_module = _LazyGraphModule(root, graph)
    _common_getitem_elimination_pass(ep._graph_module, sig, mcg)
    ep._graph_signature = sig
    ep._state_dict = state_dict
    ep._range_constraints = ranges
    ep._module_call_graph = mcg
    ep._example_inputs = example_inputs
    ep._constants = constants
    ep._verifiers = verifiers or [Verifier]
    validate(ep)
    return ep


@LOAD.lends("map_location", "weights", "copy", "allow_subclasses")
def build_program(package, name=None, storage_view=None, *, map_location, weights: bool, copy: bool,
                  state: StateLoader | None = None, file_key: tuple | None = None,
                  allow_subclasses, release_nodes: bool = False) -> ExportedProgram:
    """Rebuild program `name` of `package`; `storage_view(i)` gives the bytes of Package.storages[i].

    `file_key` identifies the file the package came from (see
    pt2format.vocab.origins): programs of one file loaded separately then
    share their rows and storages again when saved together.
    `allow_subclasses` (tensor subclass classes) are the only wrapper
    subclasses whose saved tensors are rebuilt (see _composite.py).
    `release_nodes=True` empties the program's `graph.nodes` as it is built
    (GraphBuilder.build): for a caller that decoded `package` for this load only.
    """
    fv = package.format_version
    if fv is None or fv.major > pt2format.FORMAT_VERSION[0]:
        raise VersionError("package needs a newer reader", path="format_version",
                           expected=f"major <= {pt2format.FORMAT_VERSION[0]}", got=None if fv is None else fv.major)
    program = find_program(package, name)
    if state is None:
        if weights and storage_view is None:
            raise LoadError("storage_view is required to load weights")
        state = StateLoader(package, storage_view, map_location=map_location, weights=weights, copy=copy,
                            file_key=file_key, allow_subclasses=allow_subclasses)
    try:
        with _no_gc(lasting=True):
            return _Builder(package, program, state).run(release_nodes=release_nodes)
    except Pt2FormatError as e:
        raise name_torch_versions(e, package).with_context(path_prefix=f"programs[{program.name}]")
    except Exception as e:  # torch refusing what the file describes (verifier, shapes, ...): still a typed error
        raise LoadError(f"program {program.name!r} cannot be rebuilt: {type(e).__name__}: {e}",
                        path=f"programs[{program.name}]") from e


class _Builder:
    def __init__(self, package, program, state: StateLoader):
        self.package, self.program, self.state = package, program, state
        self.shape = ShapeBuilder(program, "")
        # A static program's fake mode has no ShapeEnv (see ShapeBuilder): none of its values is symbolic.
        self.fake_mode = fake_mode(None if self.shape.static else self.shape.shape_env)
        self.treespecs = TreeSpecLoader(program.name)

    def _constant(self, member, path):
        """Non-graph argument members (in signatures) -> Python values."""
        if isinstance(member, (IntArgument, FloatArgument, BoolArgument, StringArgument)):
            return member.value
        if member is None or isinstance(member, NoneArgument):
            return None
        return self.graphs.argument(member, path)

    def run(self, *, release_nodes: bool = False) -> ExportedProgram:
        prog = self.program
        check_opsets(prog, self.package)
        state_dict, constants = self._state()
        self.graphs = GraphBuilder(self.shape, self.fake_mode, MetadataLoader(self.shape), constants)
        sig = signature(prog.signature, self._constant)
        constant_names = [s.arg.name if s.kind == torch.export.graph_signature.InputKind.USER_INPUT
                          and isinstance(s.arg, torch.export.graph_signature.ConstantArgument) else None
                          for s in sig.input_specs]
        graph, owner = self.graphs.build(prog.graph, "graph", constant_names, release_nodes=release_nodes)
        self.graphs.static_shapes.clear()  # every tensor_meta is derived: the values need not be pinned
        mcg = module_call_graph(prog.module_call_graph, self._constant_outside_graph, self.treespecs)
        ranges = {}
        for i, rc in enumerate(prog.range_constraints):
            e = self.shape.expr(rc.expr, f"range_constraints[{i}].expr")
            ranges[e] = value_ranges(rc.range, integer=not self.shape.is_float_symbol(rc.expr))
        verifiers = []
        for v in prog.verifiers:
            try:
                verifiers.append(load_verifier(v))
            except Exception:
                raise LoadError("unknown verifier dialect", path="verifiers", got=v) from None
        example_inputs = None
        if prog.example_inputs is not None:
            root_sig = next((e.signature for e in mcg if e.fqn == ""), None)
            example_inputs = load_example_inputs(prog.example_inputs, tensor=self.state.tensor,
                                                 in_spec=root_sig.in_spec if root_sig is not None else None)
        ep = _exported_program(owner, graph, sig, state_dict, ranges, mcg, example_inputs, constants, verifiers)
        check_coherence(ep)
        if id(graph) in self.graphs.custom_meta:
            ep.graph_module.meta["custom"] = self.graphs.custom_meta.pop(id(graph))
        # The file's guard strings are text for people: torch compiles ep._guards_code in .module(),
        # so they are kept aside (and written back on re-save), never handed to torch.
        ep._pt2format_saved_guards_code = list(prog.guards_code or ())
        if has_stored_guards(self.package):
            ep._guards_code = stored_guards(ep, prog, self.shape)
        else:
            ep._guards_code = derive_guards(ep)
        if self.treespecs.module_types:
            ep._pt2format_module_types = frozenset(self.treespecs.module_types)
        return ep

    def _constant_outside_graph(self, member, path):
        """Constants in module call signatures: plain scalars only (there is no graph to refer to)."""
        if isinstance(member, (IntArgument, FloatArgument, BoolArgument, StringArgument)):
            return member.value
        if member is None or isinstance(member, NoneArgument):
            return None
        raise LoadError("module call signature constant has no Python form", got=type(member).__name__)

    def _state(self):
        return program_state(self.program, self.state)
