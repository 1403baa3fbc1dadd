"""loaders/_input_checks.py: the input checks of load_module, against the guards torch's module() compiles."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree
from torch.export import _unlift

import pt2format
from mirror_programs import dynamic_ep, small_ep, small_inputs
from pt2format.loaders._input_checks import eq_spec, flatten_inputs


@pytest.mark.parametrize("a, b", [
    ((1, 2), (1, 2)), ((1, 2), [1, 2]), ({"a": 1, "b": 2}, {"b": 1, "a": 2}), ({"a": 1}, {"c": 1}),
    ((torch.Size([1, 2]),), ((1, 2),)), ((1, (2,)), (1, (2, 3))),
], ids=str)
def test_spec_equality_is_torchs(a, b):
    sa, sb = pytree.tree_flatten(a)[1], pytree.tree_flatten(b)[1]
    assert eq_spec(sa, sb) == _unlift.eq_spec(sa, sb)


def test_inputs_are_flattened_as_torch_flattens_them():
    ep = small_ep()
    in_spec = ep.call_spec.in_spec
    args, kwargs = small_inputs()
    flat = flatten_inputs(args, kwargs, in_spec)
    want = pytree.tree_flatten((args, kwargs))[0]
    assert len(flat) == len(want) and all(x is y for x, y in zip(flat, want))
    with pytest.raises(ValueError) as ours:
        flatten_inputs((args[0],), kwargs, in_spec)
    with pytest.raises(ValueError) as theirs:
        ep.module()(args[0], **kwargs)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


@pytest.fixture(scope="module")
def dynamic_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("checks") / "dyn.pt2f"
    pt2format.save(dynamic_ep(), path, progress=False, fsync=False)
    return path


@pytest.mark.parametrize("rows", [1, 2, 5, 64, 65])
def test_dynamic_dims_are_checked_as_torch_checks_them(dynamic_file, rows):
    x = torch.randn(rows, 3)
    module = pt2format.load_module(dynamic_file)
    assert module.pt2format_fallback is None  # the fast path: our checks, not torch's module()
    try:
        want = dynamic_ep().module()(x)
    except Exception as e:  # noqa: BLE001 - whatever torch raises, ours must raise the same type
        with pytest.raises(type(e)):
            module(x)
    else:
        assert torch.equal(module(x), want)


def test_a_static_size_is_checked_as_torch_checks_it(tmp_path):
    path = tmp_path / "small.pt2f"
    pt2format.save(small_ep(), path, progress=False, fsync=False)
    module = pt2format.load_module(path)
    args, kwargs = small_inputs()
    bad = (torch.randn(3, 4), args[1])
    with pytest.raises(Exception) as theirs:
        small_ep().module()(*bad, **kwargs)
    with pytest.raises(type(theirs.value)):
        module(*bad, **kwargs)
