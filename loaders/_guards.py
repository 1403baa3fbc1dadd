"""Input guards for a rebuilt program, printed from structured expressions (never from file text).

`ExportedProgram.module()` compiles `ep._guards_code` into a guard function,
so the strings a file carries (`Program.guards_code`) must never get there.
Instead the guards are printed by torch's own printer from rebuilt sympy
expressions, with every symbol replaced by the input it is read from:

* a file of format 1.1 or later carries torch's own guards
  (`Program.input_guards`, with `guard_sources` naming what each symbol
  reads): divisibility, derived dimensions, relations between inputs, ...;
* a file of 1.0 does not: every input dimension whose size is an expression
  of symbols already bound to another input becomes an equality guard
  ("2*L['x'].size()[0] == L['y'].size()[0]"), what torch's tracer adds for
  derived dims (`derive_guards`).

Ranges and equalities between inputs are derived by torch itself from
`range_constraints` and the placeholders, as for any program.
"""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree

from pt2format._generated.model import GuardSourceKind
from pt2format.errors import LoadError
from pt2format.vocab.inputs import input_paths, user_input_placeholders



def has_stored_guards(package) -> bool:
    """Whether the file's programs carry torch's own input guards (`Program.input_guards`, format 1.1)."""
    fv = package.format_version
    return fv is not None and (fv.major, fv.minor) >= (1, 1)


def guard_sources(program, ndims: list) -> dict[int, tuple]:
    """Program.guard_sources checked against the user inputs: symbol index -> (input, GuardSourceKind, dim).

    `ndims[i]` is the number of dimensions of user input i, None when it is
    not a tensor. Every symbol of `input_guards` must have a source.
    """
    out: dict[int, tuple] = {}
    # The schema's indices (input_guards into sym_exprs, GuardSource.symbol into symbols) are the
    # validator's to check (ValidationError, every reader alike); what depends on the rebuilt inputs is here.
    for i, s in enumerate(program.guard_sources or ()):
        p = f"guard_sources[{i}]"
        if s.symbol in out:
            raise LoadError("symbol has two sources", path=p + ".symbol", got=s.symbol)
        if not 0 <= s.input < len(ndims):
            raise LoadError("user input index out of range", path=p + ".input", expected=f"< {len(ndims)}",
                            got=s.input)
        ndim = ndims[s.input]
        if s.kind == GuardSourceKind.VALUE:
            if ndim is not None:
                raise LoadError("a VALUE source names a tensor input", path=p + ".kind", got="VALUE")
        elif s.kind in (GuardSourceKind.SIZE, GuardSourceKind.STRIDE, GuardSourceKind.STORAGE_OFFSET):
            if ndim is None:
                raise LoadError("a tensor property of an input that is not a tensor", path=p + ".kind", got=s.kind)
            if s.kind != GuardSourceKind.STORAGE_OFFSET and not 0 <= s.dim < ndim:
                raise LoadError("dimension out of range", path=p + ".dim", expected=f"< {ndim}", got=s.dim)
        else:
            raise LoadError("unknown guard source kind", path=p + ".kind", got=s.kind)
        out[s.symbol] = (s.input, GuardSourceKind(s.kind), s.dim)
    return out


_SUFFIX = {GuardSourceKind.VALUE: "", GuardSourceKind.SIZE: ".size()[{}]", GuardSourceKind.STRIDE: ".stride()[{}]",
           GuardSourceKind.STORAGE_OFFSET: ".storage_offset()"}


def stored_guards(ep, program, shape) -> list[str]:
    """ep._guards_code from Program.input_guards, printed from the pool with SPEC §11's meaning (_guard_text).

    Also sets `ep._pt2format_input_guards` (sympy guards, symbol -> source), which
    the exporter writes back when the program is saved again.
    """
    placeholders = user_input_placeholders(ep)
    ndims = [v.dim() if isinstance(v, torch.Tensor) else None for v in (n.meta.get("val") for n in placeholders)]
    srcs = guard_sources(program, ndims)
    if not program.input_guards:
        ep._pt2format_input_guards = ([], {})
        return []
    exprs = [shape.expr(g, f"input_guards[{i}]") for i, g in enumerate(program.input_guards)]
    sources = {shape.symbols[s]: src for s, src in srcs.items()}
    for i, e in enumerate(exprs):
        missing = sorted(s.name for s in e.free_symbols if s not in sources)
        if missing:
            raise LoadError("input guard reads a symbol without a source", path=f"input_guards[{i}]",
                            expected="a symbol of guard_sources", got=missing[0])
    ep._pt2format_input_guards = (exprs, sources)
    _forget_guard_only_symbols(shape, ep, sources)
    paths = input_paths(ep)
    if paths is None:
        return []  # without example inputs torch's module() compiles no guard function
    if len(paths) != len(placeholders):  # never dropped: the module would accept what the file rejects
        raise LoadError("the program's input guards cannot be mapped to its example inputs", path="example_inputs",
                        expected=f"{len(placeholders)} flat user inputs", got=len(paths))
    from ._guard_text import guard_lines

    names, bounds = {}, {}
    for sym, (idx, kind, dim) in srcs.items():
        if kind in (GuardSourceKind.SIZE, GuardSourceKind.STORAGE_OFFSET):
            bounds[sym] = (0, (1 << 63) - 1)  # what a tensor can have: the checks are for Python ints
        text = "L" + pytree.keystr(paths[idx]) + _SUFFIX[kind].format(dim)
        if any(c in text for c in "\"\\\n\r") or not text.isprintable():
            # torch pastes the path into a double-quoted message of generated code
            raise LoadError("an input path cannot be printed into a guard", path="example_inputs", got=text)
        names[sym] = text
    return guard_lines(program.sym_exprs, program.symbols, names, list(program.input_guards), bounds)


def _forget_guard_only_symbols(shape, ep, sources) -> None:
    """Keep symbols that only guards read out of the shape environment's ranges.

    torch replaced them (`s17` -> `2*s77` for `w = 2*d`); the loaded environment has no
    replacement to show, and `run_decompositions()` would otherwise list them as new range
    constraints. Guards are printed and evaluated from the expressions, not from the environment;
    their ranges and hints stay on the program for a re-save.
    """
    used = set()
    for k in ep.range_constraints:
        used |= getattr(k, "free_symbols", set())
    env = shape.shape_env
    kept = {}
    for sym in sources:
        if sym not in used:
            env.var_to_range_sloc.pop(sym, None)
            kept[sym] = (env.var_to_range.pop(sym, None), env.backed_var_to_val.pop(sym, None))
    ep._pt2format_guard_only_symbols = kept  # written back by the exporter on a re-save


def derive_guards(ep) -> list[str]:
    paths = input_paths(ep)
    if paths is None:
        return []
    placeholders = user_input_placeholders(ep)
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
