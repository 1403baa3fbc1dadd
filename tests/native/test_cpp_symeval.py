"""The C++ evaluator (pt2f-symeval) and pt2format._symeval on one corpus of torch sympy expressions, against torch's own values."""

from __future__ import annotations

import native_util_cpp as U
import pytest
import symexpr_reference_cpp as R

from pt2format._generated import model as m
from pt2format.exporter._symbols import SymbolTable


@pytest.fixture(scope="session")
def cpp():
    why = U.missing_toolchain()
    if why:
        pytest.skip(f"C++ toolchain missing: {why}")
    return U.build("release")


def _corpus_file(path, exprs):
    """One program per expression (its own pool, root last), so a limit error of one leaves the others."""
    programs = []
    for i, e in enumerate(exprs):
        table = SymbolTable(None)
        table.expr(e)
        programs.append(m.Program(name=f"e{i}", symbols=table.symbols, sym_exprs=table.exprs))
    U.write_tree(path, m.Package(format_version=m.FormatVersion(1, 0), programs=programs), [])


def _cpp_value(text):
    if text.startswith("error:"):
        return R.Err(text)
    v = R.parse_cpp_value(text)
    return float(v) if text in ("inf", "-inf", "nan") else v


def test_cpp_and_python_evaluators_match_torch(cpp, tmp_path):
    exprs, symbols, assignments = R.torch_corpus()
    path = tmp_path / "corpus.pt2f"
    _corpus_file(path, exprs)
    bad, numbers = [], 0
    for values in assignments:
        for i, e in enumerate(exprs):
            names = sorted(str(s) for s in e.free_symbols)
            args = [f"{k}={values[k]!r}" for k in names]
            r = U.run(cpp / "pt2f-symeval", path, f"e{i}", *args)
            err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode()
            if r.returncode == 1 and "LimitError" in err:
                got = R.Err("overflow" if "overflow" in err else err)
            else:
                assert r.returncode == 0, r.stderr
                got = _cpp_value(r.stdout.decode().splitlines()[-1].partition(" ")[2])
            want, py = R.torch_value(e, symbols, values), R.python_value(e, values)
            numbers += not isinstance(want, R.Err)
            if not R.same(py, want) or not R.same(got, want):
                bad.append(f"{e} at {values}: torch {want!r}, python {py!r}, C++ {got!r}")
    assert not bad, "\n".join(bad)
    assert numbers > len(exprs) * len(assignments) // 2


def _hostile(path, build):
    prog = m.Program(name="p", symbols=[m.Symbol(name="s0", kind=m.SymbolKind.INT, hint=1 << 40, has_hint=True)],
                     sym_exprs=[m.SymExpr(kind=m.SymExprKind.SYMBOL, symbol=0)])
    build(prog)
    U.write_tree(path, m.Package(format_version=m.FormatVersion(1, 0), programs=[prog]), [])


def _apply(prog, op, *args):
    prog.sym_exprs.append(m.SymExpr(kind=m.SymExprKind.APPLY, op=op, args=list(args)))
    return len(prog.sym_exprs) - 1


def _const(prog, v):
    prog.sym_exprs.append(m.SymExpr(kind=m.SymExprKind.INTEGER, int_value=v))
    return len(prog.sym_exprs) - 1


def test_cpp_structural_limits_are_limit_errors(cpp, tmp_path):
    """A squaring chain and a huge constant power break the degree limit before anything is evaluated."""
    def squarings(p):
        x = 0
        for _ in range(80):
            x = _apply(p, m.SymOp.MUL, x, x)

    def huge_power(p):
        _apply(p, m.SymOp.POW, 0, _const(p, (1 << 63) - 1))

    for build in (squarings, huge_power):
        _hostile(tmp_path / "h.pt2f", build)
        r = U.run(cpp / "pt2f-symeval", tmp_path / "h.pt2f", "p", "s0=3")
        err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode()
        assert r.returncode == 1 and "LimitError" in err and "degree" in err, err


def test_cpp_overflow_of_a_hint_is_a_limit_error(cpp, tmp_path):
    def big(p):
        _apply(p, m.SymOp.POW_BY_NATURAL, 0, _const(p, 50))
        _apply(p, m.SymOp.POW, _const(p, 2), _const(p, (1 << 63) - 1))
    _hostile(tmp_path / "h.pt2f", big)
    r = U.run(cpp / "pt2f-symeval", tmp_path / "h.pt2f", "p", f"s0={1 << 40}")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert "overflow" in lines[2] and "overflow" in lines[5], lines
