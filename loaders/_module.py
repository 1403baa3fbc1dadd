"""load_module: a program of a .pt2f file straight to the callable module `ExportedProgram.module()` returns.

`load(path).module()` rebuilds an ExportedProgram (fake values for every
node, a ShapeEnv for symbolic programs, torch's verifier) and then runs
torch's unlifting passes over a deep copy of its graph, compiling a guard
function from text on the way; `module()` alone imports `torch._dynamo`.
Here the unlifted graph is built directly from the file:

* the graph is rebuilt without fake values or node metadata (a module
  that runs needs neither), so no ShapeEnv, no sympy, no `torch._dynamo`;
* lifted parameters, buffers, tensor constants and custom objects become
  `get_attr` nodes, mutated buffers and inputs get the `copy_` torch's
  `_insert_copy_for_mutations` inserts, and the forward takes and returns
  the user's pytrees through torch's own `_PyTreeCodeGen`;
* state is registered as torch's `_create_stateful_graph_module` does
  (the tensors are views of a private map of the file: writes, such as a
  mutated buffer's, stay in this process);
* inputs are checked before the graph runs with the guards torch would
  compile, evaluated from validated values (_input_checks.py).

What this path does not build (effect tokens, symbolic float or bool
inputs, a program without a root call signature or example inputs, ...)
falls back to `load(...).module()`; the module's `pt2format_fallback`
attribute then says why (None on the fast path).
"""

from __future__ import annotations

import os
import warnings

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.export import graph_signature as gs
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.graph import _PyTreeCodeGen, _PyTreeInfo

import pt2format
from pt2format._options import LOAD_MODULE
from pt2format._generated.model import (
    BoolArgument,
    CustomObjArgument,
    FloatArgument,
    IntArgument,
    NoneArgument,
    StringArgument,
    SymBoolArgument,
    SymFloatArgument,
    TokenArgument,
)
from pt2format.errors import LoadError, Pt2FormatError, VersionError

from ._coherence import check_structure
from ._deferred import defer
from pt2format._find import find_program
from ._opsets import check_opsets, name_torch_versions
from ._graph import GraphBuilder
from ._metadata import custom_meta
from ._guards import has_stored_guards
from ._input_checks import InputChecks, Unsupported, flatten_inputs
from pt2format._nogc import no_gc
from ._signature import module_call_graph, signature
from ._state import StateLoader, program_state
from ._treespec import TreeSpecLoader

_LIFTED = (gs.InputKind.PARAMETER, gs.InputKind.BUFFER, gs.InputKind.CONSTANT_TENSOR, gs.InputKind.CUSTOM_OBJ)
_MUTATIONS = (gs.OutputKind.BUFFER_MUTATION, gs.OutputKind.USER_INPUT_MUTATION, gs.OutputKind.PARAMETER_MUTATION)


class _NoMetadata:
    """Node metadata is for people and passes; a module that only runs skips reading it."""

    def load(self, md, path):
        return {}

    # A graph module's meta["custom"] is the user's, and `ep.module()` keeps it: read it.
    custom = staticmethod(custom_meta)


class _LeanGraphBuilder(GraphBuilder):
    """GraphBuilder without fake values: names are still checked against the value tables."""

    def __init__(self, constants):
        super().__init__(None, None, _NoMetadata(), constants)

    def value_meta(self, name, path):
        sc = self.sc
        if name in sc.tensors or name in sc.sym_ints or name in sc.sym_bools or name in sc.sym_floats \
                or name in sc.custom_objs:
            return None
        raise LoadError(f"value {name!r} has no entry in the graph's value tables", path=path)


class LoadedModule(_LazyGraphModule):
    """The unlifted module of a program (what `ExportedProgram.module()` returns), built from a file.

    The first calls run the graph node by node; code is generated in the
    background after the first call, or when `.code` is read (_deferred.py).
    `range_constraints` is not kept (torch's holds sympy
    expressions); `validate_inputs = False` turns the input checks off, as
    for torch's module.
    """


