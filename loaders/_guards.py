"""Input guards for a rebuilt program, derived from its placeholders' symbolic shapes (never from file text).

`ExportedProgram.module()` compiles `ep._guards_code` into a guard function,
so the strings a file carries must never get there. Instead, every input
dimension whose size is an expression of symbols already bound to another
input becomes an equality guard ("2*L['x'].size()[0] == L['y'].size()[0]"),
printed by torch's own printer from the rebuilt sympy expressions, with every
symbol replaced by the input it comes from. Ranges are checked by torch
itself from `range_constraints`.
"""

from __future__ import annotations

import inspect

import torch
import torch.utils._pytree as pytree


def _input_paths(ep):
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


def derive_guards(ep) -> list[str]:
    paths = _input_paths(ep)
    if paths is None:
        return []
    user_inputs = set(ep.graph_signature.user_inputs)
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in user_inputs]
    if len(placeholders) != len(paths):
        return []
    if not any(isinstance(d, torch.SymInt) for node in placeholders for d in _dims(node.meta.get("val"))):
        return []  # a static program: no symbol to relate, and no reason to import sympy
    import sympy
    from torch.utils._sympy.printers import PythonPrinter

    sources: dict = {}
    pending = []

    def visit(v, src: str):
        if not isinstance(v, torch.SymInt):
            return
        e = v.node.expr
        if isinstance(e, sympy.Symbol) and e not in sources:
            sources[e] = sympy.Symbol(src)
        else:
            pending.append((e, src))

    for node, path in zip(placeholders, paths):
        src = "L" + pytree.keystr(path)
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            for i, d in enumerate(val.shape):
                visit(d, f"{src}.size()[{i}]")
        else:
            visit(val, src)
    printer = PythonPrinter()
    guards = []
    for e, src in pending:
        if not e.free_symbols or not all(s in sources for s in e.free_symbols):
            continue
        guards.append(printer.doprint(sympy.Eq(e.xreplace(sources), sympy.Symbol(src), evaluate=False)))
    return guards


def _dims(val):
    if isinstance(val, torch.Tensor):
        return val.shape
    return (val,)
