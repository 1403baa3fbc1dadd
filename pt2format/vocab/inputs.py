"""A program's user inputs: their placeholders and the key paths `ep.module()` gives them."""

from __future__ import annotations

import inspect

import torch.utils._pytree as pytree


def input_paths(ep):
    """The key paths of the flat user inputs, as `ep.module()` names them (`_unlift._get_input_paths`), or None."""
    entry = next((e for e in ep.module_call_graph if e.fqn == "" and e.signature is not None), None)
    names = entry.signature.forward_arg_names if entry is not None else None
    if not names or ep.example_inputs is None:
        return None
    sig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    args, kwargs = ep.example_inputs
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    return [path for path, _ in pytree.tree_leaves_with_path(bound.arguments)]


def user_input_placeholders(ep) -> list:
    """The placeholders of the USER_INPUT specs, in their order: one per flat user input, as `input_paths` counts.

    Read from the input specs, not `graph_signature.user_inputs`, which holds a constant input's value
    (`3`) where its placeholder is named (`n`)."""
    by_name = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    names = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    return [by_name[n] for n in names if n in by_name]
