"""Higher-order ops and torch-inserted calls (exporter/_operators.py, loaders/_graph.py) against torch's own program.

Each program is exported fresh; the loaded program must have torch's node
targets, values and outputs. The conformance corpus has the same programs
(control_flow.py); associative_scan is checked here as well because torch's
own run_decompositions() of it breaks vmap in the process (see the case).
"""

from __future__ import annotations

import operator

import pytest
import torch
from torch._higher_order_ops.associative_scan import associative_scan
from torch._higher_order_ops.while_loop import while_loop

import pt2format
from pt2format.vocab.operators import BUILTINS


def _round_trip(ep, tmp_path, encoding="flatbuffers"):
    p = tmp_path / f"p-{encoding}.pt2f"
    pt2format.save(ep, p, encoding=encoding, progress=False, fsync=False)
    return pt2format.load(p)


def _nodes(gm):
    out = []
    for n in gm.graph.nodes:
        out.append((n.op, n.name, n.target if n.op != "get_attr" else "attr"))
        if n.op == "get_attr" and isinstance(getattr(gm, n.target), torch.fx.GraphModule):
            out.append(_nodes(getattr(gm, n.target)))
    return out


class GenericScan(torch.nn.Module):
    def forward(self, x):
        return associative_scan(lambda a, b: a * b + b, x, dim=0, combine_mode="generic")


class Vmapped(torch.nn.Module):
    def forward(self, x):
        return torch.vmap(lambda r: r.sin() + r.sum())(x)


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
@pytest.mark.parametrize("model", [GenericScan, Vmapped])
def test_predispatch_vmap_calls_round_trip(tmp_path, model, encoding):
    x = torch.randn(5, 3)
    ep = torch.export.export(model(), (x,))
    calls = {n.target for n in ep.graph.nodes if n.op == "call_function"
             and not isinstance(n.target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator))}
    assert torch._functorch.predispatch.lazy_load_decompositions in calls  # what this test is about
    want = ep.module()(x)
    loaded = _round_trip(ep, tmp_path, encoding)
    assert _nodes(loaded.graph_module) == _nodes(ep.graph_module)
    assert torch.equal(loaded.module()(x), want)


def test_predispatch_calls_resolve_only_through_the_table():
    """The loader finds these callables by name in the fixed table, never by importing a path."""
    for f in (torch._functorch.predispatch.lazy_load_decompositions, torch._functorch.predispatch._add_batch_dim,
              torch._functorch.predispatch._remove_batch_dim, torch._functorch.predispatch._vmap_increment_nesting,
              torch._functorch.predispatch._vmap_decrement_nesting):
        assert BUILTINS[f"torch._functorch.predispatch.{f.__name__}"] is f


class NoGradUnused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(3))

    def forward(self, x):
        with torch.no_grad():
            self.seen.add_(1)
        return x + 1


def test_set_grad_region_without_outputs_keeps_empty_val(tmp_path):
    ep = torch.export.export(NoGradUnused(), (torch.randn(2, 3),))
    hop = [n for n in ep.graph.nodes if n.target is torch.ops.higher_order.wrap_with_set_grad_enabled]
    assert hop and hop[0].meta["val"] == ()
    loaded = _round_trip(ep, tmp_path)
    got = [n for n in loaded.graph.nodes if n.target is torch.ops.higher_order.wrap_with_set_grad_enabled]
    assert [n.meta["val"] for n in got] == [n.meta["val"] for n in hop]
    x = torch.randn(2, 3)
    torch.testing.assert_close(loaded.module()(x), torch.export.export(NoGradUnused(), (x,)).module()(x))


class IntCarry(torch.nn.Module):
    def forward(self, x):
        i, v = while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v + v.sum()), (0, x))
        return torch.ones(i), v


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
def test_while_loop_mixed_carry_and_unbacked_output(tmp_path, encoding):
    x = torch.randn(2)
    ep = torch.export.export(IntCarry(), (x,))
    loaded = _round_trip(ep, tmp_path, encoding)
    # node order (getitems after the runtime asserts on the unbacked count), names and targets
    assert _nodes(loaded.graph_module) == _nodes(ep.graph_module)
    (wl,) = [n for n in loaded.graph.nodes if n.target is torch.ops.higher_order.while_loop]
    (orig,) = [n for n in ep.graph.nodes if n.target is torch.ops.higher_order.while_loop]
    carried, want = wl.args[2], orig.args[2]
    assert type(carried) is type(want) is tuple and carried[0] == want[0] == 0 and carried[1].name == want[1].name
    for a, b in zip(ep.module()(x), loaded.module()(x)):
        assert torch.equal(a, b)
    getitems = [n.name for n in loaded.graph.nodes if n.target is operator.getitem]
    assert getitems == [n.name for n in ep.graph.nodes if n.target is operator.getitem]
