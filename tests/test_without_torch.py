"""The core (read, validate, inspect, dump, convert) works where torch cannot be imported."""

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import pt2f_samples  # noqa: E402

from pt2format._api import write_package  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# A meta-path finder that makes `import torch` fail, run before anything else in the child.
BLOCK_TORCH = (
    "import sys\n"
    "class _NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ModuleNotFoundError('torch is blocked in this test', name='torch')\n"
    "sys.meta_path.insert(0, _NoTorch())\n"
)


@pytest.fixture
def sample_file(tmp_path):
    path = tmp_path / "tiny.pt2f"
    write_package(path, pt2f_samples.tiny_package((3, 5)), pt2f_samples.float_payloads((3, 5)), fsync=False)
    return path


def _run_blocked(args, tmp_path):
    code = BLOCK_TORCH + "import runpy; sys.argv = ['pt2format'] + sys.argv[1:]; runpy.run_module('pt2format', run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_block_really_blocks_torch(tmp_path):
    proc = subprocess.run([sys.executable, "-c", BLOCK_TORCH + "import torch"], capture_output=True, text=True)
    assert proc.returncode != 0 and "torch is blocked" in proc.stderr


@pytest.mark.parametrize("command", ["validate", "inspect", "dump"])
def test_cli_runs_with_torch_blocked(sample_file, tmp_path, command):
    proc = _run_blocked([command, str(sample_file)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_convert_runs_with_torch_blocked(sample_file, tmp_path):
    out = tmp_path / "tiny.json.pt2f"
    proc = _run_blocked(["convert", str(sample_file), "--encoding", "json", "-o", str(out)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _run_blocked(["dump", str(out)], tmp_path).stdout == _run_blocked(["dump", str(sample_file)], tmp_path).stdout


@pytest.mark.corpus
def test_fresh_venv_without_torch(sample_file, tmp_path):
    """pip install -e . in a venv with no torch, then import and validate (the issue's acceptance check)."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), "-e", str(ROOT)],
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    probe = subprocess.run([str(py), "-c", "import importlib.util, pt2format; assert importlib.util.find_spec('torch') is None; print('ok')"],
                           capture_output=True, text=True)
    assert probe.returncode == 0 and probe.stdout.strip() == "ok", probe.stderr
    cli = env_dir / "bin" / "pt2format"
    proc = subprocess.run([str(cli), "validate", str(sample_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_view_runs_with_torch_blocked(sample_file, tmp_path):
    """`pt2format view` only embeds bytes into the built page: no torch, and no build needed for this check."""
    import base64
    import re

    template = tmp_path / "viewer.html"
    template.write_text("<html><body><!--PT2F-EMBED--></body></html>", encoding="utf-8")
    out = tmp_path / "tiny.html"
    code = BLOCK_TORCH + "import runpy; sys.argv = ['pt2format'] + sys.argv[1:]; runpy.run_module('pt2format', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code, "view", str(sample_file), "-o", str(out), "--with-weights"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PT2FORMAT_VIEWER_HTML": str(template)})
    assert proc.returncode == 0, proc.stderr
    m = re.search(r'data-weights="embedded">([A-Za-z0-9+/=]+)</script>', out.read_text(encoding="utf-8"))
    assert m and base64.b64decode(m.group(1)) == sample_file.read_bytes()


def _block(*modules):
    """Like BLOCK_TORCH, for any top-level modules."""
    return ("import sys\n"
            "class _Block:\n"
            f"    names = {modules!r}\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in self.names:\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, _Block())\n")


_API_WITHOUT_TORCH = '''
import pt2format
path = sys.argv[1]
calls = {
    "load": lambda: pt2format.load(path),
    "load_module": lambda: pt2format.load_module(path),
    "attach_weights": lambda: pt2format.attach_weights(None, path),
    "save": lambda: pt2format.save(None, path + ".out"),
    "save_weights": lambda: pt2format.save_weights({}, path + ".out"),
    "to_torch": lambda: pt2format.to_torch(path, path + ".pt2"),
    "from_torch": lambda: pt2format.from_torch(path, path + ".out.pt2f"),
    "open(framework='pt').get_tensor": lambda: pt2format.open(path).get_tensor(pt2format.open(path).keys()[0]),
    "import pt2format.dcp": lambda: __import__("pt2format.dcp"),
    "pt2format.dcp": lambda: pt2format.dcp,
}
for name, call in calls.items():
    try:
        call()
    except pt2format.MissingDependencyError as e:
        assert isinstance(e, ImportError) and e.extra == "torch" and e.module == "torch", name
        assert HINT in str(e), (name, str(e))
        print("typed", name)
    else:
        raise AssertionError(name + " ran without torch")
'''


def _checkout_hint(extra):
    """What installs `extra` when pt2format runs from this checkout: its own extra, through its constraints."""
    import shlex

    return f"pip install -c {shlex.quote(f'{ROOT}/constraints.txt')} -e {shlex.quote(f'{ROOT}[{extra}]')}"


def test_every_torch_entry_point_names_the_extra(sample_file, tmp_path):
    """Without torch every entry point, `import pt2format.dcp` included, is a MissingDependencyError with the command."""
    code = _block("torch") + f"HINT = {_checkout_hint('torch')!r}\n" + _API_WITHOUT_TORCH
    proc = subprocess.run([sys.executable, "-c", code, str(sample_file)],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("typed ") == 10, proc.stdout


def test_numpy_framework_without_numpy_names_the_extra(sample_file, tmp_path):
    code = _block("numpy", "torch") + (
        "import pt2format\n"
        "with pt2format.open(sys.argv[1], framework='np') as f:\n"
        "    names = f.keys()\n"
        "    try:\n"
        "        f.get_tensor(names[0])\n"
        "    except pt2format.MissingDependencyError as e:\n"
        f"        assert e.extra == 'numpy' and {_checkout_hint('numpy')!r} in str(e), str(e)\n"
        "        print('typed', len(names))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(sample_file)], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.startswith("typed "), proc.stderr[-3000:]


@pytest.mark.parametrize("direction", ["to_torch", "from_torch"])
def test_cli_convert_without_torch_is_one_line(sample_file, tmp_path, direction):
    """Not a 12-line traceback: one line naming the extra, exit status 1."""
    if direction == "to_torch":
        args = ["convert", str(sample_file), str(tmp_path / "out.pt2")]
    else:
        archive = tmp_path / "model.pt2"
        archive.write_bytes(b"PK\x03\x04 not really a zip")
        args = ["convert", str(archive), str(tmp_path / "out.pt2f")]
    proc = _run_blocked(args, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "MissingDependencyError" in proc.stderr and _checkout_hint("torch") in proc.stderr


def test_a_broken_torch_is_not_called_missing(monkeypatch):
    """torch that is installed but fails to import (say, a missing CUDA library) keeps its own error."""
    from pt2format import _deps
    from pt2format.errors import MissingDependencyError

    def broken(name):
        raise ImportError("libcudnn.so.9: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(_deps.importlib, "import_module", broken)
    with pytest.raises(ImportError, match="libcudnn") as e:
        _deps.require("torch", "pt2format.load")
    assert not isinstance(e.value, MissingDependencyError)