def _assign(root: torch.nn.Module, fqn: str, value, kind: str, persistent: bool = True) -> None:
    """torch.export.unflatten._assign_attr for one module: submodules created along the dotted path."""
    *prefix, field = fqn.split(".")
    mod = root
    for item in prefix:
        sub = getattr(mod, item, None)
        if not isinstance(sub, torch.nn.Module):
            sub = torch.nn.Module()
            setattr(mod, item, sub)
        mod = sub
    if kind == "parameter":
        mod.register_parameter(field, value)
    elif kind == "buffer":
        mod.register_buffer(field, value, persistent=persistent)
    else:
        if field in mod._buffers:
            del mod._buffers[field]
        setattr(mod, field, value)


def _has_attr(root, fqn: str) -> bool:
    mod = root
    for item in fqn.split("."):
        if not hasattr(mod, item):
            return False
        mod = getattr(mod, item)
    return True


def _why_not(prog) -> str | None:
    """Why the fast path cannot build this program (None: it can)."""
    sig = prog.signature
    if sig is None:
        return "the program has no graph signature"
    for s in sig.input_specs:
        v = s.spec if s is not None else None
        name = type(v).__name__
        if name == "InputTokenSpec":
            return "effect tokens (torch's module() removes them with a pass)"
        if name == "UserInputSpec":
            a = v.arg.value if v.arg is not None else None
            if isinstance(a, (SymFloatArgument, SymBoolArgument, CustomObjArgument, TokenArgument)):
                return f"a {type(a).__name__} user input"
    for s in sig.output_specs:
        if type(s.spec if s is not None else None).__name__ == "OutputTokenSpec":
            return "effect tokens (torch's module() removes them with a pass)"
    root = next((e for e in prog.module_call_graph if not e.fqn), None)
    if root is None or root.signature is None or root.signature.in_spec is None:
        return "no root module call signature (torch's module() needs its in_spec)"
    if prog.example_inputs is None:
        return "no example inputs (torch's module() then checks inputs in a pre-hook, not with guards)"
    return None


def _user_leaves(prog, sig) -> list:
    """Per user input (in order): ("tensor", TensorMeta) / ("symint", SymInt) / ("const", value)."""
    g = prog.graph
    tensors = {v.name: v.meta for v in g.tensor_values}
    sym_ints = {v.name: v.value for v in g.sym_int_values}
    out = []
    for i, spec in enumerate(sig.input_specs):
        if spec.kind != gs.InputKind.USER_INPUT:
            continue
        a = spec.arg
        if isinstance(a, gs.TensorArgument):
            meta = tensors.get(a.name)
            if meta is None:
                raise LoadError(f"user input {a.name!r} has no tensor metadata", path=f"signature.input_specs[{i}]")
            out.append(("tensor", meta))
        elif isinstance(a, gs.SymIntArgument):
            s = sym_ints.get(a.name)
            if s is None:
                raise LoadError(f"user input {a.name!r} has no SymInt value", path=f"signature.input_specs[{i}]")
            out.append(("symint", s))
        elif isinstance(a, gs.ConstantArgument):
            out.append(("const", a.value))
        else:
            raise Unsupported(f"a {type(a).__name__} user input")
    return out


def _paths(in_spec, names: list[str] | None, n: int) -> list[str]:
    """How torch's guard messages name each flat input: `x`, `xs[0]`, `cfg['k']`."""
    try:
        args, kwargs = pytree.tree_unflatten(list(range(n)), in_spec)
        bound = {}
        for i, a in enumerate(args):
            bound[names[i] if names and i < len(names) else f"arg_{i}"] = a
        bound.update(kwargs)
        out = [""] * n
        for path, leaf in pytree.tree_leaves_with_path(bound):
            out[leaf] = path[0].key + pytree.keystr(path[1:])
        return out
    except Exception:  # noqa: BLE001 - names only feed messages
        return [f"input {i}" for i in range(n)]


def _constant_member(member, path):
    if isinstance(member, (IntArgument, FloatArgument, BoolArgument, StringArgument)):
        return member.value
    if member is None or isinstance(member, NoneArgument):
        return None
    raise Unsupported(f"a {type(member).__name__} constant in a signature ({path})")


