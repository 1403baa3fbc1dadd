"""Hostile symbolic pools end in a typed LimitError, fast, in load() and validate() (SPEC.md, "Bounds").

Each of these hung `pt2format.load` for more than 40 s before the bounded
evaluator: sympy evaluates constant powers eagerly with unbounded integers.
"""

from __future__ import annotations

import copy
import functools
import warnings
from unittest import mock

import pytest
import torch

import pt2format
from pt2format._api import write_package
from pt2format._generated import model as m
from pt2format.exporter import export_package

K, O = m.SymExprKind, m.SymOp


@functools.lru_cache(maxsize=None)
def _base():
    class Small(torch.nn.Module):
        def forward(self, x):
            return x * 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(Small(), (torch.randn(4, 3),),
                                 dynamic_shapes={"x": {0: torch.export.Dim("b", min=2, max=8)}})
    pkg, payloads = export_package(ep)
    return pkg, [bytes(p) for p in payloads]


def hostile_file(tmp_path, build):
    """The small dynamic program with nodes appended to its pool by `build(pool, symbol_node)`, the last one used."""
    pkg0, data = _base()
    pkg = copy.deepcopy(pkg0)
    prog = pkg.programs[0]
    sym_node = next(i for i, e in enumerate(prog.sym_exprs) if e.kind == K.SYMBOL)
    build(prog, sym_node)
    # Something must use the last node, or a lazy reader never builds it: a
    # range constraint (built at load) and the input's size (whose hint a
    # fake tensor needs).
    last = len(prog.sym_exprs) - 1
    prog.range_constraints.append(m.RangeConstraint(expr=last, range=m.ValueRange()))
    for tv in prog.graph.tensor_values:
        for size in tv.meta.sizes:
            if size.expr == sym_node:
                size.expr = last
    path = tmp_path / "hostile.pt2f"
    # The writer validates, and would refuse this pool: lay the file out without it.
    with mock.patch("pt2format._api.validate_package", lambda *a, **k: None):
        write_package(path, pkg, data, fsync=False)
    return path


def const(prog, v):
    prog.sym_exprs.append(m.SymExpr(kind=K.INTEGER, int_value=v))
    return len(prog.sym_exprs) - 1


def apply(prog, op, *args):
    prog.sym_exprs.append(m.SymExpr(kind=K.APPLY, op=op, args=list(args)))
    return len(prog.sym_exprs) - 1


def huge_exponent(prog, s):
    apply(prog, O.POW, const(prog, 2), const(prog, (1 << 63) - 1))


def chain_of_squarings(prog, s):
    x = const(prog, 3)
    for _ in range(80):
        x = apply(prog, O.POW, x, const(prog, 2))


def symbolic_chain_of_squarings(prog, s):
    prog.symbols.append(m.Symbol(name="u9", kind=m.SymbolKind.INT))  # unbacked: no value to overflow
    prog.sym_exprs.append(m.SymExpr(kind=K.SYMBOL, symbol=len(prog.symbols) - 1))
    x = len(prog.sym_exprs) - 1
    for _ in range(80):
        x = apply(prog, O.MUL, x, x)


def power_with_large_hint(prog, s):
    prog.symbols[0].hint = 1 << 40
    apply(prog, O.POW, s, const(prog, 10 ** 9))


def hint_overflow(prog, s):
    prog.symbols[0].hint = 1 << 40
    apply(prog, O.POW_BY_NATURAL, s, const(prog, 50))


def symbolic_huge_power(prog, s):
    apply(prog, O.POW, s, const(prog, 10 ** 18))


CASES = {"huge_exponent": (huge_exponent, "overflow"), "chain_of_squarings": (chain_of_squarings, "overflow"),
         "symbolic_chain_of_squarings": (symbolic_chain_of_squarings, "degree"),
         "power_with_large_hint": (power_with_large_hint, "degree"), "hint_overflow": (hint_overflow, "overflow"),
         "symbolic_huge_power": (symbolic_huge_power, "degree")}


@pytest.mark.parametrize("case", CASES)
def test_hostile_pool_is_a_limit_error_in_load(tmp_path, case):
    build, what = CASES[case]
    path = hostile_file(tmp_path, build)
    with pytest.raises(pt2format.LimitError, match=rf"sym_exprs\[\d+\].*{what}") as err:
        pt2format.load(path)
    assert "sym_exprs[" in err.value.path


@pytest.mark.parametrize("case", CASES)
def test_hostile_pool_is_a_limit_error_in_validate(tmp_path, case):
    build, what = CASES[case]
    with pytest.raises(pt2format.LimitError, match=what):
        pt2format.validate(hostile_file(tmp_path, build))


def test_evaluation_budget_is_a_limit_error(tmp_path, monkeypatch):
    import pt2format._symeval as S
    monkeypatch.setattr(S, "MAX_SYM_EVAL_STEPS", 50)
    monkeypatch.setattr(S.evaluate_pool, "__kwdefaults__", {**S.evaluate_pool.__kwdefaults__, "max_steps": 50})

    def wide(prog, s):
        for _ in range(30):
            apply(prog, O.ADD, s, s)
    with pytest.raises(pt2format.LimitError, match="budget"):
        pt2format.validate(hostile_file(tmp_path, wide))
