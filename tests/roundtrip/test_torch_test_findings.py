"""Programs from PyTorch's own export tests that pt2format used to refuse or lose (issue 40, section 4).

Each is saved and loaded by torch (`torch.export.save`/`load`) and by
pt2format, and what a user observes of the two loaded programs is compared:
example inputs, `module()`'s guard function and its verdicts, state values,
outputs. Where torch's loader has a bug of its own, the test says so and
compares with the exported program instead.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import warnings

import pytest
import torch
import torch.nn as nn

import pt2format
from conformance.corpus.torch_export_tests import Inp1, _DataclassInput, _register_inp1


def _torch_round_trip(ep):
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    logging.disable(logging.WARNING)  # torch's loader logs its pickle fallback for fake example inputs
    try:
        return torch.export.load(buf)
    finally:
        logging.disable(logging.NOTSET)


def _ours(ep):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a dropped example input warns: that is the failure
        pt2format.save(ep, buf)
    return pt2format.load(buf.getvalue()), buf.getvalue()


def _outcome(f):
    try:
        return "ok", f()
    except Exception as e:  # noqa: BLE001 - the verdict is what is compared
        return type(e).__name__, str(e)


def _same_types(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same_types(a[k], b[k]) for k in a)
    if dataclasses.is_dataclass(a):
        return all(_same_types(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return True


class _SizeInput(nn.Module):
    def forward(self, theta, size):
        return torch.nn.functional.affine_grid(theta, size, align_corners=False)


def test_size_input_keeps_its_example_inputs_as_torch_does():
    """test_export.py::test_size_input: a torch.Size example input used to drop every example input."""
    ep = torch.export.export(_SizeInput(), (torch.ones((1, 2, 3)), torch.Size((1, 3, 24, 24))))
    theirs = _torch_round_trip(ep)
    ours, saved = _ours(ep)
    assert _same_types(ours.example_inputs, theirs.example_inputs)
    assert ours.example_inputs[0][1] == theirs.example_inputs[0][1]
    assert hasattr(ours.module(), "_guards_fn") == hasattr(theirs.module(), "_guards_fn")
    for args in [(torch.ones(1, 2, 3), torch.Size((1, 3, 8, 8))), (torch.ones(2, 2, 3), torch.Size((1, 3, 24, 24)))]:
        a, b = _outcome(lambda: ours.module()(*args)), _outcome(lambda: theirs.module()(*args))
        assert a[0] == b[0] and (a[0] == "ok" and torch.equal(a[1], b[1]) or a[1] == b[1])
    again = io.BytesIO()
    pt2format.save(ours, again)
    assert again.getvalue() == saved


def test_registered_dataclass_example_input_comes_back_as_torchs():
    """test_export.py::test_pytree_register_data_class: the dataclass example input is stored as the tuple of
    its children and rebuilt with the program's in_spec."""
    _register_inp1()
    ep = torch.export.export(_DataclassInput(), (Inp1(torch.ones(2), [torch.ones(2), torch.ones(2)],
                                                      {"a": torch.ones(2)}),))
    theirs = _torch_round_trip(ep)
    ours, _ = _ours(ep)
    assert _same_types(ours.example_inputs, theirs.example_inputs)
    wrong = Inp1(torch.ones(3), [torch.ones(3), torch.ones(3)], {"a": torch.ones(3)})
    assert _outcome(lambda: ours.module()(wrong)) == _outcome(lambda: theirs.module()(wrong))


class _FakeWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.foo = nn.Parameter(torch.randn(3, 3))
        self.register_buffer("bar", torch.randn(3, 3), persistent=False)
        self.register_buffer("baz", torch.randn(3, 3), persistent=True)

    def forward(self, x):
        return self.foo + x + self.bar + self.baz


@pytest.fixture(scope="module")
def fake_weights_ep():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    with FakeTensorMode(shape_env=ShapeEnv(tracked_fakes=[])):
        m = _FakeWeights()
    return torch.export.export(m, (torch.randn(3, 3),))


def _state(ep):
    return {k: (type(v), v.device, v.shape, v.stride(), v.dtype, v.tolist())
            for k, v in list(ep.state_dict.items()) + list(ep.constants.items())}


def test_fake_weights_load_as_torchs_zeros(fake_weights_ep):
    """test_export.py::test_fake_weights: torch saves fake weights with no bytes and loads zeros on their
    device; pt2format used to refuse them."""
    theirs = _torch_round_trip(fake_weights_ep)
    ours, _ = _ours(fake_weights_ep)
    assert _state(ours) == _state(theirs)
    x = torch.randn(3, 3)
    assert torch.equal(ours.module()(x), theirs.module()(x))
    # torch's loader gives every fake weight one zero storage (their data pointers are all 0), so its buffers
    # come back as views of the parameter with requires_grad=True (a torch bug); ours keep the exported
    # program's requires_grad and one storage each.
    exported = {k: v.requires_grad for k, v in fake_weights_ep.state_dict.items()}
    assert {k: v.requires_grad for k, v in ours.state_dict.items()} == exported
    st = ours.state_dict
    assert st["foo"].untyped_storage().data_ptr() != st["baz"].untyped_storage().data_ptr()


def test_fake_weights_take_no_bytes_in_the_file(fake_weights_ep):
    """Stored as torch stores them: a storage without data per fake storage, none of its bytes in the file."""
    buf = io.BytesIO()
    pt2format.save(fake_weights_ep, buf)
    package = pt2format.read(buf.getvalue()).package
    rows = [package.tensors[e.tensor] for e in package.programs[0].state]
    assert len(rows) == 3 and {r.fake_device.type for r in rows} == {"cpu"}
    assert all(package.storages[r.storage].size == 0 and package.storages[r.storage].meta_nbytes == 36 for r in rows)
    assert pt2format.load(buf.getvalue(), weights=False).state_dict["foo"].device.type == "meta"


def test_fake_device_on_a_tensor_with_data_is_refused(fake_weights_ep, tmp_path):
    """`fake_device` means "no bytes, zeros here": on a row that is not a meta tensor on a storage without data
    it contradicts the file, and the loader says where."""
    from crafting import craft

    src, dst = tmp_path / "fake.pt2f", tmp_path / "bad.pt2f"
    pt2format.save(fake_weights_ep, src)

    def mutate(package):
        state = package.programs[0].state
        real = package.tensors[next(e.tensor for e in state if e.name == "foo")]
        plain = next(t for t in package.tensors if t.fake_device is None)  # the example input's row
        plain.fake_device = real.fake_device

    craft(src, dst, mutate)
    with pytest.raises(pt2format.LoadError, match="fake_device") as err:
        pt2format.load(dst)
    assert "fake_device" in str(err.value.path)
