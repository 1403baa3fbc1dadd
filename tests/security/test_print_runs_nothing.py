"""Printing a loaded program runs nothing from the file (issue 21).

`print(ep)` and `print_readable()` generate Python source from the graph, its
names and its metadata (stack-trace summaries, `custom` annotations); that
text must only ever be printed. Here the free text of every node (stack
trace, `custom` values, `extra` entries) holds the injection test's code
payloads, and the printers run with exec, eval and compile (and torch's own
source-compiling helpers) replaced by a recorder: none may be called, and no
payload may create its marker. The payloads do reach the printed text (else
the test would prove nothing).
"""

from __future__ import annotations

import builtins
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    import torch

    from pt2f_injection_payloads import string_payloads
    from pt2format._api import write_package
    from pt2format._generated import model as m
    from pt2format.exporter import export_package

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.relu(self.lin(x)) + 1

    d = tmp_path_factory.mktemp("print")
    marker = d / "pwned"
    payloads = list(string_payloads(str(marker)).values())
    ep = torch.export.export(M(), (torch.randn(2, 4),))
    pkg, data = export_package(ep)
    nodes = [n for n in pkg.programs[0].graph.nodes if n.metadata is not None]
    assert nodes
    for i, n in enumerate(nodes):
        p = payloads[i % len(payloads)]
        md = n.metadata
        md.stack_trace = f'  File "m.py", line 3, in forward\n    {p}\n' + "\n".join(payloads[:8])
        md.custom = m.MapValue(entries=[m.MapEntry(key=m.Value(value=m.StringValue(value=f"k{j}")),
                                                   value=m.Value(value=m.StringValue(value=q)))
                                        for j, q in enumerate(payloads[:6])])
        md.extra = [m.StringEntry(key=f"note{j}", value=q) for j, q in enumerate(payloads[:4])]
    path = d / "hostile.pt2f"
    write_package(path, pkg, [bytes(x) for x in data], fsync=False)
    return path, marker


def test_print_and_print_readable_compile_nothing(hostile, monkeypatch):
    import torch.fx.graph_module as gm

    import pt2format

    path, marker = hostile
    ep = pt2format.load(path)
    mod = ep.module()  # compiles the graph's own code (names checked by their class): before the recorder
    calls = []

    def recorder(name):
        def f(*a, **k):
            calls.append(name)
            raise AssertionError(f"{name} called while printing")
        return f

    for name in ("exec", "eval", "compile"):
        monkeypatch.setattr(builtins, name, recorder(name))
    for name in ("_exec_with_source", "_forward_from_src", "_method_from_src"):
        if hasattr(gm, name):
            monkeypatch.setattr(gm, name, recorder(f"torch.fx.graph_module.{name}"))
    texts = [str(ep), ep.graph_module.print_readable(print_output=False),
             mod.print_readable(print_output=False)]
    monkeypatch.undo()
    assert not calls, calls
    assert not marker.exists()
    assert any("__import__" in t for t in texts), "the payloads never reached the printers"
