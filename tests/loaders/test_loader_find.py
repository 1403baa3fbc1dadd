"""loaders/_find.py: which program a load picks, as torch.export.load picks its one program."""

from __future__ import annotations

import pytest

from pt2format._generated.model import Package, Program
from pt2format.errors import LoadError
from pt2format.loaders._find import find_program


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
