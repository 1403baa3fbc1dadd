"""Derive other valid inputs and guard-rejected invalid inputs for a program from its own shapes and ranges.

A case lists some extra and invalid inputs by hand; this module adds more so
that every program is checked beyond its example input on at least two
other valid inputs: for a dynamic program, other assignments of its symbols
inside their ranges (other sizes for the dynamic dims, derived dims computed
from their expressions), and one outside a range or with a wrong static
size, which a guard must reject. A static program gets two draws of fresh
values of the example's shapes and a wrong static size. Every candidate is run through the original program:
only what torch itself accepts becomes an extra input, and only what one of
torch's guards rejects becomes an invalid one. Producer side only (it reads
torch's in-memory symbolic expressions; nothing here parses text).
"""

from __future__ import annotations

import traceback

import torch
import torch.utils._pytree as pytree

#: Candidates larger than this are not tried (memory on shared machines).
MAX_NUMEL = 1 << 22
#: The largest size tried for a dim without an upper bound.
OPEN_UPPER = 64


def guard_kind(e: BaseException) -> str | None:
    """How the program rejected an input: "guard" (the input guards run before the graph),
    "runtime assertion" (a torch._check turned into an assert node in the graph), or None
    when the failure came from somewhere else (say, an operator on a wrong-shaped tensor)."""
    text = str(e)
    if "Runtime assertion failed" in text:
        return "runtime assertion"
    if text.startswith("Guard failed") or "Expected input at" in text:
        return "guard"
    if text.startswith("Trying to flatten user inputs with exported input tree spec"):
        return "input structure"
    names = {f.name for f in traceback.extract_tb(e.__traceback__)}
    if names & {"_check_input_constraints_for_graph", "_check_input_constraints_pre_hook", "_check_inputs"}:
        return "guard"
    return None


def error_text(e: BaseException) -> str:
    """An exception as compared across processes: its type and its message's first 300 characters."""
    return f"{type(e).__name__}: {str(e).strip()[:300]}"


def _user_vals(ep) -> list:
    specs = ep.graph_signature.input_specs
    by_name = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [by_name[s.arg.name].meta.get("val") for s in specs
            if s.kind.name == "USER_INPUT" and getattr(s.arg, "name", None) in by_name]


def _bound(x) -> int | None:
    """A range bound as an int; None for an infinite one (sympy's oo, torch's int_oo)."""
    try:
        v = int(x)
    except (TypeError, ValueError, AttributeError, OverflowError):
        return None
    return v if abs(v) < 1 << 62 else None


def _symbols(ep, vals, leaves) -> tuple[dict, dict]:
    """{symbol: example value} for symbols that are a whole dim somewhere, and {symbol: (lo, hi)}."""
    values, ranges = {}, {}
    for sym, vr in ep.range_constraints.items():
        lo = _bound(vr.lower)
        ranges[sym] = (lo if lo is not None else 0, _bound(vr.upper))
    for val, leaf in zip(vals, leaves):
        if not isinstance(val, torch.Tensor) or not isinstance(leaf, torch.Tensor):
            continue
        for d, size in zip(val.shape, leaf.shape):
            if isinstance(d, torch.SymInt) and d.node.expr.is_Symbol:
                values[d.node.expr] = int(size)
    return values, ranges


def _new_tensor(like: torch.Tensor, shape, gen: torch.Generator) -> torch.Tensor | None:
    dt = like.dtype
    if dt.is_floating_point or dt.is_complex:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(dt) if not dt.is_complex else \
            torch.randn(shape, generator=gen, dtype=dt)
    if dt == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dt in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        lo, hi = (int(like.min()), int(like.max())) if like.numel() else (0, 1)
        return torch.randint(lo, hi + 1, shape, generator=gen, dtype=dt)
    return None


def _build(leaves, vals, spec, assign: dict | None, gen, wrong_static: bool = False):
    """New (args, kwargs): tensor leaves re-made with sizes from `assign` (symbol -> value);
    `wrong_static` makes the first static dim of the first tensor one larger. None if impossible."""
    out, numel, changed = [], 0, False
    for val, leaf in zip(vals, leaves):
        if not isinstance(leaf, torch.Tensor) or not isinstance(val, torch.Tensor):
            out.append(leaf)
            continue
        shape = []
        for d, size in zip(val.shape, leaf.shape):
            if isinstance(d, torch.SymInt):
                if assign is None:
                    shape.append(int(size))
                    continue
                expr = d.node.expr
                if not expr.free_symbols <= set(assign):
                    return None
                shape.append(int(expr.xreplace({s: assign[s] for s in expr.free_symbols})))
            elif wrong_static and not changed:
                shape.append(int(size) + 1)
                changed = True
            else:
                shape.append(int(size))
        if any(s < 0 for s in shape):
            return None
        t = _new_tensor(leaf, shape, gen)
        if t is None:
            return None
        numel += t.numel()
        out.append(t)
    if numel > MAX_NUMEL or (wrong_static and not changed):
        return None
    args, kwargs = pytree.tree_unflatten(out, spec)
    return tuple(args), dict(kwargs)


