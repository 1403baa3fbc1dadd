"""Every attack on the reader found from outside, rebuilt as a file: each ends in a typed error, nothing runs.

Each hostile file is a real saved program with one change, made the way an
attacker would (tests/support/crafting.py). A payload that ran would create
the marker file; every test checks that it does not exist afterwards, and
that the outcome is a `Pt2FormatError` subclass raised by `read` (so
`validate`, `inspect`, `dump` and `load`, which all read first, refuse too).
The symbolic-expression attacks (huge powers) have their own tests with the
evaluator (tests/roundtrip/test_roundtrip_symbols.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import namedtuple

import pytest
import torch

import pt2format
from pt2format import _codecs
from pt2format._generated import model as m
from pt2format.errors import (EncodingError, FormatError, LimitError, Pt2FormatError, SegmentError,
                              StringClassError)

import crafting
import native_util_ts as U
import pt2f_samples

ENCODINGS = ("flatbuffers", "msgpack", "json")


def _marker_payload(marker) -> str:
    return f"__import__('pathlib').Path({str(marker)!r}).touch()"


class DictIO(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, *, opts):
        return {"out": self.lin(x) + opts["bias"]}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real program with a kwargs dict input, a dict output and a submodule, in every encoding."""
    d = tmp_path_factory.mktemp("attacks")
    ep = torch.export.export(DictIO(), (torch.randn(2, 3),), {"opts": {"bias": torch.randn(3)}})
    paths = {}
    for enc in ENCODINGS:
        paths[enc] = d / f"base-{enc}.pt2f"
        pt2format.save(ep, paths[enc], encoding=enc, fsync=False, progress=False)
    return paths


def _refused(path, error=Pt2FormatError):
    with pytest.raises(error) as e:
        pt2format.read(path)
    with pytest.raises(error):
        pt2format.load(path)
    return e.value


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_guard_code_through_extra_val_metadata_refused(saved, tmp_path, encoding):
    """An `extra` node-metadata entry named like a structured key (val) never reaches node.meta."""
    marker = tmp_path / "pwned"

    def mutate(pkg):
        graph = pkg.programs[0].graph
        payload = f"1) or {_marker_payload(marker)} or (1"
        graph.input_metadata = [m.NodeMetadata(extra=[m.StringEntry("val", payload)]) for _ in graph.inputs]

    err = _refused(crafting.craft(saved[encoding], tmp_path / "x.pt2f", mutate))
    assert isinstance(err, StringClassError) and "reserved" in str(err)
    assert not marker.exists()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_forward_kwarg_names_of_fallback_dict_refused(saved, tmp_path, encoding):
    """kwargs names in an in_spec that falls back to a generic container are checked like every key."""
    marker = tmp_path / "pwned"

    def mutate(pkg):
        spec = pkg.programs[0].module_call_graph[0].signature.in_spec
        kwargs = spec.children[1]
        kwargs.kind = m.TreeSpecKind.CUSTOM
        kwargs.type_name = "nowhere.Missing"
        kwargs.keys = [m.Value(m.StringValue(f"opts=None):\n    {_marker_payload(marker)}\n    def f(x"))]

    err = _refused(crafting.craft(saved[encoding], tmp_path / "x.pt2f", mutate))
    assert isinstance(err, StringClassError) and err.string_class == "identifier"
    assert not marker.exists()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_example_input_dict_key_quote_breakout_refused(saved, tmp_path, encoding):
    """Dict keys inside example inputs land in guard-failure strings of generated code."""
    marker = tmp_path / "pwned"

    def mutate(pkg):
        ex = pkg.programs[0].example_inputs
        kwargs = ex.value.items[1].value
        opts = kwargs.entries[0].value.value
        opts.entries[0].key = m.Value(m.StringValue(f"bias'] + str({_marker_payload(marker)}) + ['"))

    err = _refused(crafting.craft(saved[encoding], tmp_path / "x.pt2f", mutate))
    assert isinstance(err, StringClassError)
    assert "example_inputs" in err.path
    assert not marker.exists()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_unflatten_module_stack_path_refused(saved, tmp_path, encoding):
    """nn_module_stack paths become submodule names in the code torch.export.unflatten generates."""
    marker = tmp_path / "pwned"

    def mutate(pkg):
        for node in crafting.nodes(pkg):
            for e in node.metadata.nn_module_stack if node.metadata else ():
                if e.path:
                    e.path = f"lin; {_marker_payload(marker)}; x"

    err = _refused(crafting.craft(saved[encoding], tmp_path / "x.pt2f", mutate), StringClassError)
    assert err.string_class == "module_stack_path"
    assert not marker.exists()


