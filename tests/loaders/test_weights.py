"""Weights apart from programs (loaders/_weights.py, exporter/_weights.py): attach, weight sets, weights-only files."""

from __future__ import annotations

import os

import pytest
import torch
from safetensors.torch import load_file, save_file

import pt2format
from pt2format.errors import LoadError


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Linear(8, 16)
        self.head = torch.nn.Linear(16, 4)
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return self.head(torch.relu(self.emb(x))) * self.scale


@pytest.fixture(scope="module")
def ep():
    torch.manual_seed(0)
    return torch.export.export(Net(), (torch.randn(3, 8),))


X = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))


def _save(ep, path, **kw):
    pt2format.save(ep, path, progress=False, fsync=False, **kw)


def _scaled(ep, k):
    return {n: (t * k).detach() for n, t in ep.state_dict.items()}


def _reference(ep, weights):
    """torch's own answer: the exported module with `weights` loaded by nn.Module.load_state_dict."""
    mod = ep.module()
    mod.load_state_dict(weights, strict=True)
    return mod(X)


def test_weights_false_then_attach_from_same_file(ep, tmp_path):
    p = tmp_path / "m.pt2f"
    _save(ep, p)
    bare = pt2format.load(p, weights=False)
    assert all(t.device.type == "meta" for t in bare.state_dict.values())
    out = pt2format.attach_weights(bare, p)
    assert out is bare
    assert torch.equal(bare.module()(X), ep.module()(X))
    assert isinstance(bare.state_dict["emb.weight"], torch.nn.Parameter)


def test_attach_from_another_pt2f(ep, tmp_path):
    _save(ep, tmp_path / "a.pt2f")
    other = torch.export.export(Net(), (torch.randn(3, 8),))  # same names, other values
    _save(other, tmp_path / "b.pt2f")
    bare = pt2format.load(tmp_path / "a.pt2f", weights=False)
    pt2format.attach_weights(bare, tmp_path / "b.pt2f")
    assert torch.equal(bare.module()(X), other.module()(X))


def test_attach_from_safetensors_matches_safetensors_load(ep, tmp_path):
    st = tmp_path / "w.safetensors"
    weights = _scaled(ep, 3)
    save_file(weights, str(st))
    _save(ep, tmp_path / "m.pt2f")
    bare = pt2format.load(tmp_path / "m.pt2f", weights=False)
    pt2format.attach_weights(bare, st)
    expected = load_file(str(st))
    for n, t in expected.items():
        assert torch.equal(bare.state_dict[n], t)
    assert torch.equal(bare.module()(X), _reference(ep, expected))


def test_weights_only_file(ep, tmp_path):
    w = tmp_path / "w.pt2f"
    pt2format.save_weights(_scaled(ep, -1), w, progress=False, fsync=False)
    with pt2format.read(w) as f:
        assert not f.package.programs and [s.name for s in f.package.weight_sets] == ["default"]
    _save(ep, tmp_path / "m.pt2f")
    bare = pt2format.load(tmp_path / "m.pt2f", weights=False)
    pt2format.attach_weights(bare, w)
    assert torch.equal(bare.module()(X), _reference(ep, _scaled(ep, -1)))


def test_one_program_several_weight_sets(ep, tmp_path):
    p = tmp_path / "m.pt2f"
    sets = {"double": _scaled(ep, 2), "half": _scaled(ep, 0.5)}
    _save(ep, p, weight_sets=sets)
    assert torch.equal(pt2format.load(p).module()(X), ep.module()(X))  # the program's own state by default
    for name, weights in sets.items():
        got = pt2format.load(p, weight_set=name)
        assert torch.equal(got.module()(X), _reference(ep, weights))
    with pytest.raises(LoadError, match="no weight set named 'third'"):
        pt2format.load(p, weight_set="third")


def test_weight_sets_share_storage_with_the_program(ep, tmp_path):
    """A set that reuses the program's own tensors adds no data."""
    plain, shared = tmp_path / "plain.pt2f", tmp_path / "shared.pt2f"
    _save(ep, plain)
    _save(ep, shared, weight_sets={"same": dict(ep.state_dict)})
    with pt2format.read(plain) as a, pt2format.read(shared) as b:
        assert len(a.package.storages) == len(b.package.storages)


