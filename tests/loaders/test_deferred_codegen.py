"""`load(...).module()` without waiting for code generation (loaders/_deferred.py), against torch's `ep.module()`.

Each program is exported fresh and run through torch's own `ep.module()`;
the loaded program's module must give bit-identical outputs (and leave
mutated buffers identical) while its graph runs node by node, after the
switch to the compiled code, and when several threads load at once. Its
generated code, once compiled, is torch's: the same text as torch's
`module().code` for the same loaded program built without deferral.
"""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from torch.export import Dim

import pt2format
from pt2format.loaders import _deferred


class CondMutate(torch.nn.Module):
    """A control-flow HOP (cond), a mutated buffer and a dynamic batch."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("count", torch.zeros(3))

    def forward(self, x, *, scale: float = 2.0):
        def yes(t):
            return t.sin() * scale

        def no(t):
            return t.cos() - 1

        y = torch.cond(x.sum() > 0, yes, no, (self.lin(x),))
        self.count.add_(y.sum(0))
        return {"y": y, "n": x.shape[0] * 2, "stats": (y.mean(), self.count.clone())}


class Mutate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("count", torch.zeros(3))

    def forward(self, x, *, scale: float = 2.0):
        y = self.lin(x).sin() * scale
        self.count.add_(y.sum(0))
        return {"y": y, "stats": (y.mean(), self.count.clone())}


class WhileScan(torch.nn.Module):
    def forward(self, x, k):
        from torch._higher_order_ops.while_loop import while_loop

        def cond_fn(i, acc):
            return i < k.size(0)

        def body_fn(i, acc):
            return i + 1, acc * 1.5 + x

        _, out = while_loop(cond_fn, body_fn, (torch.zeros((), dtype=torch.int64), x.clone()))
        return out, x.new_ones(x.shape[0], 2)


class TwoInputs(torch.nn.Module):
    def forward(self, x, k):
        return x * k.sum() + 1.5, x.new_ones(x.shape[0], 2)


def _programs():
    x = torch.randn(5, 4)
    batch = Dim("batch", min=2, max=64)
    yield ("cond_mutate", CondMutate, (x,), {"scale": 2.0}, {"x": {0: batch}, "scale": None},
           [((torch.randn(7, 4),), {"scale": 2.0}), ((-torch.rand(3, 4),), {"scale": 2.0})])
    yield ("while", WhileScan, (torch.randn(3, 2), torch.zeros(4)), {}, None,
           [((torch.randn(3, 2), torch.zeros(4)), {})])
    yield ("mutate", Mutate, (x,), {"scale": 2.0}, {"x": {0: batch}, "scale": None},
           [((torch.randn(7, 4),), {"scale": 2.0}), ((-torch.rand(3, 4),), {"scale": 2.0})])
    yield ("two_inputs", TwoInputs, (torch.randn(3, 2), torch.zeros(4)), {}, None,
           [((torch.randn(3, 2), torch.ones(4)), {})])


_FLAT = {"mutate", "two_inputs"}  # programs without control-flow subgraphs: their code generation is deferred


def _same(a, b) -> bool:
    fa, sa = torch.utils._pytree.tree_flatten(a)
    fb, sb = torch.utils._pytree.tree_flatten(b)
    if sa != sb or len(fa) != len(fb):
        return False
    for u, v in zip(fa, fb):
        if isinstance(u, torch.Tensor):
            if not (isinstance(v, torch.Tensor) and u.dtype == v.dtype and u.shape == v.shape
                    and torch.equal(u.view(-1).view(torch.uint8) if u.numel() else u,
                                    v.view(-1).view(torch.uint8) if v.numel() else v)):
                return False
        elif u != v or type(u) is not type(v):
            return False
    return True


def _calls(mod, inputs):
    """Outputs and buffers after each call, for a fresh module."""
    out = []
    with torch.no_grad():  # torch's own module() leaves the mutated buffer requiring grad otherwise
        for args, kwargs in inputs:
            y = mod(*args, **kwargs)
            out.append((y, {k.removeprefix("_orig_mod."): v.clone() for k, v in mod.named_buffers()}))
    return out


@pytest.mark.parametrize("name,model,args,kwargs,shapes,inputs", list(_programs()), ids=lambda v: v if
                         isinstance(v, str) else "")
def test_interpreted_then_compiled_outputs_are_torchs(tmp_path, name, model, args, kwargs, shapes, inputs):
    torch.manual_seed(0)
    ep = torch.export.export(model(), args, kwargs, dynamic_shapes=shapes)
    inputs = [(args, kwargs)] + inputs
    p = tmp_path / f"{name}.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)  # before torch's module() mutates the shared buffer
    want = _calls(ep.module(), inputs)

    gm = pt2format.load(p).module()
    # no code generated yet: the graph runs node by node; a graph with control flow compiles at once, as torch's
    assert _deferred.pending(gm) == (name in _FLAT)
    first = _calls(gm, inputs[:1])
    assert _same(first, want[:1])
    _deferred.compile_now(gm)  # what the background thread does; waits for it if it is under way
    assert not _deferred.pending(gm)
    rest = _calls(gm, inputs[1:])
    assert _same(rest, want[1:])

    # All calls interpreted, on a second load, match torch as well.
    gm2 = pt2format.load(p).module()
    _deferred.background_compile(gm2, False)  # every call runs the graph directly
    assert _same(_calls(gm2, inputs), want)
    assert _deferred.pending(gm2) == (name in _FLAT)


def test_code_and_signature_are_torchs(tmp_path):
    import inspect

    torch.manual_seed(0)
    ep = torch.export.export(Mutate(), (torch.randn(5, 4),), {"scale": 2.0})
    p = tmp_path / "p.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)
    loaded = pt2format.load(p)
    eager = torch.export.ExportedProgram.module(loaded)  # torch's module(), code compiled at once
    lazy = loaded.module()
    assert str(inspect.signature(lazy.forward)) == str(inspect.signature(eager.forward))
    assert _deferred.pending(lazy)
    assert lazy.code == eager.code  # reading the code compiles it: torch's own text
    assert not _deferred.pending(lazy)
    assert str(lazy) == str(eager)


@pytest.mark.parametrize("bad", [((torch.randn(3, 2),), {}), ((torch.randn(3, 2), torch.zeros(4), 1), {}),
                                 ((torch.randn(3, 2),), {"k": torch.zeros(4), "z": 1})])
def test_bad_call_raises_like_torch(tmp_path, bad):
    ep = torch.export.export(TwoInputs(), (torch.randn(3, 2), torch.zeros(4)))
    p = tmp_path / "p.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)
    gm = pt2format.load(p).module()
    errors = []
    for mod in (ep.module(), gm):
        with pytest.raises(Exception) as e:
            mod(*bad[0], **bad[1])
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]
    assert _deferred.pending(gm)


def test_threads_load_and_run_at_once(tmp_path):
    torch.manual_seed(0)
    ep = torch.export.export(CondMutate(), (torch.randn(5, 4),), {"scale": 2.0},
                             dynamic_shapes={"x": {0: Dim("b", min=2, max=64)}, "scale": None})
    p = tmp_path / "p.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)
    xs = [torch.randn(i + 2, 4) for i in range(6)]
    want = [_calls(copy.deepcopy(ep).module(), [((x,), {"scale": 2.0})] * 3) for x in xs]  # fresh state each
    got, errors = [None] * len(xs), []

    def work(i):
        try:
            got[i] = _calls(pt2format.load(p).module(), [((xs[i],), {"scale": 2.0})] * 3)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        assert _same(g, w)
    # GraphModules built outside a loaded program's module() are untouched
    gm = torch.fx.symbolic_trace(torch.nn.Linear(2, 2))
    assert not _deferred.pending(gm) and hasattr(gm, "_code")


def test_copies_of_a_deferred_module_run_like_torchs(tmp_path):
    torch.manual_seed(0)
    ep = torch.export.export(Mutate(), (torch.randn(5, 4),), {"scale": 2.0})
    p = tmp_path / "p.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)
    inputs = [((torch.randn(5, 4),), {"scale": 2.0})] * 2
    want = _calls(ep.module(), inputs)
    for make in (lambda: pt2format.load(p).module(), lambda: pt2format.load_module(p)):
        gm = make()
        assert _deferred.pending(gm)
        dup = copy.deepcopy(gm)  # torch's deepcopy compiles the copy; the original stays deferred
        assert _same(_calls(dup, inputs), want)
        assert _same(_calls(gm, inputs), want)


@pytest.mark.parametrize("make", ["load", "load_module"])
def test_dynamo_traces_the_generated_code(tmp_path, make):
    """Strict export and fullgraph torch.compile of a deferred module work as on torch's own module."""
    torch.manual_seed(0)
    x = torch.randn(5, 4)
    ep = torch.export.export(Mutate(), (x,), {"scale": 2.0})
    p = tmp_path / "p.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)
    inputs = [((x,), {"scale": 2.0})]
    want = _calls(copy.deepcopy(ep).module(), inputs)
    opened = (lambda: pt2format.load(p).module()) if make == "load" else (lambda: pt2format.load_module(p))
    gm = opened()
    assert _deferred.pending(gm)
    compiled = torch.compile(gm, backend="eager", fullgraph=True)
    assert _same(_calls(compiled, inputs), want)
    assert not _deferred.pending(gm)
    gm = opened()
    again = torch.export.export(gm, (x,), {"scale": 2.0}, strict=True)
    assert [n.target for n in again.graph.nodes if n.op == "call_function"] == \
        [n.target for n in torch.export.export(copy.deepcopy(ep).module(), (x,), {"scale": 2.0}, strict=True)
         .graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("make", ["load", "load_module"])
def test_fullgraph_compile_with_control_flow_is_torchs(tmp_path, make):
    """A loaded module with cond compiles fullgraph like torch's own, for inputs that take either branch.

    The branches are torch's GraphModules (a lazy one stops dynamo), and the module has its code
    before dynamo sees it, so a second input (a retrace) works too."""
    torch.manual_seed(0)
    x = torch.randn(5, 4)
    ep = torch.export.export(CondMutate(), (x,), {"scale": 2.0})
    p = tmp_path / "p.pt2f"
    pt2format.save(ep, p, progress=False, fsync=False)
    tp = tmp_path / "p.pt2"
    torch.export.save(ep, tp)
    inputs = [((x.abs(),), {"scale": 2.0}), ((-x.abs(),), {"scale": 2.0}), ((x.abs() + 1,), {"scale": 2.0})]
    want = _calls(torch.compile(torch.export.load(tp).module(), backend="eager", fullgraph=True), inputs)
    gm = pt2format.load(p).module() if make == "load" else pt2format.load_module(p)
    assert {k: type(v).__mro__[1] for k, v in gm.named_children() if k.endswith("graph_0")} == \
        {k: type(v).__mro__[1] for k, v in torch.export.load(tp).module().named_children()
         if k.endswith("graph_0")}
    assert _same(_calls(torch.compile(gm, backend="eager", fullgraph=True), inputs), want)