@pytest.mark.parametrize("name,path_class", [
    ("self", "local_name"), ("__class__", "local_name"), ("class", "local_name"), ("forward", None),
])
def test_reserved_node_names_refused(saved, tmp_path, name, path_class):
    """Node names are locals of forward(): `self`, keywords and dunders are refused at decode."""
    def mutate(pkg):
        graph = pkg.programs[0].graph
        node = graph.nodes[0]
        old = node.outputs[0].value.name
        for v in graph.tensor_values:
            if v.name == old:
                v.name = name
        node.outputs[0].value.name = name
        node.name = name
        for other in graph.nodes[1:]:
            for a in other.inputs:
                if isinstance(a.value, m.TensorArgument) and a.value.name == old:
                    a.value.name = name
        for o in graph.outputs:
            if isinstance(o.value, m.TensorArgument) and o.value.name == old:
                o.value.name = name

    path = crafting.craft(saved["flatbuffers"], tmp_path / "x.pt2f", mutate)
    if path_class is None:
        # `forward` is a fine local name: the program loads and computes what the original computes.
        x, kw = torch.randn(2, 3), {"opts": {"bias": torch.randn(3)}}
        got = pt2format.load(path).module()(x, **kw)["out"]
        want = pt2format.load(saved["flatbuffers"]).module()(x, **kw)["out"]
        assert torch.equal(got, want)
        return
    err = _refused(path, StringClassError)
    assert err.string_class == path_class


@pytest.mark.parametrize("name", ["training", "forward", "_modules", "__class__", "lin.self.x.__dict__"])
def test_reserved_state_names_refused(saved, tmp_path, name):
    """State paths become attributes of the module torch builds: names nn.Module reserves are refused."""
    def mutate(pkg):
        prog = pkg.programs[0]
        old = prog.state[0].name
        prog.state[0].name = name
        for spec in prog.signature.input_specs:
            s = spec.spec
            if getattr(s, "parameter_name", None) == old:
                s.parameter_name = name

    err = _refused(crafting.craft(saved["flatbuffers"], tmp_path / "x.pt2f", mutate), StringClassError)
    assert err.string_class == "attr_path"


def test_source_fn_stack_cannot_name_os_system(saved, tmp_path):
    """source_fn_stack targets resolve only to torch's own functions and module classes."""
    def mutate(pkg):
        for node in crafting.nodes(pkg):
            if node.metadata is not None:
                node.metadata.source_fn_stack = [m.SourceFnEntry(name="linear", target="torch.os.system")]

    ep = pt2format.load(crafting.craft(saved["flatbuffers"], tmp_path / "x.pt2f", mutate))
    targets = [fn for n in ep.graph.nodes for _, fn in n.meta.get("source_fn_stack", [])]
    assert targets and all(t == "torch.os.system" for t in targets)  # left a string, never resolved
    assert os.system not in targets


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_string_vector_classes_checked(saved, tmp_path, encoding):
    """String vectors (forward_arg_names) are checked element by element."""
    def mutate(pkg):
        pkg.programs[0].module_call_graph[0].signature.forward_arg_names = ["x", "a=__import__('os')"]

    err = _refused(crafting.craft(saved[encoding], tmp_path / "x.pt2f", mutate), StringClassError)
    assert err.string_class == "local_name"


def test_flatbuffers_fan_out_bomb_bounded():
    """Tables sharing subtables never decode to more objects than the buffer's bytes allow (SPEC.md §10).

    Level k is a Value holding a MapValue with one entry whose key and value
    are both level k+1: 2^depth visits from a few hundred bytes. Every accepted
    buffer decodes to at most one table per 4 bytes (plus vector elements);
    deep enough, the decoder stops with a LimitError.
    """
    refused = False
    for depth in range(1, 40):
        def build(b, depth=depth):
            level = U.int_value(b, 7)
            for _ in range(depth):
                level = _fb_value_map(b, level)
            return level

        buf = U.fb_package(build)
        t0 = time.monotonic()
        try:
            pkg = _codecs.decode(buf, "flatbuffers")
        except LimitError:
            refused = True
            assert time.monotonic() - t0 < 5
            break
        tables = _count_tables(pkg)
        assert tables <= (len(buf) + 64) // 4, (depth, tables, len(buf))
    assert refused


def _count_tables(obj) -> int:
    if isinstance(obj, list):
        return sum(_count_tables(x) for x in obj)
    if not isinstance(obj, m.TABLES["Value"].__mro__[1]):  # ModelObject
        return 0
    return 1 + sum(_count_tables(getattr(obj, f[0])) for f in type(obj).FIELDS if f[2] in ("table", "union", "vector"))


def _fb_value_map(b, inner):
    """A MapValue Value with one entry whose key and value are both `inner` (one table, two references)."""
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(U.field_id(m.MapEntry, "key"), inner, 0)
    b.PrependUOffsetTRelativeSlot(U.field_id(m.MapEntry, "value"), inner, 0)
    entry = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(entry)
    vec = b.EndVector()
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(U.field_id(m.MapValue, "entries"), vec, 0)
    return U.wrap_value(b, "MapValue", b.EndObject())


