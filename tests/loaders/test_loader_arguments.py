"""loaders/_arguments.py: `ArgumentValue` members -> FX node arguments, compared with torch's own deserializer.

Each Python argument value goes through torch's serializer and deserializer
and through our exporter and loader: both must give back the same value of
the same type. References, subgraphs and operators are covered node by node
by test_loader_graph.py; here also the refusals, with their paths.
"""

from __future__ import annotations

import pytest
import torch
from torch._export.serde.serialize import GraphModuleDeserializer, GraphModuleSerializer

from mirror_programs import small_ep
from pt2format._generated.model import Graph, OperatorArgument, TensorArgument
from pt2format.errors import LoadError
from pt2format.exporter._graph import GraphExporter
from pt2format.exporter._metadata import MetadataExporter
from pt2format.exporter._symbols import SymbolTable
from pt2format.loaders._graph import GraphBuilder, _Scope


def _builder():
    b = GraphBuilder(None, None, None, {})
    b.sc = _Scope(Graph(), "graph")
    return b


def _ours(value):
    symbols = SymbolTable(None, None)
    member = GraphExporter(symbols, MetadataExporter(symbols), {}, {}).argument(value, None, "arg")
    return _builder()._arg(member, "arg")


def _torchs(value):
    ep = small_ep()
    arg = GraphModuleSerializer(ep.graph_signature, ep.module_call_graph).serialize_input(value)
    return GraphModuleDeserializer().deserialize_input(arg)


@pytest.mark.parametrize("value", [None, True, 3, -2.5, "mean", 2 + 1j, torch.float16, torch.channels_last,
                                   torch.device("cpu"), [True, False], [1, 2, 3], [0.5, 1.5], ["a", "b"]],
                         ids=repr)
def test_python_arguments_come_back_as_torchs_deserializer_gives_them(value):
    ours, theirs = _ours(value), _torchs(value)
    assert type(ours) is type(theirs) and ours == theirs


def test_a_reference_to_an_undefined_value_is_refused_with_its_path():
    with pytest.raises(LoadError, match="undefined value 'ghost'") as e:
        _builder()._arg(TensorArgument(name="ghost"), "graph.nodes[3].inputs[0]")
    assert "graph.nodes[3].inputs[0]" in str(e.value)


def test_an_operator_outside_the_allowed_namespaces_is_refused():
    with pytest.raises(LoadError):
        _builder()._arg(OperatorArgument(name="os.system"), "graph.nodes[0].inputs[1]")


def test_an_unknown_member_is_refused_with_its_type():
    with pytest.raises(LoadError, match="unknown or missing argument") as e:
        _builder()._arg(object(), "graph.nodes[0].inputs[0]")
    assert "object" in str(e.value)
