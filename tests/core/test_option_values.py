"""Option values are checked before any work: a wrong type or a value outside an option's choices is refused first.

A misspelled ``encoding`` was refused only after the whole program had been
exported; now every public function and DCP class checks every option's value
against its table entry (pt2format/_options.py) on entry, before it opens,
imports or converts anything.
"""

from __future__ import annotations

import pytest

import pt2format
from pt2format import _options

#: A value each annotation of the tables refuses (written here, not derived from the checker).
WRONG = {
    "bool": "yes", "bool | None": "yes", "int": "3", "str": 3, "str | None": 3, "int | str | None": 3.5,
    'Literal["flatbuffers", "msgpack", "json"]': "jsn", 'Literal["pt", "np"]': "tf",
    "Mapping[str, Any] | None": 3, "Mapping[str, bytes | str] | None": 3, "Mapping[str, str] | None": 3,
    "dict[str, bytes] | None": 3, "dict[str, str] | None": 3, "Iterable[type]": 3,
}
MISSING = "no/such/dir/x.pt2f"  # any work at all would end in an OSError naming it
CALLS = {
    "SAVE": lambda **kw: pt2format.save(None, MISSING, **kw),
    "LOAD": lambda **kw: pt2format.load(MISSING, **kw),
    "LOAD_MODULE": lambda **kw: pt2format.load_module(MISSING, **kw),
    "SAVE_WEIGHTS": lambda **kw: pt2format.save_weights({}, MISSING, **kw),
    "ATTACH_WEIGHTS": lambda **kw: pt2format.attach_weights(None, MISSING, **kw),
    "READ": lambda **kw: pt2format.read(MISSING, **kw),
    "OPEN": lambda **kw: pt2format.open(MISSING, **kw),
    "VALIDATE": lambda **kw: pt2format.validate(MISSING, **kw),
    "FROM_TORCH": lambda **kw: pt2format.from_torch(MISSING, MISSING, **kw),
    "TO_TORCH": lambda **kw: pt2format.to_torch(MISSING, MISSING, **kw),
    "DCP_READER": lambda **kw: pt2format.dcp.StorageReader(MISSING, **kw),
    "DCP_WRITER": lambda **kw: pt2format.dcp.StorageWriter(MISSING, **kw),
}
CASES = [(table, o) for table in CALLS for o in getattr(_options, table).options if o.annotation != "Any"]


@pytest.mark.parametrize("table,option", CASES, ids=[f"{t}-{o.name}" for t, o in CASES])
def test_a_wrong_option_value_is_refused_before_any_work(table, option):
    bad = WRONG[option.annotation]
    kind = ValueError if option.annotation.startswith("Literal") else TypeError
    with pytest.raises(kind, match=rf"{option.name} must be") as e:
        CALLS[table](**{option.name: bad})
    assert not isinstance(e.value, OSError) and repr(bad) in str(e.value)


def test_every_option_has_a_wrong_value_here():
    """A new kind of annotation in the tables gets a wrong value above (and a run-time check in _options)."""
    assert {o.annotation for _, o in CASES} <= set(WRONG)


def test_a_misspelled_encoding_is_refused_before_the_program_is_exported(monkeypatch, tmp_path):
    """The issue's case: save of a real program with encoding="jsn" never reaches the exporter."""
    import torch

    import pt2format.exporter as exporter

    ep = torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    calls = []
    monkeypatch.setattr(exporter, "save_programs", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError, match='encoding must be one of "flatbuffers", "msgpack", "json"; got \'jsn\''):
        pt2format.save(ep, tmp_path / "m.pt2f", encoding="jsn")
    assert calls == [] and not (tmp_path / "m.pt2f").exists()
    pt2format.save(ep, tmp_path / "m.pt2f", encoding="json")  # the right spelling reaches it
    assert len(calls) == 1


def test_right_values_reach_the_dcp_classes(tmp_path):
    """The check wraps the DCP classes' __init__ without changing what it does with values it accepts."""
    import torch

    pt2format.save_weights({"w": torch.ones(2, 3)}, tmp_path / "w.pt2f", fsync=False)
    reader = pt2format.dcp.StorageReader(tmp_path / "w.pt2f", verify_data=True, mmap=False)
    assert reader.read_metadata().state_dict_metadata["w"].size == torch.Size([2, 3])
    writer = pt2format.dcp.StorageWriter(tmp_path / "out.pt2f", encoding="json", fsync=False)
    assert writer.validate_checkpoint_id(tmp_path / "out.pt2f")