def build_module(package, name, storage_view, *, map_location, copy: bool, file_key: tuple | None,
                 allow_subclasses):
    """(module, None) for program `name` of `package`, or (None, reason) when the fast path cannot build it."""
    fv = package.format_version
    if fv is None or fv.major > pt2format.FORMAT_VERSION[0]:
        raise VersionError("package needs a newer reader", path="format_version",
                           expected=f"major <= {pt2format.FORMAT_VERSION[0]}", got=None if fv is None else fv.major)
    prog = find_program(package, name)
    why = _why_not(prog)
    if why is not None:
        return None, why
    check_opsets(prog, package)
    state = StateLoader(package, storage_view, map_location=map_location, copy=copy, file_key=file_key,
                        allow_subclasses=allow_subclasses)
    try:
        with no_gc(lasting=True):
            return _build(prog, state, has_stored_guards(package)), None
    except Unsupported as e:
        return None, str(e)
    except Pt2FormatError as e:
        raise name_torch_versions(e, package).with_context(path_prefix=f"programs[{prog.name}]")
    except Exception as e:  # torch refusing what the file describes: still a typed error
        raise LoadError(f"program {prog.name!r} cannot be rebuilt: {type(e).__name__}: {e}",
                        path=f"programs[{prog.name}]") from e


def _build(prog, state: StateLoader, stored: bool) -> LoadedModule:
    state_dict, constants = program_state(prog, state)
    sig = signature(prog.signature, _constant_member)
    mcg = module_call_graph(prog.module_call_graph, _constant_member, TreeSpecLoader(prog.name))
    check_structure(sig, mcg, state_dict, constants)
    root_sig = next(e for e in mcg if e.fqn == "").signature
    in_spec, out_spec = root_sig.in_spec, root_sig.out_spec
    constant_names = [s.arg.name if s.kind == gs.InputKind.USER_INPUT and isinstance(s.arg, gs.ConstantArgument)
                      else None for s in sig.input_specs]
    builder = _LeanGraphBuilder(constants)
    graph, owner = builder.build(prog.graph, "graph", constant_names)
    builder.sc = None

    # Unlift (torch.export._unlift._unlift_inputs_as_getattr / _insert_copy_for_mutations).
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(sig.input_specs):
        raise LoadError("graph inputs and signature input specs differ in number", path="signature.input_specs",
                        expected=len(placeholders), got=len(sig.input_specs))
    lifted, inputs = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # get_attr of attributes registered below
        for node, spec in zip(placeholders, sig.input_specs):
            if spec.kind in _LIFTED:
                with graph.inserting_after(node):
                    attr = graph.get_attr(spec.target)
                node.replace_all_uses_with(attr)
                graph.erase_node(node)
                lifted[spec.target] = attr
            else:
                inputs[node.name] = node
    output = graph.output_node()
    outs = pytree.tree_flatten(output.args)[0]
    if len(outs) != len(sig.output_specs):
        raise LoadError("graph outputs and signature output specs differ in number", path="signature.output_specs",
                        expected=len(outs), got=len(sig.output_specs))
    user_outs, copies = [], {}
    for ret, spec in zip(outs, sig.output_specs):
        if spec.kind not in _MUTATIONS:
            user_outs.append(ret)
            continue
        target = lifted.get(spec.target) if spec.kind != gs.OutputKind.USER_INPUT_MUTATION else inputs.get(spec.target)
        if target is None:
            raise LoadError(f"mutated {spec.target!r} is neither a lifted state entry nor a user input",
                            path="signature.output_specs")
        with graph.inserting_before(output):
            copies[ret] = graph.call_function(torch.ops.aten.copy_.default, (target, ret))
    with graph.inserting_before(output):
        new_out = graph.output(tuple(copies.get(n, n) for n in user_outs))
    output.replace_all_uses_with(new_out)
    graph.erase_node(output)
    new_out.name = output.name
    names = root_sig.forward_arg_names
    if not names:
        if (in_spec.type is tuple and in_spec.num_children == 2 and in_spec.child(0).type is tuple
                and in_spec.child(1).type is dict):
            names = [f"arg_{i}" for i in range(in_spec.child(0).num_children)] + list(in_spec.child(1).context)
        else:
            names = [f"arg_{i}" for i in range(in_spec.num_children)]
    graph._codegen = _PyTreeCodeGen(_PyTreeInfo(names, in_spec, out_spec))

    # State, as torch's _register_attrs_to_new_gm and _create_stateful_graph_module leave it.
    non_persistent = set(sig.non_persistent_buffers)
    for fqn in sig.buffers:
        _assign(owner, fqn, constants[fqn] if fqn in non_persistent else state_dict[fqn], "buffer",
                persistent=fqn not in non_persistent)
    for fqn in sig.parameters:
        _assign(owner, fqn, state_dict[fqn], "parameter")
    for fqn in list(sig.lifted_custom_objs) + list(sig.lifted_tensor_constants):
        _assign(owner, fqn, constants[fqn], "constant")
    gm = LoadedModule(owner, graph)
    if id(graph) in builder.custom_meta:  # torch's module() keeps graph_module.meta["custom"]
        gm.meta["custom"] = builder.custom_meta.pop(id(graph))
    detached = {}
    for fqn in sig.lifted_tensor_constants:  # GraphModule copies tensor attributes as buffers: make them constants
        value = constants[fqn]
        if value.requires_grad:
            value = detached.setdefault(id(constants[fqn]), value.detach())
        _assign(gm, fqn, value, "constant")
    for fqn, value in constants.items():
        if not _has_attr(gm, fqn):
            if isinstance(value, torch.Tensor) and value.requires_grad:
                value = detached.setdefault(id(value), value.detach())
            _assign(gm, fqn, value, "constant")
    for fqn in sig.non_persistent_buffers:
        _assign(gm, fqn, constants[fqn], "buffer", persistent=False)

    # Input checks, evaluated before forward runs.
    leaves = _user_leaves(prog, sig)
    checks = InputChecks(prog, leaves, _paths(in_spec, names, len(leaves)), stored_guards=stored)
    gm.validate_inputs = True
    gm.pt2format_fallback = None

    def check_inputs(module, args, kwargs):
        if module.validate_inputs:
            checks(flatten_inputs(args, kwargs, in_spec))

    gm.register_forward_pre_hook(check_inputs, with_kwargs=True)
    if not defer(gm):  # the first calls run the graph directly; code is generated in the background (_deferred.py)
        _LazyGraphModule.force_recompile(gm)  # or now: dynamo refuses to trace a lazy module's forward
    return gm


