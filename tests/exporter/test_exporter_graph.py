"""exporter/_graph.py: an FX graph -> a `Graph` table, compared node by node with torch's graph."""

from __future__ import annotations

import pytest
import torch
from torch._export.serde.serialize import GraphModuleSerializer

from mirror_programs import dynamic_ep, small_ep
from pt2format.errors import ExportError
from pt2format.exporter._graph import GraphExporter
from pt2format.exporter._metadata import MetadataExporter
from pt2format.exporter._symbols import SymbolTable
from pt2format.exporter._treespec import TreeSpecExporter
from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE


def _graph(gm, shape_env=None):
    symbols = SymbolTable(shape_env, None)
    ge = GraphExporter(symbols, MetadataExporter(symbols), {}, {})
    ge.treespecs = TreeSpecExporter()
    return ge.export(gm, "graph"), symbols


def _arg_name(a):
    return getattr(a.value, "name", None)


def test_nodes_names_and_targets_are_torchs():
    ep = small_ep()
    g, _ = _graph(ep.graph_module)
    calls = [n for n in ep.graph.nodes if n.op == "call_function" and n.target is not __import__("operator").getitem]
    ser = GraphModuleSerializer.__new__(GraphModuleSerializer)
    assert [n.name for n in g.nodes] == [n.name for n in calls]
    assert [n.target for n in g.nodes] == [ser.serialize_operator(n.target) for n in calls]


def test_inputs_outputs_and_argument_names_are_torchs():
    ep = small_ep()
    g, _ = _graph(ep.graph_module)
    placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert [_arg_name(a) for a in g.inputs] == placeholders
    out = next(n for n in ep.graph.nodes if n.op == "output").args[0]
    assert [_arg_name(a) for a in g.outputs] == [a.name for a in out]
    by_name = {n.name: n for n in ep.graph.nodes}
    for node in g.nodes:
        schema = by_name[node.name].target._schema
        names = [a.name for a in schema.arguments]
        assert [i.name for i in node.inputs] == names[:len(node.inputs)]


def test_tensor_values_match_torchs_fake_values():
    ep = small_ep()
    g, _ = _graph(ep.graph_module)
    vals = {n.name: n.meta["val"] for n in ep.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)}
    stored = {v.name: v.meta for v in g.tensor_values}
    assert set(stored) == set(vals)
    for name, val in vals.items():
        meta = stored[name]
        assert meta.dtype == DTYPE_TO_SCALAR_TYPE[val.dtype]
        assert [(s.expr, s.value) for s in meta.sizes] == [(-1, d) for d in val.shape]  # concrete: expr -1
        assert [(s.expr, s.value) for s in meta.strides] == [(-1, d) for d in val.stride()]


def test_symbolic_sizes_become_symbols_of_torchs_shape_env():
    ep = dynamic_ep()
    shape_env = next(n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder").fake_mode.shape_env
    g, symbols = _graph(ep.graph_module, shape_env)
    x = next(v for v in g.tensor_values if v.name == "x")
    val = next(n.meta["val"] for n in ep.graph.nodes if n.name == "x")
    batch, width = x.meta.sizes
    assert batch.expr >= 0 and (width.expr, width.value) == (-1, val.shape[1])
    assert symbols.exprs[batch.expr] is not None
    assert [s.name for s in symbols.symbols] == [str(s) for s in ep.range_constraints]


def test_a_python_callable_in_the_graph_is_refused_with_its_node():
    def user_function(x):
        return x + 1

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(user_function, (x,))
    graph.output(y)
    with pytest.raises(ExportError, match="allow-listed") as e:
        _graph(torch.fx.GraphModule(torch.nn.Module(), graph))
    assert "graph" in str(e.value) and "user_function" in str(e.value)
