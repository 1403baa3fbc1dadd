"""Every guard torch's `ep.module()` enforces, enforced the same by `load(...).module()` and `load_module`.

A property test that does not know the answer: for every program with
dynamic shapes (the conformance corpus plus a few programs here, one per kind
of guard: divisibility, derived dims, relations between dims, int inputs,
ranges, equalities), input shapes are drawn at random, valid and invalid
alike: sizes from the symbols' ranges and one past them, sizes that keep the
dims' relations and sizes that break one (an odd size for an even dim, a dim
one off its partner, a static dim changed), and sizes drawn with no relation
at all. Each drawn input goes through torch's original `ep.module()`, the
module of the loaded program and `load_module`'s; the verdict (accepted or
raised) and, when accepted, the outputs bit for bit must be the same. The
reference is torch's run in this process, never ours.

The default run draws DRAWS inputs per program over the fast corpus cases
and the programs here; `--corpus` (marker `corpus`) draws CORPUS_DRAWS over
every corpus program with dynamic shapes.
"""

from __future__ import annotations

import importlib
import random
import warnings
import zlib

import pytest
import torch
import torch.utils._pytree as pytree
from torch.export import Dim

import pt2format
from conformance import _behave as behave
from conformance import corpus
from conformance._tensorio import tensor_bytes
from conformance.runner import not_exportable

DRAWS = 40
CORPUS_DRAWS = 400
MAX_NUMEL = 1 << 18
#: Totals over the run, printed at the end of each test (-s shows them).
TOTAL = {"drawn": 0, "accepted": 0, "rejected": 0}


# -- programs with one kind of guard each ------------------------------------------------------------------------
class Divisible(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1, 4) * 2


class Related(torch.nn.Module):
    def forward(self, x, y):
        if x.shape[0] > y.shape[0]:
            return x[: y.shape[0]] + y
        return x.sum() + y


class IntInput(torch.nn.Module):
    def forward(self, x, n: int):
        return x[:n] * n, x.reshape(2, -1)


class Derived2D(torch.nn.Module):
    def forward(self, x, y, z):
        return x.reshape(2, -1, x.shape[1]).sum(0) + y[1:], z @ x.T


class MixedInputs(torch.nn.Module):
    """Constant ints, floats, bools, None and strings among tensors: positional, keyword-only and nested."""

    def forward(self, x, pair, n, *, scale, flag, tag, opt, nest):
        y, k = pair
        out = x[: y.shape[0]] * n * scale * k
        if flag and tag == "add" and opt is None:
            out = out + 1
        return out + nest["z"].sum() + nest["m"]


class ConstantFirst(torch.nn.Module):
    """The issue's program (#40 §3): a constant int input after two tensors."""

    def forward(self, x, y, n):
        return x[: y.shape[0]] * n


def _local_programs():
    d, e = Dim("d", min=2, max=24), Dim("e", min=3, max=9)
    return {
        "local.divisible": corpus.Program(Divisible(), (torch.randn(12),), dynamic_shapes=({0: Dim.DYNAMIC},)),
        "local.related": corpus.Program(Related(), (torch.randn(6, 2), torch.randn(4, 2)),
                                        dynamic_shapes=({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})),
        "local.int_input": corpus.Program(IntInput(), (torch.randn(8, 3), 4),
                                          dynamic_shapes=({0: 2 * Dim("h", min=2, max=32)}, Dim.DYNAMIC)),
        "local.constant_input": corpus.Program(ConstantFirst(), (torch.randn(8, 4), torch.randn(4, 4), 3),
                                               dynamic_shapes={"x": {0: 2 * Dim("b", min=4, max=100)},
                                                               "y": {0: Dim("b", min=4, max=100)}, "n": None}),
        "local.mixed_inputs": corpus.Program(
            MixedInputs(), (torch.randn(8, 3), (torch.randn(4, 3), 2.5), 3),
            dict(scale=0.5, flag=True, tag="add", opt=None, nest={"z": torch.randn(4), "m": 7}),
            dynamic_shapes={"x": {0: 2 * Dim("m", min=2, max=50)}, "pair": ({0: Dim("m", min=2, max=50)}, None),
                            "n": None, "scale": None, "flag": None, "tag": None, "opt": None,
                            "nest": {"z": {0: Dim("m", min=2, max=50)}, "m": None}}),
        "local.derived_2d": corpus.Program(Derived2D(), (torch.randn(8, 5), torch.randn(5, 5), torch.randn(3, 5)),
                                           dynamic_shapes=({0: 2 * d, 1: e}, {0: d + 1, 1: e}, {1: e})),
    }


# -- drawing inputs ------------------------------------------------------------------------------------------------
def _user_vals(ep) -> list:
    by_name = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [by_name[s.arg.name].meta.get("val") for s in ep.graph_signature.input_specs
            if s.kind.name == "USER_INPUT" and getattr(s.arg, "name", None) in by_name]


