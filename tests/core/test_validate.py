"""validate_package: each invariant a reader relies on fails with its error type and field path."""

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st


from pt2f_samples import meta, tiny_package  # noqa: E402

from pt2format._generated import model as m  # noqa: E402
from pt2format._validate import tensor_nbytes, validate_package  # noqa: E402
from pt2format.errors import (  # noqa: E402
    LimitError, SegmentError, UnsupportedFeatureError, ValidationError, VersionError,
)

LENGTHS = {1: 1 << 20}


def filled(sizes=(4, 4)):
    """tiny_package with storages placed as write_package would (16-byte storages at 64-byte steps)."""
    pkg = tiny_package(sizes)
    for i, st in enumerate(pkg.storages):
        st.segment, st.offset, st.size = 0, 64 * i, 4 * sizes[i]
    pkg.segments = [m.Segment(0, 1)]
    return pkg


def fails(pkg, exc, path, lengths=LENGTHS, **kw):
    with pytest.raises(exc) as e:
        validate_package(pkg, data_section_lengths=lengths, **kw)
    assert type(e.value) is exc
    assert e.value.path == path, str(e.value)
    return e.value


def test_valid_package_passes():
    validate_package(filled(), data_section_lengths=LENGTHS)
    validate_package(filled(), data_section_lengths=None)


def test_format_version_required():
    pkg = filled()
    pkg.format_version = None
    fails(pkg, ValidationError, "format_version")


def test_newer_major_refused():
    pkg = filled()
    pkg.format_version = m.FormatVersion(2, 0)
    fails(pkg, VersionError, "format_version")


def test_unknown_feature():
    pkg = filled()
    pkg.required_features = 1 << 9
    fails(pkg, UnsupportedFeatureError, "required_features")


def test_missing_argument_union():
    pkg = filled()
    pkg.programs[0].graph.nodes[0].inputs[0].value = None
    err = fails(pkg, ValidationError, "programs[0].graph.nodes[0].inputs[0].value")
    assert "union value is missing" in str(err)


def test_undeclared_tensor_name():
    pkg = filled()
    pkg.programs[0].graph.nodes[1].inputs[1].value = m.TensorArgument("nope")
    err = fails(pkg, ValidationError, "programs[0].graph.nodes[1].inputs[1].value.name")
    assert "'nope'" in str(err)


def test_undeclared_names_in_lists_and_outputs():
    pkg = filled()
    pkg.programs[0].graph.nodes[0].inputs[1].value = m.TensorListArgument(["x", "ghost"])
    fails(pkg, ValidationError, "programs[0].graph.nodes[0].inputs[1].value.names[1]")
    pkg = filled()
    pkg.programs[0].graph.outputs[0].value = m.OptionalTensorArgument("ghost")
    fails(pkg, ValidationError, "programs[0].graph.outputs[0].value.name")
    pkg = filled()
    pkg.programs[0].graph.nodes[0].inputs[1].value = m.SymIntListArgument([m.SymIntArgument(value=3),
                                                                           m.SymIntArgument("s9")])
    fails(pkg, ValidationError, "programs[0].graph.nodes[0].inputs[1].value.items[1].name")


def test_optional_and_concrete_arguments_pass():
    pkg = filled()
    node = pkg.programs[0].graph.nodes[0]
    node.inputs += [m.NamedArgument("a", m.OptionalTensorArgument(None)),
                    m.NamedArgument("b", m.SymIntArgument(None, 4)),
                    m.NamedArgument("c", m.IntListArgument([1, 2])), m.NamedArgument("d", m.NoneArgument())]
    validate_package(pkg, data_section_lengths=LENGTHS)


def test_subgraph_names_are_scoped():
    pkg = filled()
    sub = m.Graph(inputs=[m.Argument(m.TensorArgument("a"))], outputs=[m.Argument(m.TensorArgument("a"))],
                  tensor_values=[m.TensorValue("a", meta(4))])
    node = pkg.programs[0].graph.nodes[0]
    node.inputs.append(m.NamedArgument("body", m.GraphArgument("body", sub)))
    validate_package(pkg, data_section_lengths=LENGTHS)
    sub.outputs[0].value = m.TensorArgument("x")  # the parent's value is not visible inside
    fails(pkg, ValidationError, "programs[0].graph.nodes[0].inputs[2].value.graph.outputs[0].value.name")