def test_mismatches_are_listed_and_nothing_changes(ep, tmp_path):
    _save(ep, tmp_path / "m.pt2f")
    bare = pt2format.load(tmp_path / "m.pt2f", weights=False)
    bad = dict(ep.state_dict)
    bad["emb.weight"] = bad["emb.weight"].double()
    bad["head.bias"] = torch.zeros(5)
    del bad["head.weight"]
    bad["extra"] = torch.zeros(1)
    with pytest.raises(LoadError) as e:
        pt2format.attach_weights(bare, bad)
    msg = str(e.value)
    assert "missing: head.weight" in msg and "emb.weight: dtype torch.float64" in msg
    assert "head.bias: shape (5,), expected (4,)" in msg and "not in the program: extra" in msg
    assert all(t.device.type == "meta" for t in bare.state_dict.values())
    del bad["extra"]
    with pytest.raises(LoadError, match="missing"):
        pt2format.attach_weights(bare, bad, strict=False)


def test_tied_weight_stored_once_in_safetensors_is_filled(tmp_path):
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4, bias=False)
            self.b = torch.nn.Linear(4, 4, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    ep = torch.export.export(Tied(), (torch.randn(2, 4),))
    _save(ep, tmp_path / "t.pt2f")
    bare = pt2format.load(tmp_path / "t.pt2f", weights=False)
    names = set(bare.state_dict)
    st = tmp_path / "t.safetensors"
    first = sorted(names)[0]
    save_file({first: ep.state_dict[first].detach() * 2}, str(st))  # as Hugging Face does: one copy
    pt2format.attach_weights(bare, st)
    x = torch.randn(2, 4)
    w = ep.state_dict[first].detach() * 2
    assert torch.allclose(bare.module()(x), x @ w.T @ w.T)


def test_save_external_safetensors_points_at_it(ep, tmp_path):
    st = tmp_path / "model.safetensors"
    save_file({n: t.detach().contiguous() for n, t in ep.state_dict.items()}, str(st))
    _save(ep, tmp_path / "copy.pt2f")
    _save(ep, tmp_path / "ext.pt2f", external_data=st)
    with pt2format.read(tmp_path / "ext.pt2f") as f:
        assert [e.name for e in f.package.external_files] == ["model.safetensors"]
    assert os.path.getsize(tmp_path / "ext.pt2f") < os.path.getsize(tmp_path / "copy.pt2f")
    got = pt2format.load(tmp_path / "ext.pt2f", verify_data=True)
    assert torch.equal(got.module()(X), ep.module()(X))
    pt2format.validate(tmp_path / "ext.pt2f")


def test_sharded_save_loads_equal(ep, tmp_path):
    p = tmp_path / "m.pt2f"
    _save(ep, p, max_shard_size=600)
    assert len([n for n in os.listdir(tmp_path) if n.endswith(".pt2shard")]) >= 2
    got = pt2format.load(p, verify_data=True)
    assert torch.equal(got.module()(X), ep.module()(X))
    first = p.read_bytes()
    _save(got, p, max_shard_size=600)
    assert p.read_bytes() == first  # re-saving the loaded program gives the same bytes


def test_weight_set_from_bytes_and_file_objects(ep, tmp_path, monkeypatch):
    """Issue 25, rough edge 2: every source `load` accepts works with weight_set=, and is decoded once."""
    import io

    import pt2format._api as api

    p = tmp_path / "m.pt2f"
    weights = _scaled(ep, 3)
    _save(ep, p, weight_sets={"triple": weights})
    want = _reference(ep, weights)
    reads = []
    real_read = api.read
    monkeypatch.setattr(api, "read", lambda *a, **k: reads.append(a[0]) or real_read(*a, **k))
    data = p.read_bytes()
    for source in (p, str(p), data, bytearray(data), memoryview(data), io.BytesIO(data)):
        reads.clear()
        got = pt2format.load(source, weight_set="triple")
        assert torch.equal(got.module()(X), want), type(source)
        assert len(reads) == 1, (type(source), len(reads))  # one read (decode and validation) per load
    with pytest.raises(LoadError, match="no weight set named 'third'"):
        pt2format.load(io.BytesIO(data), weight_set="third")