def _valid_assignments(values: dict, ranges: dict) -> list[dict]:
    """Assignments other than the example's, each symbol inside its range, in the order they are
    tried: one step up, the far end, one step down, the low end, then every symbol moved alone
    (a guard tying two symbols, say s0 == 2 * s1, refuses the moves that break it; torch decides
    which are valid, so enough candidates are offered for two of them to survive)."""
    def window(sym, v):
        lo, hi = ranges.get(sym, (2, None))
        lo = max(lo, 2)
        top = min(hi if hi is not None else OPEN_UPPER, max(v * 2 + 1, lo))
        return lo, max(top, lo)

    def pick(how, sym, v):
        lo, top = window(sym, v)
        cand = {"up": v + 1, "far": top, "down": v - 1, "low": lo, "double": 2 * v, "half": v // 2}[how]
        return cand if lo <= cand <= top else v

    out = []
    for how in ("up", "far", "down", "low", "double", "half"):
        a = {sym: pick(how, sym, v) for sym, v in values.items()}
        if a != values and a not in out:
            out.append(a)
    for sym, v in values.items():  # one symbol at a time: the others keep the example's values
        for how in ("up", "down", "far", "low", "double", "half"):
            a = {**values, sym: pick(how, sym, v)}
            if a != values and a not in out:
                out.append(a)
    return out


def dynamic_dims(ep) -> int:
    """How many distinct symbols the program's user inputs have as whole dims (0 for a static
    program; unbacked symbols from data-dependent ops are not input dims)."""
    syms = set()
    for val in _user_vals(ep):
        if isinstance(val, torch.Tensor):
            for d in val.shape:
                if isinstance(d, torch.SymInt):
                    syms |= set(d.node.expr.free_symbols)
    return len(syms)


def _invalid_assignments(values: dict, ranges: dict) -> list[dict]:
    out = []
    for sym, v in values.items():
        lo, hi = ranges.get(sym, (0, None))
        if hi is not None and hi + 1 <= 4096:
            out.append({**values, sym: hi + 1})
        if lo >= 2:
            out.append({**values, sym: lo - 1})
    return out


def _copy(c):
    """Runs may mutate their inputs; the candidate itself must stay as made."""
    return pytree.tree_map_only(torch.Tensor, torch.clone, c)


def derive(ep, args, kwargs, run, *, want_extra: int, want_invalid: int, seed: int = 0):
    """(extra inputs, invalid inputs, notes). `run(args, kwargs)` calls the original from its
    initial state and returns or raises; candidates it rejects (extra) or accepts (invalid) are dropped."""
    notes = []
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    vals = _user_vals(ep)
    if len(vals) != len(leaves):
        return [], [], [f"inputs not derived: {len(leaves)} input leaves but {len(vals)} user inputs"]
    gen = torch.Generator().manual_seed(1234 + seed)
    values, ranges = _symbols(ep, vals, leaves)
    extra, invalid = [], []
    if want_extra > 0:
        # Dynamic: other sizes inside the ranges; static (or data-dependent only): fresh values of
        # the example's shapes, one draw per input wanted. Built lazily: only until enough survive.
        cands = (_build(leaves, vals, spec, a, gen) for a in _valid_assignments(values, ranges)) if values \
            else (_build(leaves, vals, spec, None, gen) for _ in range(want_extra))
        for c in cands:
            if len(extra) >= want_extra:
                break
            if c is None:
                continue
            try:
                run(*_copy(c))
            except Exception as e:  # noqa: BLE001 - torch refuses it: not a valid input
                notes.append(f"a derived input was rejected by the original ({error_text(e)[:120]})")
                continue
            extra.append(c)
    if want_invalid > 0:
        cands = [_build(leaves, vals, spec, a, gen) for a in _invalid_assignments(values, ranges)]
        cands.append(_build(leaves, vals, spec, None, gen, wrong_static=True))
        for c in cands:
            if c is None or len(invalid) >= want_invalid:
                continue
            try:
                run(*_copy(c))
            except Exception as e:  # noqa: BLE001 - the expected outcome, if a guard raised it
                if guard_kind(e):
                    invalid.append(c)
                continue
    return extra, invalid, notes
