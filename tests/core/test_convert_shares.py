"""`convert` to FlatBuffers shares the `pt2f_shared` tables of a JSON or MessagePack file as the exporter does.

A tree decoded from JSON or MessagePack has one object per reference; the
FlatBuffers writer shares by identity. `convert` first points equal objects at
one (pt2format/_codecs/share.py), so a converted program section is the one
`save` writes, byte for byte.
"""

from __future__ import annotations

import pytest
import torch

import pt2format
from pt2format import _api
from pt2format._codecs.share import share_equal
from pt2format._container.reader import ContainerFile
from pt2format._generated import model as m


class _Stack(torch.nn.Module):
    """Values of a few shapes under two module stacks (TensorMeta and ModuleStackEntry both shared)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())

    def forward(self, x):
        for _ in range(5):
            x = torch.tanh(self.a(x)) + 0.5
        return self.b(x).t().contiguous(), x.sum(0)


def _program_section(path) -> bytes:
    c = ContainerFile(path)
    try:
        return bytes(c.section_view(0))
    finally:
        c.close()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("via", ["json", "msgpack"])
def test_converted_program_section_is_the_saved_one(tmp_path, dynamic, via):
    shapes = ({0: torch.export.Dim("batch", min=2, max=32)},) if dynamic else None
    ep = torch.export.export(_Stack(), (torch.randn(4, 8),), dynamic_shapes=shapes)
    pt2format.save(ep, tmp_path / "saved.pt2f")
    pt2format.save(ep, tmp_path / "other.pt2f", encoding=via)
    _api.convert(tmp_path / "other.pt2f", tmp_path / "converted.pt2f", "flatbuffers", fsync=False)
    saved = _program_section(tmp_path / "saved.pt2f")
    tree = pt2format.read(tmp_path / "converted.pt2f").package
    values = tree.programs[0].graph.tensor_values
    assert len({id(v.meta) for v in values}) < len(values)  # the case: shared metas
    assert _program_section(tmp_path / "converted.pt2f") == saved
    x = torch.randn(6 if dynamic else 4, 8)
    for a, b in zip(pt2format.load(tmp_path / "converted.pt2f").module()(x), ep.module()(x)):
        assert torch.equal(a, b)


def _meta(sizes, device_index=None, offset=0):
    return m.TensorMeta(dtype=m.ScalarType.FLOAT32, sizes=[m.SymInt(expr=-1, value=s) for s in sizes],
                        strides=[m.SymInt(expr=-1, value=1) for _ in sizes],
                        storage_offset=m.SymInt(expr=-1, value=offset), requires_grad=False,
                        device=m.Device(type="cpu", index=device_index), layout=m.Layout.STRIDED)


def test_equal_objects_become_one_and_others_stay_apart():
    values = [m.TensorValue(name=f"v{i}", meta=meta) for i, meta in enumerate(
        [_meta([2, 3]), _meta([2, 3]), _meta([3, 2]), _meta([2, 3], device_index=0), _meta([2, 3], offset=1),
         _meta([2, 3])])]
    g = m.Graph(tensor_values=values)
    assert share_equal(g) == 2
    ids = [id(v.meta) for v in values]
    assert ids[0] == ids[1] == ids[5] and len(set(ids)) == 4


def test_floats_are_equal_by_their_bits():
    from pt2format._codecs.share import _key

    assert _key(m.FloatValue(value=0.0)) != _key(m.FloatValue(value=-0.0))
    assert _key(m.FloatValue(value=float("nan"))) == _key(m.FloatValue(value=float("nan")))
    assert _key(m.FloatValue(value=1.5)) == _key(m.FloatValue(value=1.5))