def _is_dynamic(ep) -> bool:
    """Dynamic input shapes, or unbacked values (from `.item()` and the like) checked in the graph."""
    if any(str(s).startswith("u") for k in ep.range_constraints for s in k.free_symbols):
        return True
    for v in _user_vals(ep):
        dims = v.shape if isinstance(v, torch.Tensor) else (v,)
        if any(isinstance(d, torch.SymInt) for d in dims):
            return True
    return False


def _bound(x):
    try:
        v = int(x)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return v if abs(v) < 1 << 20 else None


def _candidates(rng, hint: int, lo, hi) -> list[int]:
    """Sizes worth trying for one symbol: its example, its bounds and one past them, odd and even, random."""
    c = [hint, hint, hint + 1, hint - 1, hint + 2, 2 * hint, 3 * hint, hint // 2, 0, 1, 2, 3, 9, rng.randint(0, 2 * hint + 5)]
    for b in (lo, hi):
        if b is not None:
            c += [b - 1, b, b + 1]
    return [v for v in c if 0 <= v <= 4096]


def _draw(ep, args, kwargs, rng: random.Random, gen: torch.Generator):
    """One (args, kwargs): tensor and int leaves remade with drawn sizes (see the module docstring)."""
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    vals = _user_vals(ep)
    if len(vals) != len(leaves):
        return None
    ranges = {s: (_bound(vr.lower), _bound(vr.upper)) for s, vr in ep.range_constraints.items()}
    hints = {}
    for val, leaf in zip(vals, leaves):
        pairs = zip(val.shape, leaf.shape) if isinstance(val, torch.Tensor) and isinstance(leaf, torch.Tensor) \
            else [(val, leaf)] if isinstance(val, torch.SymInt) else []
        for d, size in pairs:
            if isinstance(d, torch.SymInt):
                for s in d.node.expr.free_symbols:
                    hints.setdefault(s, int(size) if d.node.expr == s else 4)
    assign = {s: rng.choice(_candidates(rng, h, *ranges.get(s, (None, None)))) for s, h in hints.items()}
    mode = rng.choice(["consistent", "consistent", "perturb", "static", "free"])
    sizes = []  # per leaf: list of sizes (tensor), [value] (int), None (kept)
    for val, leaf in zip(vals, leaves):
        if isinstance(val, torch.Tensor) and isinstance(leaf, torch.Tensor):
            sizes.append([int(d.node.expr.xreplace(assign)) if isinstance(d, torch.SymInt) else int(d)
                          for d in val.shape])
        elif isinstance(val, torch.SymInt) and isinstance(leaf, int):
            sizes.append([int(val.node.expr.xreplace(assign))])
        else:
            sizes.append(None)
    slots = [(i, j) for i, s in enumerate(sizes) if s is not None for j in range(len(s))]
    dynamic = [(i, j) for i, j in slots
               if isinstance(vals[i].shape[j] if isinstance(vals[i], torch.Tensor) else vals[i], torch.SymInt)]
    static = [x for x in slots if x not in dynamic]
    if mode == "perturb" and dynamic:
        i, j = rng.choice(dynamic)
        sizes[i][j] = max(0, sizes[i][j] + rng.choice([-1, 1, 2, sizes[i][j]]))
    elif mode == "static" and static:
        i, j = rng.choice(static)
        sizes[i][j] += rng.choice([-1, 1])
    elif mode == "free":
        for i, j in dynamic:
            sizes[i][j] = rng.randint(0, 2 * max(2, sizes[i][j]) + 3)
    out, numel = [], 0
    for val, leaf, s in zip(vals, leaves, sizes):
        if s is None:
            out.append(leaf)
        elif isinstance(leaf, int):
            out.append(s[0])
        elif any(v < 0 for v in s):
            return None
        elif list(s) == list(leaf.shape):
            t = leaf.clone()
            if t.numel() <= 4 and not t.dtype.is_floating_point and t.dtype != torch.bool and rng.random() < 0.5:
                # a small int tensor is often read with .item(): draw its values (guards on unbacked values)
                hi = int(t.abs().max()) if t.numel() else 1
                t = torch.tensor([rng.randint(-2, 2 * hi + 3) for _ in range(t.numel())], dtype=t.dtype).reshape(
                    t.shape)
            out.append(t)
        else:
            t = _new_tensor(leaf, s, gen)
            if t is None:
                return None
            numel += t.numel()
            out.append(t)
    if numel > MAX_NUMEL:
        return None
    a, k = pytree.tree_unflatten(out, spec)
    return tuple(a), dict(k)


def _new_tensor(like, shape, gen):
    dt = like.dtype
    if dt.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(dt)
    if dt == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dt in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        lo, hi = (int(like.min()), int(like.max())) if like.numel() else (0, 1)
        return torch.randint(lo, hi + 1, shape, generator=gen, dtype=dt)
    return None


# -- running and comparing -----------------------------------------------------------------------------------------
def _run(fn, args, kwargs):
    a, k = pytree.tree_map_only(torch.Tensor, torch.clone, (args, kwargs))
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return True, fn(*a, **k)
    except Exception as e:  # noqa: BLE001 - a rejection, whatever its type
        return False, e


def _same(a, b, deterministic: bool) -> str | None:
    la, sa = pytree.tree_flatten(a)
    lb, sb = pytree.tree_flatten(b)
    if str(sa) != str(sb):
        return f"tree {sa} vs {sb}"
    for i, (x, y) in enumerate(zip(la, lb)):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return f"leaf {i}: {type(x).__name__} vs {type(y).__name__}"
        if isinstance(x, torch.Tensor):
            if x.dtype != y.dtype or x.shape != y.shape:
                return f"leaf {i}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
            if deterministic and tensor_bytes(x) != tensor_bytes(y):
                return f"leaf {i}: values differ"
        elif x != y and not (x != x and y != y):
            return f"leaf {i}: {x!r} vs {y!r}"
    return None


def _mutates_state(ep) -> bool:
    return any(s.kind.name in ("BUFFER_MUTATION", "PARAMETER_MUTATION") for s in ep.graph_signature.output_specs)


def check_program(ep, spec, path, pname, draws: int, seed: int, deterministic: bool = True):
    """Draw `draws` inputs; assert torch's and both loaded modules' verdicts and outputs agree. -> counts."""
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    snap = behave.snapshot(ep)
    reference = ep.module()
    stateful = _mutates_state(ep)

    def fresh():
        return (pt2format.load(path, program=pname).module(),
                pt2format.load_module(path, program=pname))

    loaded, fast = fresh()
    counts = {"drawn": 0, "accepted": 0, "rejected": 0}
    tries = 0
    while counts["drawn"] < draws and tries < 20 * draws:
        tries += 1
        inputs = _draw(ep, spec.args, spec.kwargs, rng, gen)
        if inputs is None:
            continue
        if stateful:
            behave.restore(ep, snap)
            loaded, fast = fresh()
        want_ok, want = _run(reference, *inputs)
        for what, mod in (("load(...).module()", loaded), ("load_module", fast)):
            ok, got = _run(mod, *inputs)
            shapes = pytree.tree_map_only(torch.Tensor, lambda t: tuple(t.shape), inputs)
            assert ok == want_ok, (f"{what} {'accepts' if ok else 'rejects'} inputs of shapes {shapes} that "
                                   f"torch {'accepts' if want_ok else 'rejects'}: "
                                   f"{got if not ok else want!r}")
            if ok:
                diff = _same(want, got, deterministic)
                assert diff is None, f"{what} on inputs of shapes {shapes}: {diff}"
        counts["drawn"] += 1
        counts["accepted" if want_ok else "rejected"] += 1
    assert counts["drawn"] == draws, f"only {counts['drawn']} of {draws} inputs could be drawn"
    return counts


def _report(name, counts):
    for k, v in counts.items():
        TOTAL[k] += v
    print(f"\n{name}: drawn {counts['drawn']}, accepted {counts['accepted']}, rejected {counts['rejected']}; "
          f"total so far {TOTAL}")


# -- tests -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(_local_programs()))
def test_guard_verdicts_local(name, tmp_path):
    spec = _local_programs()[name]
    ep = spec.export()
    path = tmp_path / "p.pt2f"
    pt2format.save(ep, path, progress=False)
    counts = check_program(ep, spec, path, None, DRAWS, seed=zlib.crc32(name.encode()))
    assert counts["accepted"] and counts["rejected"], counts  # the draw reaches both verdicts
    _report(name, counts)


def _corpus_params():
    for c in corpus.all_cases().values():
        marks = [] if c.fast else [pytest.mark.corpus]
        if c.slow:
            marks.append(pytest.mark.timeout(3600))
        yield pytest.param(c.name, marks=marks, id=c.name)


@pytest.mark.parametrize("name", list(_corpus_params()))
def test_guard_verdicts_corpus(name, request, tmp_path):
    case = corpus.get_case(name)
    for mod in case.child_imports:
        importlib.import_module(mod)
    try:
        built = case.build()
        specs = built if isinstance(built, dict) else {"forward": built}
        eps = {p: s.export() for p, s in specs.items()}
    except Exception:  # noqa: BLE001
        if name in not_exportable():
            pytest.skip(f"torch cannot export {name}")
        raise
    dynamic = {p: ep for p, ep in eps.items() if _is_dynamic(ep)}
    if not dynamic:
        pytest.skip("no dynamic shapes")  # not a pass: the case has nothing to draw
    multi = isinstance(built, dict)
    path = tmp_path / "case.pt2f"
    pt2format.save(eps if multi else eps["forward"], path, progress=False)
    # The two largest models (a call takes about 0.3 s) get the default draws even under --corpus, to keep
    # CI within its budget; every other dynamic program gets CORPUS_DRAWS.
    draws = CORPUS_DRAWS if request.config.getoption("--corpus") and not case.slow else DRAWS
    for p, ep in dynamic.items():
        counts = check_program(ep, specs[p], path, p if multi else None, draws, seed=zlib.crc32(name.encode()),
                               deterministic=case.deterministic)
        _report(f"{name}/{p}", counts)
