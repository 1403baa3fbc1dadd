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

    def shape(gm):
        return [(n.name, n.op, str(n.target), str(n.args), str(dict(n.kwargs)), [u.name for u in n.users],
                 [i.name for i in n.all_input_nodes], type(n.args).__name__) for n in gm.graph.nodes]

    assert shape(ours.graph_module) == shape(theirs.graph_module)
