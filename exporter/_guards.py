"""ExportedProgram._guards_code -> Program.input_guards and Program.guard_sources, as structured expressions.

torch keeps the guards of an exported program as Python text
(`ep._guards_code`, printed from its ShapeEnv's guards with each symbol
replaced by its source, `L['x'].size()[0]`), and `ep.module()` compiles that
text into the guard function it calls before the graph. A file cannot carry
code, so each guard is stored as the sympy expression it was printed from (a
`sym_exprs` entry) and each of its symbols as the user input and property it
reads (a `GuardSource`). A guard is matched to its text by printing the
ShapeEnv's guards with torch's own printer: the file holds exactly the
guards torch enforces, in torch's order, never more.

A program rebuilt by pt2format carries its guards as `_pt2format_input_guards`
(see loaders/_guards.py), so saving it again writes them back unchanged.
"""

from __future__ import annotations

import re
import warnings

import torch
import torch.utils._pytree as pytree

from pt2format._generated.model import GuardSource, GuardSourceKind
from pt2format.errors import ExportError

from pt2format.vocab.enums import ints as _ints
from pt2format.vocab.inputs import input_paths, user_input_placeholders

GuardSourceKind = _ints(GuardSourceKind)


def _source_names(placeholders, paths) -> dict[str, tuple[int, int, int]]:
    """Every text torch may print for an input property -> (input, GuardSourceKind, dim).

    torch rewrites `L['flat_args'][i]` (the non-strict tracer's sources) and
    `L['args'][n]` (a `*args` parameter, named `args_n` in the module) to the
    input's path before compiling (`_force_ep_signature_match`,
    `_force_gm_signature_match`); both spellings name the same input.
    """
    out = {}
    for idx, (node, path) in enumerate(zip(placeholders, paths)):
        bases = ["L" + pytree.keystr(path), f"L['flat_args'][{idx}]"]
        key = getattr(path[0], "key", None) if path else None
        m = re.fullmatch(r"(.+)_([0-9]+)", key) if isinstance(key, str) else None
        if m:
            bases.append(f"L[{m.group(1)!r}][{m.group(2)}]" + pytree.keystr(path[1:]))
        val = node.meta.get("val")
        for base in bases:
            if isinstance(val, torch.Tensor):
                for d in range(val.dim()):
                    out.setdefault(f"{base}.size()[{d}]", (idx, GuardSourceKind.SIZE, d))
                    out.setdefault(f"{base}.stride()[{d}]", (idx, GuardSourceKind.STRIDE, d))
                out.setdefault(f"{base}.storage_offset()", (idx, GuardSourceKind.STORAGE_OFFSET, 0))
            else:
                out.setdefault(base, (idx, GuardSourceKind.VALUE, 0))
    return out


def _from_shape_env(ep, shape_env, placeholders, paths):
    """(guard expressions, {symbol: source}) for the guards of `ep._guards_code`, in its order."""
    texts = list(getattr(ep, "_guards_code", None) or ())
    if not texts or paths is None:  # without example inputs, ep.module() compiles no guard function
        return [], {}
    if shape_env is None or not shape_env.var_to_sources:
        # no shape environment, or one that knows no input (a program torch's own loader rebuilt, whose guards
        # are text only): refusing it would refuse what torch writes; the guards are named, not silently lost
        warnings.warn(f"pt2format: {len(texts)} input guard(s) of the program have no symbolic form "
                      "(no shape environment over its inputs) and are not saved", stacklevel=5)
        return [], {}
    from torch.fx.experimental.symbolic_shapes import ShapeGuardPythonPrinter

    printer = ShapeGuardPythonPrinter(shape_env.var_to_sources, lambda s: s.name, shape_env.var_to_sources)
    printed: dict[str, object] = {}
    for g in shape_env.guards:
        try:
            printed.setdefault(printer.doprint(g.expr), g.expr)
        except Exception:  # a guard on a symbol without a source: never part of _guards_code
            continue
    names = _source_names(placeholders, paths)
    exprs, sources, missing = [], {}, []
    for text in texts:
        e = printed.get(text)
        srcs = {}
        if e is not None:
            for s in e.free_symbols:
                found = shape_env.var_to_sources.get(s)
                src = names.get(found[0].name) if found else None
                if src is None:
                    e = None
                    break
                srcs[s] = src
        if e is None:
            missing.append(text)
            continue
        exprs.append(e)
        sources.update(srcs)
    if missing:  # never dropped: the loaded program would accept what torch's rejects
        raise ExportError("an input guard of the program has no symbolic form over its inputs",
                          path="_guards_code", expected="a guard of the shape environment over the user inputs",
                          got=missing[0])
    return exprs, sources


def input_guards(ep, symbols, shape_env) -> tuple[list[int], list[GuardSource]]:
    """(Program.input_guards, Program.guard_sources) of `ep`, adding their expressions to `symbols`' pool."""
    saved = getattr(ep, "_pt2format_input_guards", None)
    if saved is not None:  # rebuilt by pt2format: its guards as loaded
        exprs, sources = saved
    else:
        placeholders = user_input_placeholders(ep)
        paths = input_paths(ep)
        if paths is not None and len(paths) != len(placeholders) and getattr(ep, "_guards_code", None):
            raise ExportError("the program's user inputs do not match its example inputs, so its input guards "
                              "cannot be mapped to them", path="example_inputs",
                              expected=f"{len(placeholders)} flat user inputs", got=len(paths))
        exprs, sources = _from_shape_env(ep, shape_env, placeholders, paths)
    guards = [symbols.expr(e) for e in exprs]
    rows = {}
    for s, (idx, kind, dim) in sources.items():
        i = symbols.symbol(s)
        rows[i] = GuardSource(symbol=i, input=idx, kind=int(kind), dim=dim)
    return guards, [rows[i] for i in sorted(rows)]