@LOAD_MODULE.implements
def load_module(path, *, program, map_location, copy, verify_data, prefetch, allow_subclasses,
                mmap, device_mesh, placements) -> torch.nn.Module:
    """The module `pt2format.load(path, ...).module()` would give, built directly (see the module docstring).

    `mmap=False` reads a path into memory instead of mapping it, as for `load`;
    `device_mesh` loads it sharded (`_sharded.py`).
    """
    if device_mesh is not None:
        from ._sharded import load_sharded_module

        return load_sharded_module(
            path, device_mesh=device_mesh, placements=placements, program=program, verify_data=verify_data,
            mmap=mmap, allow_subclasses=allow_subclasses,
            meta_module=lambda: load_module(path, program=program, map_location="meta", mmap=mmap,
                                            allow_subclasses=allow_subclasses))
    if placements is not None:
        raise ValueError("placements needs a device_mesh")
    from pt2format._api import read
    from pt2format._source import is_pathlike

    start = path.tell() if hasattr(path, "seek") and hasattr(path, "tell") else None
    f = read(path, verify_data=verify_data, copy_on_write=True, mmap=mmap)
    try:
        if prefetch and mmap and not copy and f.package.storages and is_pathlike(path):
            from ._prefetch import prefetch as start_prefetch
            start_prefetch(os.fspath(path), [f.storage_view(i) for i in range(len(f.package.storages))])
        module, why = build_module(f.package, program, f.storage_view, map_location=map_location, copy=copy,
                                   file_key=f.file_key, allow_subclasses=allow_subclasses)
    except Pt2FormatError as e:
        raise e.with_context(file=f.path)
    finally:
        f.close()  # tensors keep their views (and so the map) alive
    if module is not None:
        return module
    from ._load import load_program

    if start is not None:
        path.seek(start)
    module = load_program(path, program=program, map_location=map_location, copy=copy, verify_data=verify_data,
                          prefetch=prefetch, allow_subclasses=allow_subclasses, mmap=mmap).module()
    module.pt2format_fallback = why
    return module
