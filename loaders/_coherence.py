"""A rebuilt program's parts must agree with each other; checked at load, where torch fails later.

torch never compares them, so a file whose parts disagree loads under
torch.export.load and then fails in `module()` or at the first call, with a
torch error far from the cause. Found by the injection run
(tests/support/pt2f_injection.py); each is a `LoadError` naming the field:

- the example inputs against the program: the tree structure (as torch's
  `_check_inputs_match`, which the call runs, compares it); each tensor's dtype, rank
  and the sizes the graph leaves concrete (symbolic sizes are the guards'
  business at the call); each constant input's value, compared as torch's
  input check compares it;
- the module call graph starts with the root (`module()` asserts it);
- every parameter, buffer and constant an input spec names is in the state,
  no state path lies inside another ("proj" and "proj.weight"), and none is
  `self` (the name of the node torch makes for it would shadow the module);
- every call to an operator binds to its schema (_targets.check_call_binding);
- the example inputs bind to `forward_arg_names`, as `module()` binds them.
"""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree

from pt2format.errors import LoadError

from ._input_checks import eq_spec


def check_example_inputs(ep) -> None:
    if ep.example_inputs is None or ep.call_spec is None or ep.call_spec.in_spec is None:
        return
    from torch.export._tree_utils import reorder_kwargs

    args, kwargs = ep.example_inputs
    in_spec = ep.call_spec.in_spec
    try:
        flat, received = pytree.tree_flatten_with_path((args, reorder_kwargs(kwargs, in_spec)))
    except (ValueError, AssertionError, TypeError) as e:
        raise LoadError("example inputs do not have the structure of the program's input spec", path="example_inputs",
                        got=str(e).split("\n")[0][:200]) from None
    if not eq_spec(received, in_spec):
        raise LoadError("example inputs do not have the structure of the program's input spec", path="example_inputs",
                        expected=str(in_spec)[:200], got=str(received)[:200])
    root = next((e for e in ep.module_call_graph if e.fqn == "" and e.signature is not None), None)
    names = root.signature.forward_arg_names if root is not None else None
    if names:
        import inspect

        # module() binds the example inputs to these names (torch's forward signature of the unlifted module).
        try:
            inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]).bind(
                *args, **kwargs)
        except (TypeError, ValueError) as e:
            raise LoadError("example inputs do not bind to the program's forward_arg_names",
                            path="module_call_graph[0].signature.forward_arg_names", got=str(e)[:200]) from None
    from torch.export.graph_signature import ConstantArgument, InputKind, TensorArgument

    specs = [s for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    if len(specs) != len(flat):
        raise LoadError("example inputs do not match the program's user inputs", path="example_inputs",
                        expected=f"{len(specs)} leaves", got=len(flat))
    placeholders = {n.name: n for n in ep.graph.find_nodes(op="placeholder")}
    for (keypath, value), spec in zip(flat, specs):
        where = f"example_inputs{pytree.keystr(keypath)}"
        if isinstance(spec.arg, ConstantArgument):
            # The signature and the graph's placeholder each hold the constant; the call compares with both.
            node = placeholders.get(spec.arg.name)
            for const in (spec.arg.value, node.meta.get("val") if node is not None else None):
                if type(const) in (int, float, str, bool) and not (
                        type(value) is type(const)
                        and (value == const or (type(const) is float and const != const and value != value))):
                    raise LoadError(f"example input differs from the constant input {spec.arg.name!r} of the graph",
                                    path=where, expected=repr(const)[:80], got=repr(value)[:80])
            continue
        if not isinstance(spec.arg, TensorArgument) or spec.arg.name not in placeholders:
            continue
        node = placeholders[spec.arg.name]
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        if not isinstance(value, torch.Tensor):
            raise LoadError(f"example input feeds tensor placeholder {node.name!r} but is not a tensor", path=where,
                            got=type(value).__name__)
        if value.dtype != val.dtype:
            raise LoadError(f"example input has another dtype than placeholder {node.name!r}", path=where,
                            expected=str(val.dtype), got=str(value.dtype))
        declared = [d if isinstance(d, int) else None for d in val.shape]
        if len(declared) != value.dim() or any(d is not None and d != n for d, n in zip(declared, value.shape)):
            raise LoadError(f"example input has other sizes than placeholder {node.name!r}", path=where,
                            expected=["s" if d is None else d for d in declared], got=list(value.shape))


def check_module_call_graph(mcg) -> None:
    if mcg and mcg[0].fqn != "":
        raise LoadError("the module call graph must start with the root module", path="module_call_graph[0].fqn",
                        expected="''", got=repr(mcg[0].fqn)[:80])


def check_state_names(signature, state_dict, constants) -> None:
    from torch.export.graph_signature import InputKind

    for i, spec in enumerate(signature.input_specs):
        if spec.kind == InputKind.PARAMETER or (spec.kind == InputKind.BUFFER and spec.persistent):
            found = spec.target in state_dict
        elif spec.kind in (InputKind.BUFFER, InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ):
            found = spec.target in constants
        else:
            continue
        if not found:
            raise LoadError(f"input spec names {spec.kind.name.lower()} {spec.target!r}, which the state does not hold",
                            path=f"signature.input_specs[{i}]")


def check_state_paths(signature) -> None:
    """No state path is a module prefix of another ("proj" and "proj.weight"): one attribute cannot be both."""
    paths = {spec.target for spec in signature.input_specs if spec.target is not None}
    if "self" in paths:
        # torch names the get_attr node it makes for a lifted entry after its path, and a node
        # named `self` shadows the module in the forward() it generates.
        raise LoadError("a state entry cannot be named 'self'", path="signature.input_specs", got="'self'")
    for path in paths:
        parts = path.split(".")
        for i in range(1, len(parts)):
            if ".".join(parts[:i]) in paths:
                raise LoadError("a state path is inside another state entry", path="signature.input_specs",
                                got=f"{'.'.join(parts[:i])!r} and {path!r}")


def check_structure(signature, module_call_graph, state_dict, constants) -> None:
    """The checks that need no fake values: `load_module`'s fast path runs these too."""
    check_module_call_graph(module_call_graph)
    check_state_names(signature, state_dict, constants)
    check_state_paths(signature)


def check_coherence(ep) -> None:
    check_structure(ep.graph_signature, ep.module_call_graph, ep.state_dict, ep.constants)
    check_example_inputs(ep)
