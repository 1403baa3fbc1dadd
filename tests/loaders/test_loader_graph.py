"""loaders/_graph.py: `Graph` tables -> FX graphs equal to torch's, node by node (names, targets, arguments, values).

Covers what the loader rebuilds rather than reads: the `getitem` nodes of
multi-output calls, subgraphs reached through get_attr, and fake values and
symbolic sizes made straight from TensorMeta.
"""

from __future__ import annotations

import functools

import torch
from torch.export import Dim

from mirror_programs import dynamic_ep, small_ep
from pt2f_rt_helpers import assert_same_graph, roundtrip_memory


class _SplitCond(torch.nn.Module):
    def forward(self, x):
        a, b = x.split(2)  # a multi-output node: torch's getitem nodes must come back
        return torch.cond(a.sum() > 0, lambda u, v: u.sin() + v, lambda u, v: u.cos() - v, (a * 1, b * 1))


@functools.lru_cache(maxsize=None)
def _split_cond_ep():
    return torch.export.export(_SplitCond(), (torch.randn(4, 3),))


def test_graph_with_multi_outputs_and_subgraphs_is_torchs():
    ep = _split_cond_ep()
    _, _, loaded = roundtrip_memory(ep)
    assert_same_graph(ep.graph_module, loaded.graph_module)
    subs = [n.target for n in loaded.graph.nodes if n.op == "get_attr"]
    assert subs and all(isinstance(getattr(loaded.graph_module, s), torch.fx.GraphModule) for s in subs)


def test_values_and_arguments_are_torchs():
    ep = small_ep()
    _, _, loaded = roundtrip_memory(ep)
    assert_same_graph(ep.graph_module, loaded.graph_module)


def test_symbolic_sizes_are_symbols_with_torchs_ranges():
    ep = dynamic_ep()
    _, _, loaded = roundtrip_memory(ep)
    assert_same_graph(ep.graph_module, loaded.graph_module)
    x = next(n for n in loaded.graph.nodes if n.op == "placeholder").meta["val"]
    assert isinstance(x.shape[0], torch.SymInt)
    assert {str(k): (v.lower, v.upper) for k, v in loaded.range_constraints.items()} == \
           {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()}


def test_loaded_graph_computes_what_torchs_computes():
    ep = _split_cond_ep()
    _, _, loaded = roundtrip_memory(ep)
    for x in (torch.randn(4, 3), -torch.ones(4, 3)):
        assert torch.equal(loaded.module()(x), ep.module()(x))


def test_dynamic_dims_accept_what_torch_accepts():
    batch = Dim("b", min=2, max=8)

    class Cat(torch.nn.Module):
        def forward(self, x, y):
            return torch.cat([x, y]) * 2

    ep = torch.export.export(Cat(), (torch.randn(3, 2), torch.randn(3, 2)),
                             dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
    _, _, loaded = roundtrip_memory(ep)
    x = torch.randn(5, 2)
    assert torch.equal(loaded.module()(x, x), ep.module()(x, x))
