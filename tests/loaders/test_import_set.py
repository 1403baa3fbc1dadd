"""A static load in a fresh interpreter imports only what a static program needs.

torch's ShapeEnv and FakeTensorMode constructors import torch._dynamo, which
imports sympy, torch._inductor, torch.onnx and torch.distributed: about a
second of a cold load. A program without symbols needs none of them (see
loaders/_fake_mode.py and loaders/_symbols.py). The child process imports
torch first (as every user does) and reports what the load added, so an
import that creeps back onto the load path fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import pt2format

# torch subpackages a static load may add to those `import torch` brings: torch._functorch (config read by
# the fake mode); torch.fx and torch.utils (symbolic_shapes and its sympy helpers) only where torch's own
# verifier runs, on a torch the verifier pre-check was not compared with (loaders/_verifier.py;
# tests/loaders/test_verifier.py checks that a static load imports no sympy on the others).
ALLOWED_TORCH = {"torch._functorch", "torch.fx", "torch.utils"}
FORBIDDEN = ("torch._dynamo", "torch.distributed", "torch.onnx", "torch._inductor", "torch._numpy",
             "networkx", "numpy")

_CHILD = textwrap.dedent("""
    import json, sys
    import torch
    before = set(sys.modules)
    import pt2format
    ep = pt2format.load(sys.argv[1])
    print(json.dumps(sorted(set(sys.modules) - before)))
""")


def _new_modules(path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, timeout=300,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def static_file(tmp_path_factory):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.ReLU())
    model.register_buffer("steps", torch.zeros(()))
    ep = torch.export.export(model, (torch.randn(2, 4),))
    path = tmp_path_factory.mktemp("imports") / "static.pt2f"
    pt2format.save(ep, path, progress=False)
    return path


def test_static_load_imports_no_dynamo_distributed_onnx_inductor(static_file):
    new = _new_modules(static_file)
    bad = sorted(m for m in new if m.split(".")[0] in FORBIDDEN or m.startswith(FORBIDDEN))
    assert bad == []
    torch_top = {".".join(m.split(".")[:2]) for m in new if m.startswith("torch.")}
    assert torch_top <= ALLOWED_TORCH, torch_top - ALLOWED_TORCH


def test_static_load_imports_no_exporter(static_file):
    """The loader shares tables with the exporter; sharing them must not import the exporter itself."""
    new = _new_modules(static_file)
    assert "pt2format.exporter._program" not in new
    assert "pt2format.exporter._save" not in new


def test_load_imports_no_program_writer(static_file):
    """The generated FlatBuffers writer (0.05-0.1 s to import) is the encoder's: a load never imports it."""
    new = _new_modules(static_file)
    assert "pt2format._generated.fb_reader" in new  # the child really decoded a FlatBuffers program
    assert "pt2format._generated.fb_writer" not in new


_CHILD_MODULE = textwrap.dedent("""
    import json, sys
    import torch
    before = set(sys.modules)
    import pt2format
    m = pt2format.load_module(sys.argv[1])
    assert m.pt2format_fallback is None, m.pt2format_fallback
    print(json.dumps(sorted(set(sys.modules) - before)))
""")


@pytest.fixture(scope="module")
def dynamic_file(tmp_path_factory):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    ep = torch.export.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: torch.export.Dim("b", max=64)},))
    path = tmp_path_factory.mktemp("imports") / "dynamic.pt2f"
    pt2format.save(ep, path, progress=False)
    return path


@pytest.mark.parametrize("which", ["static", "dynamic"])
def test_load_module_imports_no_sympy_or_dynamo(which, static_file, dynamic_file):
    """load_module evaluates symbolic guards with the bounded evaluator: not even a dynamic program needs sympy."""
    path = static_file if which == "static" else dynamic_file
    out = subprocess.run([sys.executable, "-c", _CHILD_MODULE, str(path)], capture_output=True, text=True,
                         timeout=300, check=True)
    new = json.loads(out.stdout.strip().splitlines()[-1])
    bad = sorted(m for m in new if m.split(".")[0] in FORBIDDEN + ("sympy",) or m.startswith(FORBIDDEN))
    assert bad == []
