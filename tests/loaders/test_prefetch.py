"""load(prefetch=True) gives the same program and the same weights; the prefetch thread only reads."""

from __future__ import annotations

import torch

import pt2format
from pt2format.loaders import _prefetch


def _saved(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    ep = torch.export.export(model, (torch.randn(3, 64),))
    path = tmp_path / "m.pt2f"
    pt2format.save(ep, path, progress=False)
    return ep, path


def test_prefetch_load_matches_plain_load(tmp_path, monkeypatch):
    ep, path = _saved(tmp_path)
    started = []
    real = _prefetch.prefetch
    monkeypatch.setattr(_prefetch, "prefetch", lambda p, views: started.append(real(p, views)) or started[-1])
    loaded = pt2format.load(path, prefetch=True)
    assert len(started) == 1
    started[0].join(timeout=60)
    assert not started[0].is_alive()
    plain = pt2format.load(path)
    for name, t in ep.state_dict.items():
        assert torch.equal(loaded.state_dict[name], t) and torch.equal(plain.state_dict[name], t)
    x = torch.randn(3, 64)
    assert torch.equal(loaded.module()(x), ep.module()(x))
    assert path.read_bytes() == open(path, "rb").read()  # reading ahead never writes


def test_prefetch_skipped_without_weights(tmp_path, monkeypatch):
    _, path = _saved(tmp_path)
    started = []
    monkeypatch.setattr(_prefetch, "prefetch", lambda p, views: started.append(p))
    pt2format.load(path, prefetch=True, weights=False)
    assert started == []


def test_touch_survives_released_views():
    buf = bytearray(3 * 4096)
    view = memoryview(buf)
    _prefetch._touch([view[:4096]])  # a live view: touched without error
    released = memoryview(bytearray(10))
    released.release()
    _prefetch._touch([released])  # a released view ends the walk quietly