def test_subgraph_nesting_limit():
    pkg = filled()
    graph = m.Graph()
    for _ in range(10):
        arg = m.NamedArgument("g", m.GraphArgument("g", graph))
        graph = m.Graph(nodes=[m.Node(name="n", target="t", inputs=[arg])])
    pkg.programs[0].graph.nodes[0].inputs.append(m.NamedArgument("g", m.GraphArgument("g", graph)))
    with pytest.raises(LimitError):
        validate_package(pkg, data_section_lengths=LENGTHS, max_depth=5)
    validate_package(pkg, data_section_lengths=LENGTHS, max_depth=20)


def test_signature_specs():
    pkg = filled()
    pkg.programs[0].signature.input_specs[1].spec = None
    fails(pkg, ValidationError, "programs[0].signature.input_specs[1].spec")
    pkg = filled()
    pkg.programs[0].signature.output_specs.append(m.OutputSpec(m.LossOutputSpec(m.TensorArgument("x"))))
    fails(pkg, ValidationError, "programs[0].signature.output_specs")
    pkg = filled()
    pkg.programs[0].signature.input_specs[1].spec.arg = m.TensorArgument("ghost")
    fails(pkg, ValidationError, "programs[0].signature.input_specs[1].spec.arg.name")
    pkg = filled()
    pkg.programs[0].signature = None
    fails(pkg, ValidationError, "programs[0].signature")


def test_names_required():
    pkg = filled()
    pkg.programs[0].name = None
    fails(pkg, ValidationError, "programs[0].name")
    pkg = filled()
    pkg.programs[0].graph.nodes[1].name = None
    fails(pkg, ValidationError, "programs[0].graph.nodes[1].name")
    pkg = filled()
    pkg.programs[0].graph.tensor_values[2].name = None
    fails(pkg, ValidationError, "programs[0].graph.tensor_values[2].name")


def test_duplicate_names():
    pkg = filled()
    pkg.programs[0].graph.nodes[1].name = "add_0"
    fails(pkg, ValidationError, "programs[0].graph.nodes")
    pkg = filled()
    pkg.programs[0].symbols = [m.Symbol("s0"), m.Symbol("s0")]
    fails(pkg, ValidationError, "programs[0].symbols[1].name")


def test_program_names_sorted_unique():
    pkg = filled()
    other = tiny_package((4, 4), name="decode").programs[0]
    pkg.programs.append(other)  # "forward" then "decode": not sorted
    fails(pkg, ValidationError, "programs[1].name")
    pkg.programs.reverse()
    validate_package(pkg, data_section_lengths=LENGTHS)
    pkg.programs[1].name = "decode"
    fails(pkg, ValidationError, "programs[1].name")


def test_data_indices():
    pkg = filled()
    pkg.storages[1].segment = 1
    fails(pkg, ValidationError, "storages[1].segment")
    pkg = filled()
    pkg.tensors[0].storage = 2
    fails(pkg, ValidationError, "tensors[0].storage")
    pkg = filled()
    pkg.programs[0].state[1].tensor = 2
    fails(pkg, ValidationError, "programs[0].state[1].tensor")
    pkg = filled()
    pkg.segments[0].section = 0  # the PROGRAM section
    fails(pkg, SegmentError, "segments[0].section")
    pkg = filled()
    pkg.segments[0].file = 1
    fails(pkg, ValidationError, "segments[0].file")


def test_storage_alignment_and_bounds():
    pkg = filled()
    pkg.storages[1].offset = 72
    fails(pkg, SegmentError, "storages[1].offset")
    pkg = filled()
    fails(pkg, SegmentError, "storages[1]", lengths={1: 79})  # storage 1 is [64, 80)
    validate_package(filled(), data_section_lengths={1: 80})
    pkg = filled()
    pkg.storages[0].size = 2**63
    fails(pkg, SegmentError, "storages[0]")


def test_tensor_inside_storage():
    pkg = filled()
    pkg.tensors[0].storage_offset = 1  # elements 1..4 of a 4-element storage
    err = fails(pkg, ValidationError, "tensors[0]")
    assert err.expected == "<= 16 bytes" and err.got == "20 bytes"
    pkg = filled()
    pkg.tensors[0].strides = [-1]
    fails(pkg, ValidationError, "tensors[0].strides[0]")
    pkg = filled()
    pkg.tensors[0].sizes = [-4]
    fails(pkg, ValidationError, "tensors[0].sizes[0]")
    pkg = filled()
    pkg.tensors[0].sizes = [2**62, 2**62]
    pkg.tensors[0].strides = [2**62, 1]
    fails(pkg, ValidationError, "tensors[0]")
    pkg = filled()
    pkg.tensors[0].dtype = m.ScalarType.UNSPECIFIED
    fails(pkg, ValidationError, "tensors[0].dtype")
    pkg = filled()
    pkg.tensors[0].strides = []
    fails(pkg, ValidationError, "tensors[0].strides")


