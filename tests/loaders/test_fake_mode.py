"""loaders/_fake_mode.py builds, without torch._dynamo, the same FakeTensorMode torch's constructor builds."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from pt2format.loaders._fake_mode import _static_fake_mode


def _state(mode) -> dict:
    d = dict(vars(mode))
    d.pop("_stack_trace")  # where it was made: differs by construction
    conv = d.pop("fake_tensor_converter")
    d["converter"] = (type(conv), sorted(vars(conv)), conv.export)
    return d


def test_static_fake_mode_matches_torch_constructor():
    ours = _static_fake_mode()
    theirs = FakeTensorMode(allow_fallback_kernels=False, allow_non_fake_inputs=True, shape_env=None)
    assert type(ours) is type(theirs)
    assert _state(ours) == _state(theirs)


def test_static_fake_mode_makes_working_fake_tensors():
    mode = _static_fake_mode()
    with mode:
        x = torch.empty(2, 3)
        y = (x @ x.T).relu()
    assert mode.is_our_fake(y) and y.shape == (2, 2) and y.dtype == torch.float32
