"""Enum members, dataclasses and namedtuples in a tensor subclass's flatten context (schema 1.1).

They are stored as class name plus member name or fields (EnumValue /
ObjectValue), never pickled, and rebuilt only for classes the user trusts:
`allow_subclasses`, or torch's safe-globals list (the one
`torch.load(weights_only=True)` trusts). Every comparison is against the
context torch's own `__tensor_flatten__` returned for the saved tensor.
"""

from __future__ import annotations

import dataclasses
import enum

import pytest
import torch

import pt2format
from pt2format._generated import model as m
from pt2format.errors import ExportError, LoadError, ValidationError
from pt2format.loaders._weights import read_weights

import crafting
import subclass_samples
from subclass_samples import (RECORD_CLASSES, Granule, Mode, PairTensor, RecordModule, Settings, Span,
                              record_mutations, record_pair)

TRUSTED = [PairTensor, *RECORD_CLASSES]


def _saved(tmp_path, encoding="flatbuffers"):
    want = record_pair()
    path = tmp_path / f"w.{encoding}.pt2f"
    pt2format.save_weights({"w": want}, path, progress=False, fsync=False, encoding=encoding)
    return want, path


def _same_records(want, got):
    """Equal values of the same classes, all the way down (dataclass == alone ignores the classes of fields)."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            _same_records(want[k], got[k])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(want, got):
            _same_records(a, b)
    elif dataclasses.is_dataclass(want):
        for f in dataclasses.fields(want):
            _same_records(getattr(want, f.name), getattr(got, f.name))
    else:
        assert got == want


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
def test_records_roundtrip_when_trusted_by_allow_subclasses(tmp_path, encoding):
    want, path = _saved(tmp_path, encoding)
    got = read_weights(path, allow_subclasses=TRUSTED)["w"]
    assert type(got) is PairTensor and torch.equal(got.a, want.a) and torch.equal(got.b, want.b)
    _same_records(want.__tensor_flatten__()[1], got.__tensor_flatten__()[1])
    # no __init__ / __post_init__ ran: `derived` keeps the saved value, as torch.load(weights_only=True) keeps it
    assert got.extra["settings"].derived == want.extra["settings"].derived == 7


def test_records_trusted_by_torch_safe_globals(tmp_path):
    want, path = _saved(tmp_path)
    with torch.serialization.safe_globals(TRUSTED):
        got = read_weights(path)["w"]
    _same_records(want.__tensor_flatten__()[1], got.__tensor_flatten__()[1])
    # the list is read on every load: outside the context manager the classes are not trusted again
    with pytest.raises(LoadError, match="not allowed"):
        read_weights(path)


@pytest.mark.parametrize("missing", RECORD_CLASSES, ids=lambda c: c.__name__)
def test_an_untrusted_record_class_is_named(tmp_path, missing):
    _, path = _saved(tmp_path)
    with pytest.raises(LoadError, match="is not trusted") as e:
        read_weights(path, allow_subclasses=[c for c in TRUSTED if c is not missing])
    assert e.value.got == f"subclass_samples.{missing.__qualname__}"
    assert "subclass.context" in e.value.path and e.value.path.endswith("class_fqn")


def test_a_class_of_the_same_name_with_other_fields_is_refused(tmp_path):
    _, path = _saved(tmp_path)
    impostor = dataclasses.make_dataclass("Settings", [("granule", object), ("mode", object)])
    impostor.__module__ = "subclass_samples"
    with pytest.raises(LoadError, match="other fields than the file"):
        read_weights(path, allow_subclasses=[PairTensor, Mode, Granule, Span, impostor])


def test_an_enum_without_the_member_is_refused(tmp_path):
    _, path = _saved(tmp_path)
    impostor = enum.Enum("Mode", {"FAST": "fast"}, module="subclass_samples")
    with pytest.raises(LoadError, match="has no member 'EXACT'"):
        read_weights(path, allow_subclasses=[PairTensor, impostor, Granule, Settings, Span])


def test_a_class_kind_mismatch_is_refused(tmp_path):
    """A namedtuple entry resolved to a dataclass (or the reverse) is refused, not coerced."""
    _, path = _saved(tmp_path)
    impostor = dataclasses.make_dataclass("Span", [("lo", int), ("hi", int)])
    impostor.__module__ = "subclass_samples"
    with pytest.raises(LoadError, match="not a namedtuple class"):
        read_weights(path, allow_subclasses=[PairTensor, Mode, Granule, Settings, impostor])


def test_allow_subclasses_refuses_other_classes(tmp_path):
    _, path = _saved(tmp_path)
    with pytest.raises(TypeError, match="enums, dataclasses"):
        read_weights(path, allow_subclasses=[PairTensor, dict])


def test_a_local_record_class_is_refused_at_save(tmp_path):
    @dataclasses.dataclass
    class Local:
        x: int

    t = PairTensor(torch.ones(2), torch.zeros(2), "t", {"local": Local(1)})
    with pytest.raises(ExportError, match="defined inside a function"):
        pt2format.save_weights({"w": t}, tmp_path / "w.pt2f", progress=False, fsync=False)


@pytest.fixture(scope="module")
def program_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "p.pt2f"
    pt2format.save(torch.export.export(RecordModule(), (torch.randn(3),)), path, progress=False, fsync=False)
    return path


def test_program_with_records_in_a_parameter(program_file):
    m_ = RecordModule()
    x = torch.randn(3)
    ep = torch.export.export(m_, (x,))
    ep2 = pt2format.load(program_file, allow_subclasses=TRUSTED)
    want, got = ep.module()(x), ep2.module()(x)
    assert type(got) is PairTensor and torch.equal(got.a, want.a) and torch.equal(got.b, want.b)
    _same_records(ep.state_dict["p"].__tensor_flatten__()[1], ep2.state_dict["p"].__tensor_flatten__()[1])


@pytest.mark.parametrize("name,mutate,message", record_mutations(), ids=[r[0] for r in record_mutations()])
def test_malformed_records_are_refused(program_file, tmp_path, name, mutate, message):
    bad = crafting.craft(program_file, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(ValidationError, match=message):
        pt2format.validate(bad)
    with pytest.raises(ValidationError, match=message):
        pt2format.load(bad, allow_subclasses=TRUSTED)


def test_saved_records_are_deterministic(tmp_path):
    _, a = _saved(tmp_path)
    got = read_weights(a, allow_subclasses=TRUSTED)["w"]
    b = tmp_path / "again.pt2f"
    pt2format.save_weights({"w": got}, b, progress=False, fsync=False)
    assert a.read_bytes() == b.read_bytes()
    assert subclass_samples.records()["settings"].derived == 7