@pytest.mark.parametrize("dtype, sizes, strides, offset, expected", [
    (m.ScalarType.FLOAT32, [2, 3], [3, 1], 0, 24),
    (m.ScalarType.FLOAT32, [2, 3], [1, 2], 0, 24),     # transposed view
    (m.ScalarType.FLOAT64, [4], [0], 2, 24),           # expanded (stride 0)
    (m.ScalarType.INT8, [0, 5], [5, 1], 10**12, 0),    # empty: reaches nothing
    (m.ScalarType.COMPLEX128, [], [], 3, 64),          # scalar at element 3
    (m.ScalarType.BFLOAT16, [2, 2], [4, 2], 1, 16),    # last element 1 + 4 + 2 = 7
])
def test_tensor_nbytes(dtype, sizes, strides, offset, expected):
    assert tensor_nbytes(dtype, sizes, strides, offset) == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), max_size=4), st.integers(0, 9),
       st.sampled_from([(m.ScalarType.FLOAT32, "float32"), (m.ScalarType.INT16, "int16"),
                        (m.ScalarType.COMPLEX128, "complex128"), (m.ScalarType.BOOL, "bool")]))
def test_tensor_nbytes_matches_torch(dims, offset, dtypes):
    """torch sizes a strided tensor's storage with computeStorageNbytes; ours adds the storage offset."""
    import torch

    sizes, strides = [d[0] for d in dims], [d[1] for d in dims]
    ours, torch_dtype = dtypes
    t = torch.empty_strided(sizes, strides, dtype=getattr(torch, torch_dtype))
    itemsize = t.element_size()
    expected = 0 if t.numel() == 0 else offset * itemsize + t.untyped_storage().nbytes()
    assert tensor_nbytes(ours, sizes, strides, offset) == expected


def test_sym_expr_pool():
    def prog_with(exprs, symbols=(m.Symbol("s0"),)):
        pkg = filled()
        pkg.programs[0].symbols = list(symbols)
        pkg.programs[0].sym_exprs = exprs
        return pkg

    ok = [m.SymExpr(kind=m.SymExprKind.SYMBOL, symbol=0), m.SymExpr(kind=m.SymExprKind.INTEGER, int_value=2),
          m.SymExpr(kind=m.SymExprKind.APPLY, op=m.SymOp.MUL, args=[0, 1]),
          m.SymExpr(kind=m.SymExprKind.RATIONAL, int_value=1, denominator=3)]
    validate_package(prog_with(ok), data_section_lengths=LENGTHS)
    fails(prog_with([m.SymExpr(kind=m.SymExprKind.SYMBOL, symbol=1)]), ValidationError,
          "programs[0].sym_exprs[0].symbol")
    fails(prog_with([m.SymExpr(kind=m.SymExprKind.APPLY, op=m.SymOp.ADD, args=[0])]), ValidationError,
          "programs[0].sym_exprs[0].args[0]")  # refers to itself: a cycle
    fails(prog_with(ok[:2] + [m.SymExpr(kind=m.SymExprKind.APPLY, op=m.SymOp.ADD, args=[0, 3])]), ValidationError,
          "programs[0].sym_exprs[2].args[1]")  # forward reference
    fails(prog_with([m.SymExpr(kind=m.SymExprKind.RATIONAL, int_value=1, denominator=1)]), ValidationError,
          "programs[0].sym_exprs[0].denominator")
    fails(prog_with([m.SymExpr(kind=m.SymExprKind.APPLY, args=[])]), ValidationError, "programs[0].sym_exprs[0].op")
    fails(prog_with(ok[:1] + [m.SymExpr(kind=m.SymExprKind.APPLY, op=m.SymOp.NOT)]), ValidationError,
          "programs[0].sym_exprs[1].args")
    fails(prog_with([m.SymExpr()]), ValidationError, "programs[0].sym_exprs[0].kind")


