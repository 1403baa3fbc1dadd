"""The `meta` and `mcg` checks (conformance/_describe.py) see every metadata key issue 10 asked for.

Negative controls: each key is dropped from (or changed in) a copy of torch's
own freshly exported program, and the description must differ from the
original's; otherwise the check could not fail when a loader loses it.
"""

from __future__ import annotations

import copy

import pytest
import torch

from conformance._describe import describe_graph, describe_module_call_graph, first_difference


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


@pytest.fixture(scope="module")
def decomposed():
    ep = torch.export.export(Net(), (torch.randn(2, 3),)).run_decompositions()
    ep.graph_module.meta["custom"] = {"k": 1}
    return ep


def _describe(gm):
    return describe_graph(gm, meta=True)


@pytest.mark.parametrize("key", ["tensor_meta", "desc", "seq_nr", "original_aten"])
def test_dropping_a_node_key_fails_the_meta_check(decomposed, key):
    gm = copy.deepcopy(decomposed.graph_module)
    hit = [n for n in gm.graph.nodes if key in n.meta]
    assert hit, f"torch set no {key} here: the control would prove nothing"
    want = _describe(decomposed.graph_module)
    del hit[0].meta[key]
    assert first_difference(want, _describe(gm)) is not None


def test_tensor_meta_requires_grad_is_compared(decomposed):
    gm = copy.deepcopy(decomposed.graph_module)
    n = next(n for n in gm.graph.nodes if "tensor_meta" in n.meta)
    n.meta["tensor_meta"] = n.meta["tensor_meta"]._replace(requires_grad=not n.meta["tensor_meta"].requires_grad)
    assert first_difference(_describe(decomposed.graph_module), _describe(gm)) is not None


def test_dropping_module_meta_custom_fails_the_meta_check(decomposed):
    gm = copy.deepcopy(decomposed.graph_module)
    gm.meta.pop("custom")
    assert first_difference(_describe(decomposed.graph_module), _describe(gm)) is not None


class NoArgs(torch.nn.Module):
    def forward(self):
        return torch.ones(2)


def test_forward_arg_names_none_and_empty_differ():
    ep = torch.export.export(NoArgs(), ())
    assert ep.module_call_graph[0].signature.forward_arg_names == []
    want = describe_module_call_graph(ep)
    ep.module_call_graph[0].signature.forward_arg_names = None
    assert first_difference(want, describe_module_call_graph(ep)) is not None
