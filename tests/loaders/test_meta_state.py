"""Meta-device state (exporter/_tensors.py, loaders/_state.py): saved as shape, dtype and strides without data.

Every expectation comes from torch: the exported program's own state (shapes,
strides, dtypes, aliasing), its module() on meta inputs, and the same module
built on CPU for the weights attached afterwards.
"""

from __future__ import annotations

import pytest
import torch

import pt2format
from pt2format._container.header import FEATURE_META_STORAGES, KNOWN_FEATURES
from pt2format._validate import validate_package
from pt2format.errors import UnsupportedFeatureError, ValidationError


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 3))
        self.register_buffer("tail", self.scale[1:], persistent=False)  # a view: aliasing must survive

    def forward(self, x):
        return self.lin(x) * self.scale + self.tail.sum()


def _export_on_meta():
    with torch.device("meta"):
        m = Net()
    return torch.export.export(m, (torch.randn(2, 4, device="meta"),))


@pytest.fixture(scope="module")
def ep():
    return _export_on_meta()


def _state(ep):
    out = {f"state_dict:{k}": v for k, v in ep.state_dict.items()}
    out.update({f"constants:{k}": v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)})
    return out


def _save(ep, path, **kw):
    pt2format.save(ep, path, progress=False, fsync=False, **kw)


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
def test_meta_state_round_trips_as_meta(ep, tmp_path, encoding):
    p = tmp_path / "m.pt2f"
    _save(ep, p, encoding=encoding)
    loaded = pt2format.load(p)
    want, got = _state(ep), _state(loaded)
    assert sorted(want) == sorted(got)
    for k, t in want.items():
        g = got[k]
        assert g.device.type == "meta", k
        assert (g.dtype, tuple(g.shape), g.stride(), g.storage_offset(), g.requires_grad, type(g)) == \
            (t.dtype, tuple(t.shape), t.stride(), t.storage_offset(), t.requires_grad, type(t)), k
    # The non-persistent view shares its base's storage, as in torch's program.
    same = {k: v.untyped_storage()._cdata for k, v in want.items()}
    same_l = {k: v.untyped_storage()._cdata for k, v in got.items()}
    assert (same["constants:tail"] == same["state_dict:scale"]) == (same_l["constants:tail"] == same_l["state_dict:scale"])
    x = torch.randn(2, 4, device="meta")
    a, b = ep.module()(x), loaded.module()(x)
    assert (b.device.type, b.dtype, tuple(b.shape)) == (a.device.type, a.dtype, tuple(a.shape))


def test_meta_state_file_holds_no_data_and_sets_feature_bit(ep, tmp_path):
    p = tmp_path / "m.pt2f"
    _save(ep, p)
    pkg = pt2format.read(p)
    pkg = getattr(pkg, "package", pkg)
    assert pkg.required_features & FEATURE_META_STORAGES
    assert pkg.storages and all(s.size == 0 and s.meta_nbytes > 0 for s in pkg.storages)
    tensors = list(_state(ep).values()) + [x for x in ep.example_inputs[0] if isinstance(x, torch.Tensor)]
    want = {v.untyped_storage().nbytes() for v in tensors}  # state and the (meta) example input
    assert {s.meta_nbytes for s in pkg.storages} == want


def test_resave_is_identical(ep, tmp_path):
    _save(ep, tmp_path / "a.pt2f")
    _save(pt2format.load(tmp_path / "a.pt2f"), tmp_path / "b.pt2f")
    assert (tmp_path / "a.pt2f").read_bytes() == (tmp_path / "b.pt2f").read_bytes()


def test_attach_weights_fills_meta_state(ep, tmp_path):
    _save(ep, tmp_path / "m.pt2f")
    loaded = pt2format.load(tmp_path / "m.pt2f")
    torch.manual_seed(0)
    real = Net()
    weights = dict(real.state_dict())
    weights["tail"] = real.tail
    pt2format.attach_weights(loaded, weights)
    x = torch.randn(2, 4)
    torch.testing.assert_close(loaded.module()(x), real(x), rtol=0, atol=0)


def test_reader_without_the_feature_refuses_by_name(ep, tmp_path):
    """What a 1.0 reader does: bit 2 is unknown to it, so it refuses with UnsupportedFeatureError."""
    _save(ep, tmp_path / "m.pt2f")
    pkg = pt2format.read(tmp_path / "m.pt2f")
    pkg = getattr(pkg, "package", pkg)
    with pytest.raises(UnsupportedFeatureError, match="unknown features 0x4"):
        validate_package(pkg, known_features=KNOWN_FEATURES & ~FEATURE_META_STORAGES)


def test_meta_storage_without_feature_bit_rejected(ep, tmp_path):
    _save(ep, tmp_path / "m.pt2f")
    pkg = pt2format.read(tmp_path / "m.pt2f")
    pkg = getattr(pkg, "package", pkg)
    pkg.required_features &= ~FEATURE_META_STORAGES
    with pytest.raises(ValidationError, match="bit 2"):
        validate_package(pkg)


def test_tensor_on_meta_storage_must_be_meta(ep, tmp_path):
    _save(ep, tmp_path / "m.pt2f")
    pkg = pt2format.read(tmp_path / "m.pt2f")
    pkg = getattr(pkg, "package", pkg)
    pkg.tensors[0].device = type(pkg.tensors[0].device)(type="cpu", index=-1)
    with pytest.raises(ValidationError, match="meta device"):
        validate_package(pkg)


def test_program_from_torch_load_with_meta_state_saves_and_loads(ep, tmp_path):
    """torch.export.load gives a meta view a storage sized for its elements but a nonzero
    storage offset (torch does not keep meta storage sizes consistent); such a program still
    saves, and comes back with the views torch's load gave."""
    torch.export.save(ep, tmp_path / "m.pt2")
    theirs = torch.export.load(tmp_path / "m.pt2")
    pt2format.save(theirs, tmp_path / "m.pt2f", progress=False, fsync=False)
    ours = pt2format.load(tmp_path / "m.pt2f")

    def views(p):
        return {k: (v.device.type, v.dtype, tuple(v.shape), v.stride(), v.storage_offset())
                for k, v in [*p.state_dict.items(), *p.constants.items()]}
    assert views(ours) == views(theirs)
