"""exporter/_arguments.py: node arguments -> `ArgumentValue` members, compared with torch's own serializer.

torch's `GraphModuleSerializer.serialize_input` names the union member it
picks (`as_int`, `as_tensors`, ...); ours must pick the same kind and keep the
same value, for Python scalars and lists and for the node arguments of torch's
own exported program.
"""

from __future__ import annotations

import operator

import pytest
import torch
from torch._export.serde.serialize import GraphModuleSerializer

from mirror_programs import small_ep
from pt2format.errors import ExportError
from pt2format.exporter._graph import GraphExporter, _GraphState
from pt2format.exporter._metadata import MetadataExporter
from pt2format.exporter._symbols import SymbolTable

# Our member class -> the name of torch's union field for the same kind of argument.
TORCH_FIELD = {
    "NoneArgument": "as_none", "BoolArgument": "as_bool", "IntArgument": "as_int", "FloatArgument": "as_float",
    "StringArgument": "as_string", "ComplexArgument": "as_complex", "ScalarTypeArgument": "as_scalar_type",
    "MemoryFormatArgument": "as_memory_format", "DeviceArgument": "as_device", "BoolListArgument": "as_bools",
    "IntListArgument": "as_ints", "FloatListArgument": "as_floats", "StringListArgument": "as_strings",
    "TensorArgument": "as_tensor", "TensorListArgument": "as_tensors",
    "OptionalTensorListArgument": "as_optional_tensors",
}


def _exporter(ep):
    symbols = SymbolTable(None, None)
    ge = GraphExporter(symbols, MetadataExporter(symbols), {}, {})
    return ge


def _torch(ep):
    return GraphModuleSerializer(ep.graph_signature, ep.module_call_graph)


@pytest.mark.parametrize("value", [None, True, 3, -2.5, "mean", 2 + 1j, torch.float16, torch.channels_last,
                                   [True, False], [1, 2, 3], [0.5, 1.5], ["a", "b"]],
                         ids=repr)
def test_python_arguments_take_torchs_union_member_and_value(value):
    ep = small_ep()
    ours = _exporter(ep).argument(value, None, "arg")
    theirs = _torch(ep).serialize_input(value)
    assert TORCH_FIELD[type(ours).__name__] == theirs.type
    if theirs.type == "as_complex":
        assert (ours.real, ours.imag) == (theirs.value.real, theirs.value.imag)
    elif theirs.type != "as_none":
        assert (list(ours.values) if isinstance(value, list) else ours.value) == theirs.value


def test_node_arguments_of_torchs_program_match_torchs_serializer():
    ep = small_ep()
    ge = _exporter(ep)
    ge.st = _GraphState(ep.graph_module, "graph")  # the graph whose node names the references resolve in
    ser = _torch(ep)
    seen = 0
    for n in ep.graph.nodes:
        if n.op != "call_function" or n.target is operator.getitem:
            continue
        theirs = ser.serialize_inputs(n.target, n.args, n.kwargs)
        schema = {a.name: a for a in n.target._schema.arguments}
        for t in theirs:
            a = n.kwargs[t.name] if t.name in n.kwargs else n.args[list(schema).index(t.name)]
            ours = ge.argument(a, schema[t.name].real_type, f"graph.{n.name}")
            assert TORCH_FIELD[type(ours).__name__] == t.arg.type, (n.name, t.name)
            if t.arg.type == "as_tensor":
                assert ours.name == t.arg.value.name
            seen += 1
    assert seen >= 10  # the walk saw the program's arguments


def test_an_empty_list_takes_its_type_from_the_schema():
    ge = _exporter(small_ep())
    assert type(ge.argument([], torch.ListType(torch.IntType.get()), "arg")).__name__ == "IntListArgument"
    assert type(ge.argument([], torch.ListType(torch.TensorType.get()), "arg")).__name__ == "TensorListArgument"


def test_an_argument_of_no_schema_type_is_refused_with_its_path():
    with pytest.raises(ExportError, match="argument has no schema type") as e:
        _exporter(small_ep()).argument(object(), None, "graph.nodes[add].args[1]")
    assert "graph.nodes[add].args[1]" in str(e.value)
