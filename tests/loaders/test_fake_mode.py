"""loaders/_fake_mode.py builds, without torch._dynamo, the FakeTensorMode torch's deserializer builds."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from pt2format.loaders._fake_mode import _static_fake_mode


def _state(mode) -> dict:
    d = dict(vars(mode))
    d.pop("_stack_trace")  # where it was made: differs by construction
    d.pop("shape_env", None)
    conv = d.pop("fake_tensor_converter")
    d["converter"] = (type(conv), sorted(vars(conv)), conv.export)
    return d


def test_static_fake_mode_matches_torch_constructor():
    ours = _static_fake_mode()
    theirs = FakeTensorMode(allow_fallback_kernels=False, allow_non_fake_inputs=True,
                            shape_env=ShapeEnv(assume_static_by_default=True))
    assert isinstance(ours, FakeTensorMode)
    assert _state(ours) == _state(theirs)
    env = ours.shape_env  # created on first access, once; the mode is then a plain FakeTensorMode
    assert type(ours) is FakeTensorMode
    assert isinstance(env, ShapeEnv) and ours.shape_env is env
    assert env.settings == theirs.shape_env.settings
    assert _state(ours) == _state(theirs)


def test_entering_static_fake_mode_makes_it_torchs():
    mode = _static_fake_mode()
    with mode:
        pass
    assert type(mode) is FakeTensorMode and isinstance(mode.shape_env, ShapeEnv)


def test_static_fake_mode_makes_working_fake_tensors():
    mode = _static_fake_mode()
    with mode:
        x = torch.empty(2, 3)
        y = (x @ x.T).relu()
    assert mode.is_our_fake(y) and y.shape == (2, 2) and y.dtype == torch.float32
