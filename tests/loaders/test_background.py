"""The loaders' background threads (code generation, prefetching) end before the interpreter does.

A daemon thread killed during finalization while inside torch's C++ code
aborts the process (exit status 134). The script below exits right after the
first output, while code generation of a few thousand nodes is still running;
its first atexit handler (run last) looks for threads of ours still alive.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

import pt2format

_SCRIPT = textwrap.dedent(
    """
    import atexit, sys, threading

    def _check():
        alive = [t.name for t in threading.enumerate() if t.name.startswith("pt2format-") and t.is_alive()]
        print("alive at exit:", alive, flush=True)
        sys.stdout.flush()

    atexit.register(_check)  # registered first, so it runs after pt2format's handlers

    import torch
    import pt2format

    path = sys.argv[1]
    args, kwargs = torch.load(sys.argv[2], weights_only=True)
    m = pt2format.{call}
    out = m(*args, **kwargs)
    assert out is not None
    print("first output", flush=True)
    """
)


class _Chain(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.n = n
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        for _ in range(self.n):
            x = torch.sin(x @ self.w)
        return x


def _run(tmp_path, call: str) -> subprocess.CompletedProcess:
    ep = torch.export.export(_Chain(1500), (torch.randn(2, 4),))
    path = tmp_path / "chain.pt2f"
    pt2format.save(ep, path, progress=False)
    inputs = tmp_path / "inputs.pt"
    torch.save(((torch.randn(2, 4),), {}), inputs)
    script = tmp_path / "script.py"
    script.write_text(_SCRIPT.format(call=call))
    return subprocess.run(
        [sys.executable, str(script), str(path), str(inputs)], capture_output=True, text=True, timeout=600
    )


def test_exit_after_first_output_of_load_module_waits_for_codegen(tmp_path):
    r = _run(tmp_path, "load_module(path, prefetch=True)")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "first output" in r.stdout
    assert "alive at exit: []" in r.stdout, r.stdout


def test_exit_after_first_output_of_load_module_path_waits_for_codegen(tmp_path):
    r = _run(tmp_path, "load(path, prefetch=True).module()")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "first output" in r.stdout
    assert "alive at exit: []" in r.stdout, r.stdout