def test_sym_references():
    pkg = filled()
    pkg.programs[0].sym_exprs = [m.SymExpr(kind=m.SymExprKind.INTEGER, int_value=4)]
    pkg.programs[0].graph.tensor_values[0].meta.sizes[0] = m.SymInt(0, 0)
    validate_package(pkg, data_section_lengths=LENGTHS)
    pkg.programs[0].graph.tensor_values[0].meta.sizes[0] = m.SymInt(1, 0)
    fails(pkg, ValidationError, "programs[0].graph.tensor_values[0].meta.sizes[0].expr")
    pkg.programs[0].graph.tensor_values[0].meta.sizes[0] = m.SymInt(-2, 0)
    fails(pkg, ValidationError, "programs[0].graph.tensor_values[0].meta.sizes[0].expr")
    pkg = filled()
    pkg.programs[0].range_constraints = [m.RangeConstraint(expr=0)]
    fails(pkg, ValidationError, "programs[0].range_constraints[0].expr")
    pkg = filled()
    pkg.programs[0].graph.nodes[0].metadata = m.NodeMetadata(unbacked_bindings=[m.UnbackedBinding(symbol=0)])
    fails(pkg, ValidationError, "programs[0].graph.nodes[0].metadata.unbacked_bindings[0].symbol")
    pkg = filled()
    pkg.programs[0].graph.sym_int_values = [m.SymIntValue("s", m.SymInt(5, 0))]
    fails(pkg, ValidationError, "programs[0].graph.sym_int_values[0].value.expr")


def test_tensor_meta_dtype():
    pkg = filled()
    pkg.programs[0].graph.tensor_values[1].meta.dtype = m.ScalarType.UNSPECIFIED
    fails(pkg, ValidationError, "programs[0].graph.tensor_values[1].meta.dtype")
    pkg.programs[0].graph.tensor_values[1].meta = None
    fails(pkg, ValidationError, "programs[0].graph.tensor_values[1].meta")


def test_values():
    def with_inputs(value):
        pkg = filled()
        pkg.programs[0].example_inputs = value
        return pkg

    good = m.Value(m.ListValue([m.Value(m.TensorRefValue(1)), m.Value(m.MapValue([
        m.MapEntry(m.Value(m.StringValue("k")), m.Value(m.NullValue()))]))]))
    validate_package(with_inputs(good), data_section_lengths=LENGTHS)
    fails(with_inputs(m.Value(m.ListValue([m.Value(m.TensorRefValue(2))]))), ValidationError,
          "programs[0].example_inputs.value.items[0].value.tensor")
    fails(with_inputs(m.Value(None)), ValidationError, "programs[0].example_inputs.value")
    fails(with_inputs(m.Value(m.MapValue([m.MapEntry(m.Value(m.IntValue(1)), None)]))), ValidationError,
          "programs[0].example_inputs.value.entries[0].value")
    fails(with_inputs(m.Value(m.MapValue([m.MapEntry(m.Value(m.IntValue(1)), m.Value())]))), ValidationError,
          "programs[0].example_inputs.value.entries[0].value.value")


def test_value_nesting_limit():
    v = m.Value(m.NullValue())
    for _ in range(200):
        v = m.Value(m.ListValue([v]))
    pkg = filled()
    pkg.programs[0].example_inputs = v
    with pytest.raises(LimitError):
        validate_package(pkg, data_section_lengths=LENGTHS)


def test_values_in_custom_metadata_and_specs():
    pkg = filled()
    pkg.programs[0].graph.nodes[1].metadata = m.NodeMetadata(custom=m.MapValue([
        m.MapEntry(m.Value(m.StringValue("t")), m.Value(m.TensorRefValue(9)))]))
    fails(pkg, ValidationError, "programs[0].graph.nodes[1].metadata.custom.entries[0].value.value.tensor")
    pkg = filled()
    pkg.programs[0].custom_objects = [m.CustomObject("obj", "cls", m.Value(m.TensorRefValue(9)))]
    fails(pkg, ValidationError, "programs[0].custom_objects[0].state.value.tensor")


def test_sorted_metadata():
    pkg = filled()
    pkg.metadata = [m.StringEntry("b", "1"), m.StringEntry("a", "2")]
    fails(pkg, ValidationError, "metadata[1].key")
    pkg = filled()
    pkg.programs[0].metadata = [m.StringEntry("a", "1"), m.StringEntry("a", "2")]
    fails(pkg, ValidationError, "programs[0].metadata[1].key")


def test_shard_rules():
    pkg = filled()
    pkg.shard_files = [m.ShardFile("data.bin", 10)]
    pkg.segments = [m.Segment(1, 0)]
    fails(pkg, ValidationError, "segments[0].file")  # shard segment without the feature bit
    pkg.required_features = 1
    validate_package(pkg, data_section_lengths={})
    pkg.shard_files.append(m.ShardFile("data.bin", 10))
    fails(pkg, ValidationError, "shard_files[1].name", lengths={})


def test_state_kind_required():
    pkg = filled()
    pkg.programs[0].state[0].kind = m.StateKind.UNSPECIFIED
    fails(pkg, ValidationError, "programs[0].state[0].kind")
