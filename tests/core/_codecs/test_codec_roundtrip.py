"""Round trips of every codec: same tree back, same bytes again, any encoding to any other."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

from pt2format import _codecs as C
from pt2format._generated import model

import codec_strategies as S

ENCODINGS = C.ENCODINGS
M = model
_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def exhaustive():
    return S.exhaustive_package()


def test_exhaustive_tree_covers_every_table_union_member_and_enum_value(exhaustive):
    tables, members, enums = S.coverage(exhaustive)
    want_tables, want_members, want_enums = S.expected_coverage()
    assert want_tables - tables == set()
    assert want_members - members == set()
    assert want_enums - enums == set()
    # Sanity: the expectations are not trivially empty.
    assert len(want_members) == sum(len(m) for m in model.UNIONS.values()) > 50
    assert ("ScalarType", int(model.ScalarType.BITS16)) in want_enums


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_exhaustive_round_trip(exhaustive, encoding):
    data = C.encode(exhaustive, encoding)
    back = C.decode(data, encoding)
    assert back == exhaustive
    assert C.encode(back, encoding) == data
    assert C.encode(exhaustive, encoding) == data


@pytest.mark.parametrize("src", ENCODINGS)
@pytest.mark.parametrize("dst", ENCODINGS)
def test_exhaustive_cross_encoding(exhaustive, src, dst):
    via = C.decode(C.encode(exhaustive, src), src)
    assert C.decode(C.encode(via, dst), dst) == exhaustive


def test_flatbuffers_reader_reads_the_exhaustive_package(exhaustive):
    data = C.encode(exhaustive, "flatbuffers")
    assert C.decode(data, "flatbuffers") == exhaustive


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_memoryview_input(exhaustive, encoding):
    data = C.encode(exhaustive, encoding)
    padded = bytearray(b"\xff" * 3 + data + b"\xee" * 5)
    view = memoryview(padded)[3:3 + len(data)]
    assert C.decode(view, encoding) == exhaustive


def _edge_package():
    f = [math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308]
    return model.Package(
        format_version=model.FormatVersion(1, 0),
        required_features=(1 << 64) - 1,
        programs=[model.Program(
            name="forward", graph=model.Graph(nodes=[model.Node(
                name="n", metadata=model.NodeMetadata(stack_trace="ünï\u0000"), inputs=[
                model.NamedArgument(name="i", value=model.IntListArgument([-(1 << 63), (1 << 63) - 1, 0])),
                model.NamedArgument(name="f", value=model.FloatListArgument(f)),
                *[model.NamedArgument(value=model.FloatArgument(x)) for x in f],
                model.NamedArgument(value=model.NoneArgument()),
            ])]),
            state=[model.StateEntry(tensor=(1 << 32) - 1)],
            symbols=[model.Symbol(hint=-(1 << 63))],
        )],
        storages=[model.Storage(offset=(1 << 64) - 1, size=0)],
        tensors=[model.Tensor(sizes=[], strides=[(1 << 63) - 1])],
    )


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_edge_values_exact(encoding):
    pkg = _edge_package()
    back = C.decode(C.encode(pkg, encoding), encoding)
    assert back == pkg
    floats = [a.value.value for a in back.programs[0].graph.nodes[0].inputs[2:8]]
    assert math.isnan(floats[0]) and floats[1] == math.inf and floats[2] == -math.inf
    assert math.copysign(1.0, floats[3]) == -1.0 and floats[3] == 0.0
    assert back.required_features == (1 << 64) - 1
    assert back.storages[0].offset == (1 << 64) - 1
    assert back.programs[0].graph.nodes[0].inputs[0].value.values == [-(1 << 63), (1 << 63) - 1, 0]


def test_flatbuffers_writes_negative_zero_and_nan_payload():
    """-0.0 and a NaN payload differ from the default 0.0 bit for bit, so the writer must store them."""
    nan_payload = S.EDGE_FLOATS[-1]
    for x in (-0.0, nan_payload):
        data = C.encode(model.Package(format_version=model.FormatVersion(1, 0), programs=[
            model.Program(example_inputs=model.Value(model.FloatValue(x)))]), "flatbuffers")
        import struct

        assert struct.pack("<d", x) in data
        got = C.decode(data, "flatbuffers").programs[0].example_inputs.value.value
        assert struct.pack("<d", got) == struct.pack("<d", x)


def test_default_scalars_are_not_written():
    """A tree of defaults encodes to the same bytes as the minimal tree (defaults omitted)."""
    a = model.Package(format_version=model.FormatVersion(0, 0), programs=[model.Program(symbols=[model.Symbol()])])
    b = model.Package(format_version=model.FormatVersion(), programs=[model.Program(symbols=[
        model.Symbol(kind=0, hint=0, has_hint=False)])])
    for enc in ENCODINGS:
        assert C.encode(a, enc) == C.encode(b, enc)
    assert b"has_hint" not in C.encode(a, "json")


def test_unknown_enum_value_round_trips():
    pkg = model.Package(format_version=model.FormatVersion(1, 0),
                        tensors=[model.Tensor(dtype=200)])
    for enc in ENCODINGS:
        if enc == "json":
            continue  # the JSON Schema lists only the known names; see test_codec_json_flatc
        assert C.decode(C.encode(pkg, enc), enc).tensors[0].dtype == 200
    assert b'"dtype": 200' in C.encode(pkg, "json")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_deep_nesting_within_limit_round_trips(encoding):
    # Package > programs[0] > Value + 2 tables per ListValue level: 3 + 2 * 60 + 2 = 125 <= 128.
    pkg = model.Package(format_version=model.FormatVersion(1, 0),
                        programs=[model.Program(example_inputs=S.deep_value(60))])
    assert C.decode(C.encode(pkg, encoding), encoding) == pkg


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack"])
@given(pkg=S.packages(unknown_enums=True))
@_SETTINGS
def test_random_round_trip_binary(encoding, pkg):
    _round_trip(pkg, encoding)


@given(pkg=S.packages())
@_SETTINGS
def test_random_round_trip_json(pkg):
    _round_trip(pkg, "json")


def _round_trip(pkg, encoding):
    data = C.encode(pkg, encoding)
    back = C.decode(data, encoding)
    assert back == pkg
    assert C.encode(back, encoding) == data


@given(pkg=S.packages())
@_SETTINGS
def test_random_cross_encoding(pkg):
    trees = {enc: C.decode(C.encode(pkg, enc), enc) for enc in ENCODINGS}
    for src, tree in trees.items():
        for dst in ENCODINGS:
            assert C.decode(C.encode(tree, dst), dst) == pkg, (src, dst)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_sizes_around_alignment_round_trip(encoding):
    pkg = S.alignment_package()
    assert C.decode(C.encode(pkg, encoding), encoding) == pkg


def test_flatbuffers_alignment_of_vectors_and_tables():
    """Every 8-byte vector body and every table with 8-byte fields starts at a multiple of 8."""
    import struct

    data = C.encode(S.alignment_package(), "flatbuffers")
    assert len(data) % 8 == 0
    # IntListArgument tables: find each [long] vector through the decoded offsets of the generic reader.
    seen = 0
    for pos in range(0, len(data) - 8, 4):
        n = struct.unpack_from("<I", data, pos)[0]
        body = data[pos + 4:pos + 4 + 8 * n]
        if 0 < n <= 10 and len(body) == 8 * n and struct.unpack(f"<{n}q", body) == tuple(range(-n, 0)):
            assert (pos + 4) % 8 == 0, pos
            seen += 1
    assert seen >= 10


def test_empty_package_round_trips():
    pkg = M.Package(format_version=M.FormatVersion())
    for enc in ENCODINGS:
        data = C.encode(pkg, enc)
        assert C.decode(data, enc) == pkg
    assert len(C.encode(pkg, "flatbuffers")) <= 32


def test_encoders_are_deterministic(exhaustive):
    """Encoding a decoded tree gives the same bytes again, in every encoding (one writer per encoding)."""
    for pkg in (exhaustive, S.alignment_package(), S.deep_value_package(40)):
        for enc in ENCODINGS:
            data = C.encode(pkg, enc)
            assert C.encode(C.decode(data, enc), enc) == data, enc


@given(pkg=S.packages(unknown_enums=True))
@_SETTINGS
def test_generated_codecs_round_trip_random(pkg):
    from pt2format._codecs import msgpack as mp

    fb = C.encode(pkg, "flatbuffers")
    assert C.decode(fb, "flatbuffers") == pkg
    assert C.encode(C.decode(fb, "flatbuffers"), "flatbuffers") == fb
    tree = mp._gen.encode_tree(pkg)
    assert mp._gen.decode_tree(tree) == pkg


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_intenum_members_accepted_for_enum_fields(encoding):
    """Producers may pass IntEnum members (model.StateKind.PARAMETER) where the model holds ints."""
    pkg = M.Package(format_version=M.FormatVersion(1, 0), programs=[M.Program(
        state=[M.StateEntry("w", M.StateKind.PARAMETER, 0)],
        graph=M.Graph(tensor_values=[M.TensorValue("t", M.TensorMeta(dtype=M.ScalarType.BFLOAT16))]))])
    back = C.decode(C.encode(pkg, encoding), encoding)
    assert type(back.programs[0].state[0].kind) is int
    assert back.programs[0].state[0].kind == int(M.StateKind.PARAMETER)
    assert back.programs[0].graph.tensor_values[0].meta.dtype == int(M.ScalarType.BFLOAT16)
    assert C.encode(back, encoding) == C.encode(pkg, encoding)
