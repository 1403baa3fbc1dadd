"""pt2format/_find.py: which program a load picks, as torch.export.load picks its one program."""

from __future__ import annotations

import pytest

from pt2format._generated.model import Package, Program
from pt2format.errors import LoadError
from pt2format._find import find_program


def _pkg(*names):
    return Package(programs=[Program(name=n) for n in names])


def test_the_only_program_or_forward_is_the_default():
    assert find_program(_pkg("decode"), None).name == "decode"
    assert find_program(_pkg("decode", "forward"), None).name == "forward"


def test_a_named_program_is_found_and_a_missing_one_named():
    assert find_program(_pkg("decode", "prefill"), "prefill").name == "prefill"
    with pytest.raises(LoadError) as e:
        find_program(_pkg("decode", "prefill"), "forward")
    assert "forward" in str(e.value)


def test_several_programs_without_forward_need_a_name():
    with pytest.raises(LoadError) as e:
        find_program(_pkg("decode", "prefill"), None)
    assert "decode" in str(e.value) and "prefill" in str(e.value)


def test_a_weights_only_file_has_no_program():
    with pytest.raises(LoadError):
        find_program(_pkg(), None)


def test_open_and_load_choose_and_refuse_alike(tmp_path):
    """`open(...).program()` states no rule of its own: the same choice, the same error, as `load`."""
    torch = pytest.importorskip("torch")
    import pt2format
    from pt2format.errors import ProgramNotFoundError

    class M(torch.nn.Module):
        def forward(self, x):
            return x + 1

    ep = torch.export.export(M(), (torch.ones(2),))
    path = tmp_path / "two.pt2f"
    pt2format.save({"decode": ep, "prefill": ep}, path)
    refusals = []
    with pt2format.open(path) as f:
        for name in (None, "forward"):
            with pytest.raises(ProgramNotFoundError) as by_open:
                f.program(name)
            with pytest.raises(ProgramNotFoundError) as by_load:
                pt2format.load(path, program=name)
            refusals.append((str(by_open.value), str(by_load.value)))
        assert f.program("prefill").name == "prefill"
    for from_open, from_load in refusals:
        assert from_open.split(": ", 1)[-1] == from_load.split(": ", 1)[-1]
    with pt2format.open(path) as f, pytest.raises(KeyError):  # a lookup by name, as a mapping's
        f.program("nope")
