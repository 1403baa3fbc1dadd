"""The FX nodes the loader builds without create_node's argument walk (loaders/_graph.py `_create`).

create_node walks a node's arguments only to warn about raw SymInt/SymFloat/SymBool leaves; the loader
skips the walk because its arguments never hold one. Checked here on a program with symbolic sizes
in its arguments, and the nodes' arguments and users against torch's own loader.
"""

from __future__ import annotations

import io
import warnings

import torch
import torch.utils._pytree as pytree

import pt2format


class _Reshape(torch.nn.Module):
    def forward(self, x, y):
        n = x.shape[0]
        return (x.reshape(n, -1) + y.sum()).view(n * 2, -1), torch.full((n,), 2.0) * x.shape[1]


def _export():
    x = torch.randn(4, 6)
    batch = torch.export.Dim("batch", min=2, max=64)
    return torch.export.export(_Reshape(), (x, torch.randn(3)), dynamic_shapes=({0: batch}, None))


def test_no_raw_symbolic_argument_and_no_warning(tmp_path):
    ep = _export()
    path = tmp_path / "p.pt2f"
    pt2format.save(ep, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # create_node's "Raw SymInt ..." warning would fail here
        loaded = pt2format.load(path)
    syms = (torch.SymInt, torch.SymFloat, torch.SymBool)
    nodes = list(loaded.graph.nodes)
    assert any(isinstance(n.meta.get("val"), torch.SymInt) for n in nodes)  # the program is symbolic
    for n in nodes:
        leaves = pytree.tree_leaves((n.args, n.kwargs))
        assert not any(isinstance(v, syms) for v in leaves), n.format_node()


def test_arguments_and_users_as_torch_loads_them(tmp_path):
    ep = _export()
    path = tmp_path / "p.pt2f"
    pt2format.save(ep, path)
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    theirs = torch.export.load(buf)
    ours = pt2format.load(path)
    assert _node_rows(ours.graph_module) == _node_rows(theirs.graph_module)


def _node_rows(gm, *, arg_types_and_meta_keys=False):
    """Each node's name, op, target, arguments, users, inputs and argument types, as text to compare."""
    rows = []
    for n in gm.graph.nodes:
        row = (n.name, n.op, str(n.target), str(n.args), str(dict(n.kwargs)), [u.name for u in n.users],
               [i.name for i in n.all_input_nodes], type(n.args).__name__)
        if arg_types_and_meta_keys:
            row += ([type(a).__name__ for a in n.args], sorted(n.meta))
        rows.append(row)
    return rows


# -- ep.module()'s graph copy (loaders/_deferred.py `_create_node`) -----------------------------------


def test_module_graph_is_torchs(tmp_path):
    """The loaded program's `module()` (graph copied without the walk) against torch's own `module()` of it."""
    ep = _export()
    path = tmp_path / "p.pt2f"
    pt2format.save(ep, path)
    loaded = pt2format.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        ours = loaded.module()
    theirs = torch.export.ExportedProgram.module(loaded)  # torch's module(), no deferral, torch's create_node
    assert _node_rows(ours, arg_types_and_meta_keys=True) == _node_rows(theirs, arg_types_and_meta_keys=True)
    x = torch.randn(7, 6), torch.randn(3)
    for a, b in zip(ours(*x), theirs(*x)):
        assert torch.equal(a, b)


def _symint():
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch._dynamo.source import ConstantSource

    env = ShapeEnv()
    return env.create_symintnode(env.create_symbol(5, ConstantSource("s")), hint=5)


class _Opaque:
    """A leaf type the fast path does not know: the node must go through torch's create_node."""

    def __repr__(self):
        return "_Opaque()"


_OPAQUE = _Opaque()
# Drawn argument trees, with markers for what each build fills in: ("node", i) is placeholder i.


def _argument_trees():
    from hypothesis import strategies as st

    leaf = st.one_of(st.tuples(st.just("node"), st.integers(0, 2)), st.integers(-3, 3),
                     st.floats(allow_nan=False), st.booleans(), st.none(), st.text("ab", max_size=2),
                     st.sampled_from([torch.float32, torch.device("cpu"), torch.strided, torch.contiguous_format]),
                     st.sampled_from([("sym",), ("opaque",), ("slice",)]))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: ("tuple", xs)),
        st.lists(inner, max_size=3).map(lambda xs: ("list", xs)),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3).map(lambda d: ("dict", d))),
        max_leaves=8)