def test_json_huge_integer_is_a_limit_error(tmp_path):
    pkg = pt2f_samples.tiny_package()
    text = _codecs.encode(pkg, "json").decode()
    text = text.replace('"major":1', '"major":' + "9" * 5000, 1).replace('"major": 1', '"major": ' + "9" * 5000, 1)
    assert "9" * 5000 in text
    path = tmp_path / "big.pt2f"
    pt2f_samples.write_raw(path, pkg, pt2f_samples.float_payloads(), encoding="json", program_bytes=text.encode())
    with pytest.raises(LimitError):
        pt2format.read(path)


def test_json_lone_surrogate_refused_like_invalid_utf8(tmp_path):
    pkg = pt2f_samples.tiny_package()
    pkg.producer = m.Producer(name="PRODUCER")
    text = _codecs.encode(pkg, "json").decode().replace("PRODUCER", "\\ud800x")
    path = tmp_path / "surrogate.pt2f"
    pt2f_samples.write_raw(path, pkg, pt2f_samples.float_payloads(), encoding="json", program_bytes=text.encode())
    with pytest.raises(EncodingError, match="surrogate"):
        pt2format.read(path)
    proc = subprocess.run([sys.executable, "-m", "pt2format", "inspect", str(path)], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "surrogate" in proc.stderr


def test_shard_that_is_a_directory_is_a_format_error(tmp_path):
    path = tmp_path / "m.pt2f"
    _sharded_package(path, tmp_path)
    os.remove(tmp_path / "m.shard1")
    os.mkdir(tmp_path / "m.shard1")
    with pytest.raises(FormatError, match="not a regular file"):
        pt2format.validate(path)


def test_shard_that_is_a_fifo_does_not_hang(tmp_path):
    path = tmp_path / "m.pt2f"
    _sharded_package(path, tmp_path)
    os.remove(tmp_path / "m.shard1")
    os.mkfifo(tmp_path / "m.shard1")
    code = f"import pt2format\ntry:\n    pt2format.validate({str(path)!r})\nexcept pt2format.FormatError as e:\n    print(type(e).__name__, e)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("FormatError") and "not a regular file" in proc.stdout


def test_overlapping_storages_refused(tmp_path):
    pkg = pt2f_samples.tiny_package(sizes=(32, 32))
    path = tmp_path / "ok.pt2f"
    payloads = pt2f_samples.float_payloads((32, 32))
    from pt2format._api import write_package
    write_package(path, pkg, payloads, fsync=False)
    crafted = tmp_path / "overlap.pt2f"

    def mutate(p):
        p.storages[1].offset = 0  # the second storage now reads the first one's bytes
        p.storages[1].checksum = p.storages[0].checksum

    crafting.craft(path, crafted, mutate)
    with pytest.raises(SegmentError, match="overlap"):
        pt2format.read(crafted)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("change", ["sizes-empty-dim", "sizes-reshaped", "dtype"])
def test_state_tensor_unlike_its_placeholder_refused(saved, tmp_path, encoding, change):
    """A weight stored with other sizes or dtype than the graph declares is refused at read, not at the first call."""
    package, _, _ = crafting.decode_file(saved[encoding])
    prog = package.programs[0]
    weight = next(e for e in prog.state if e.name == "lin.weight")
    declared = list(package.tensors[weight.tensor].sizes)

    def mutate(p):
        t = p.tensors[next(e for e in p.programs[0].state if e.name == "lin.weight").tensor]
        if change == "sizes-empty-dim":
            t.sizes = [declared[0], 0]
        elif change == "sizes-reshaped":  # same bytes, another shape
            t.sizes, t.strides = [declared[0] * declared[1], 1], [1, 1]
        else:  # same itemsize, another type
            assert t.dtype == m.ScalarType.FLOAT32
            t.dtype = m.ScalarType.INT32

    crafted = crafting.craft(saved[encoding], tmp_path / f"{change}.pt2f", mutate)
    err = _refused(crafted, pt2format.errors.ValidationError)
    assert "lin.weight" in str(err) and "placeholder" in str(err)
    # The unchanged file reads, and its weight is what torch exported.
    ep = pt2format.load(saved[encoding])
    assert list(ep.state_dict["lin.weight"].shape) == declared


# ---------------------------------------------------------------------------
# helpers

def _sharded_package(path, d):
    from pt2format._api import write_package

    pkg = pt2f_samples.tiny_package()
    write_package(path, pkg, pt2f_samples.float_payloads(), fsync=False)
    pkg2, payloads, _ = crafting.decode_file(path)
    shard_len = pt2f_samples.write_shard(d / "m.shard1", payloads)
    pkg2.shard_files = [m.ShardFile(name="m.shard1", size=shard_len)]
    pkg2.segments = [m.Segment(file=1, section=1)]
    pkg2.required_features |= 1
    pt2f_samples.write_raw(path, pkg2, ())
