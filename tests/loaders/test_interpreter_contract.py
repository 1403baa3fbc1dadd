"""The interpreter after a public call is as the user left it (issue 43 §1, DESIGN principle 12).

Every public entry point that reads or writes a file is called with the
collector in each state a user may have set (enabled or disabled, default or
unusual thresholds, objects frozen or not), and what the user set is compared
before and after: `gc.isenabled()`, `gc.get_threshold()`,
the frozen set (`gc.get_freeze_count()`, and an object the user froze
staying frozen), every signal handler. Threads started by the call
may outlive it only if they are ours: named `pt2format-...` (see the user
guide's "What pt2format does to your process").
"""

from __future__ import annotations

import gc
import signal
import threading

import pytest
import torch

import pt2format


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        return self.lin(x).relu()


def _interpreter():
    handlers = {}
    for s in signal.valid_signals():
        try:
            handlers[s] = signal.getsignal(s)
        except (OSError, ValueError):
            pass
    return {"enabled": gc.isenabled(), "threshold": gc.get_threshold(), "frozen": gc.get_freeze_count(),
            "signals": handlers}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    ep = torch.export.export(_Net(), (torch.randn(2, 4),))
    path = tmp_path_factory.mktemp("contract") / "m.pt2f"
    pt2format.save(ep, path, progress=False, fsync=False)
    return ep, path


def _calls(ep, path, tmp):
    x = torch.randn(2, 4)
    return {
        "save": lambda: pt2format.save(ep, tmp / "s.pt2f", progress=False, fsync=False),
        "save again (replacing)": lambda: pt2format.save(ep, tmp / "s.pt2f", progress=False, fsync=False),
        "load": lambda: pt2format.load(path),
        "load().module() and a call": lambda: pt2format.load(path).module()(x),
        "load_module and two calls": lambda: [m(x) for m in [pt2format.load_module(path)] for _ in range(2)],
        "load(prefetch=True)": lambda: pt2format.load(path, prefetch=True),
        "open": lambda: pt2format.open(path).close(),
        "read": lambda: pt2format.read(path).close(),
        "validate": lambda: pt2format.validate(path),
    }


_SETTINGS = {
    "default": (True, None, False),
    "enabled, frozen, thresholds": (True, (50, 3, 7), True),
    "disabled, frozen, thresholds": (False, (123, 4, 5), True),
}


@pytest.mark.parametrize("setting", sorted(_SETTINGS))
def test_public_calls_leave_the_interpreter_as_the_user_left_it(saved, tmp_path, setting):
    ep, path = saved
    enabled, threshold, freeze = _SETTINGS[setting]
    was = (gc.isenabled(), gc.get_threshold())
    try:
        if threshold:
            gc.set_threshold(*threshold)
        sentinel = ["frozen by the user"]
        if freeze:
            gc.freeze()
        (gc.enable if enabled else gc.disable)()
        for name, call in _calls(ep, path, tmp_path).items():
            before, threads = _interpreter(), set(threading.enumerate())
            call()
            after = _interpreter()
            # A frozen object may die meanwhile (reference counting): the frozen set may shrink, never grow,
            # and what the user froze stays out of the collector's generations.
            assert after.pop("frozen") <= before.pop("frozen"), name
            if freeze:
                assert not any(o is sentinel for o in gc.get_objects()), f"{name}: the user's frozen set thawed"
            assert after == before, f"{name}: {before} -> {after}"
            new = [t.name for t in set(threading.enumerate()) - threads]
            assert all(n.startswith("pt2format-") for n in new), f"{name}: threads not ours: {new}"
    finally:
        gc.unfreeze()
        gc.set_threshold(*was[1])
        (gc.enable if was[0] else gc.disable)()