def _materialize(t, xs, sym):
    if isinstance(t, tuple) and t and isinstance(t[0], str) and t[0] in ("node", "sym", "opaque", "slice",
                                                                            "tuple", "list", "dict"):
        kind = t[0]
        if kind == "node":
            return xs[t[1]]
        if kind == "sym":
            return sym
        if kind == "opaque":
            return _OPAQUE
        if kind == "slice":
            return slice(1, 2)
        if kind == "tuple":
            return tuple(_materialize(v, xs, sym) for v in t[1])
        if kind == "list":
            return [_materialize(v, xs, sym) for v in t[1]]
        return {k: _materialize(v, xs, sym) for k, v in t[1].items()}
    return t


def test_create_node_in_the_deferred_block_is_torchs():
    """Drawn argument trees: inside deferred_codegen(), create_node gives torch's node, users and warnings."""
    from hypothesis import given, settings, strategies as st

    from pt2format.loaders import _deferred

    sym = _symint()

    def build(args, kwargs, fast):
        g = torch.fx.Graph()
        xs = [g.placeholder(f"x{i}") for i in range(3)]
        a = tuple(_materialize(t, xs, sym) for t in args)
        k = {name: _materialize(t, xs, sym) for name, t in kwargs.items()}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if fast:
                with _deferred.deferred_codegen():
                    n = g.create_node("call_function", torch.ops.aten.add.Tensor, a, k, "add")
            else:
                n = g.create_node("call_function", torch.ops.aten.add.Tensor, a, k, "add")
        leaves = pytree.tree_leaves((n.args, n.kwargs))
        return ([str(m.message) for m in caught], n.name, repr(n.args), repr(dict(n.kwargs)),
                type(n.args).__name__, type(n.kwargs).__name__, [type(v).__name__ for v in leaves],
                [i.name for i in n.all_input_nodes], {x.name: [u.name for u in x.users] for x in xs})

    trees = _argument_trees()

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.lists(trees, max_size=3), st.dictionaries(st.sampled_from(["p", "q"]), trees, max_size=2))
    def check(args, kwargs):
        assert build(args, kwargs, fast=True) == build(args, kwargs, fast=False)

    check()
    # The drawn trees reached both paths: plain ones and ones with a raw SymInt (torch's warning).
    assert build([("node", 0), ("list", [("node", 1), 2])], {}, fast=True)[0] == []
    warned = build([("list", [("sym",)])], {}, fast=True)[0]
    assert len(warned) == 1 and warned[0].startswith("Raw SymInt")


def test_create_node_hooks_see_the_arguments_in_the_deferred_block():
    """A module's create-node hooks run inside create_node: they see the arguments, as with torch's."""
    from pt2format.loaders import _deferred

    def seen_args(fast):
        g = torch.fx.Graph()
        x = g.placeholder("x")
        g.output(x)
        gm = torch.fx.GraphModule(torch.nn.Module(), g)
        seen = []
        gm._register_create_node_hook(lambda n: seen.append((n.name, repr(n.args), [i.name for i in n.all_input_nodes])))
        x = next(iter(gm.graph.nodes))
        with gm.graph.inserting_after(x):
            if fast:
                with _deferred.deferred_codegen():
                    gm.graph.create_node("call_function", torch.ops.aten.add.Tensor, (x, [x, 2]), None, "add")
            else:
                gm.graph.create_node("call_function", torch.ops.aten.add.Tensor, (x, [x, 2]), None, "add")
        return seen

    assert seen_args(fast=True) == seen_args(fast=False) == [("add", "(x, [x, 2])", ["x"])]
