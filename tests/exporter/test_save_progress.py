"""save's progress bar: follows the bytes the writer writes, and stays off when stderr is not a terminal."""

from __future__ import annotations

import io
import sys

import torch

import pt2format
from pt2format.exporter import _save


class _RecordingBar:
    """Stands in for tqdm: records every position the bar is moved to."""

    instances: list = []

    def __init__(self, total=1, **kw):
        self.total, self.n, self.positions, self.closed = total, 0, [], False
        _RecordingBar.instances.append(self)

    def update(self, k):
        self.n += k
        self.positions.append(self.n)

    def close(self):
        self.closed = True


def _ep():
    return torch.export.export(torch.nn.Linear(256, 256), (torch.randn(1, 256),))


def test_bar_moves_with_the_written_bytes(tmp_path, monkeypatch):
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", _RecordingBar)
    monkeypatch.setattr("pt2format._container.writer._WRITE_CHUNK", 64 << 10)  # several writes for 256 KiB
    _RecordingBar.instances.clear()
    pt2format.save(_ep(), tmp_path / "m.pt2f", progress=True)
    (bar,) = _RecordingBar.instances
    assert bar.closed and bar.n == bar.total
    assert len(bar.positions) > 3 and bar.positions == sorted(bar.positions)
    assert bar.positions[0] < bar.total // 2  # it moved while writing, not only at the end


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path, monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert _save._want_bar(None) is False
    pt2format.save(_ep(), tmp_path / "m.pt2f")
    assert err.getvalue() == ""


def test_bar_wanted_on_a_terminal(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stderr", Tty())
    assert _save._want_bar(None) is True
    assert _save._want_bar(False) is False


def test_every_progress_default_is_terminal_only():
    """Issue 25, rough edge 5: save_weights showed a bar in log files (its default was True)."""
    import inspect

    for fn in (pt2format.save, pt2format.save_weights, pt2format.from_torch, _save.save_programs, _save.save_weights):
        assert inspect.signature(fn).parameters["progress"].default is None, fn.__qualname__


def test_save_weights_shows_no_bar_in_a_log(tmp_path, monkeypatch):
    import tqdm.auto

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.setattr(tqdm.auto, "tqdm", _RecordingBar)
    _RecordingBar.instances.clear()
    pt2format.save_weights(dict(_ep().state_dict), tmp_path / "w.pt2f")
    assert _RecordingBar.instances == []
