"""The wheel works alone: built from this checkout, installed in a fresh venv with torch, away from the checkout.

In that venv (working directory: an empty folder, so nothing of the checkout
is importable) it runs the README's "Use" examples, Python and command line,
as written; `view` uses the page inside the package; `load`, `load_module`
and `convert` are compared with torch's own answers (the exported module's
outputs, and torch.export.load of the converted archive). Slow (a wheel build,
a venv, a torch install from the local wheel; 205 s on the 2-core machine):
behind --corpus, as CI runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.corpus

#: Lines of the README's Python example that need what a fresh venv does not have.
NEEDS_MORE = {
    "int8.pt2f": "a tensor subclass class (torchao's): the subclass tests cover it",
    "device_mesh=": "a process group and a DeviceMesh: tests/distributed covers it on two ranks",
}

PREAMBLE = '''
import io, shutil, warnings
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x).relu()

torch.manual_seed(0)
x = torch.randn(2, 4)
model = Net().eval()
ep = torch.export.export(model, (x,))
ep1, ep2 = ep, torch.export.export(model, (torch.randn(5, 4),))
torch.export.save(ep, "model.pt2")
buf = io.BytesIO()
import pt2format
pt2format.save(ep, buf)
data_bytes = buf.getvalue()
import torch.distributed.checkpoint as dcp
sd = {"linear.weight": torch.empty(3, 4), "linear.bias": torch.empty(3)}  # filled by the README's dcp.load
'''

CHECKS = '''
# The README's calls ran; now their results against torch's own answers.
want = model(x)
assert torch.equal(pt2format.load("model.pt2f").module()(x), want)
assert torch.equal(pt2format.load_module("model.pt2f")(x), want)
assert torch.equal(pt2format.load(data_bytes).module()(x), want)
assert torch.equal(pt2format.load("llm.pt2f", program="prefill").module()(x), want)
with pt2format.open("model.pt2f") as f:
    assert torch.equal(f.get_tensor("linear.weight"), model.linear.weight)
assert torch.equal(sd["linear.weight"], model.linear.weight) and torch.equal(sd["linear.bias"], model.linear.bias)
import pt2format._view as view
assert view.template_path() == view._PACKAGED and "site-packages" in str(view._PACKAGED), view.template_path()
print("PY-OK")
'''


def _readme_blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    use = text[text.index("## Use"):]
    use = use[:use.index("\n## ", 1)]
    return re.findall(rf"```{lang}\n(.*?)```", use, flags=re.S)


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)


def test_wheel_in_a_fresh_venv(tmp_path):
    start = time.monotonic()
    dist = tmp_path / "dist"
    build = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                  str(ROOT)], cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    assert "deprecat" not in (build.stdout + build.stderr).lower(), build.stderr[-3000:]  # rough edge 8
    (wheel,) = dist.glob("pt2format-*.whl")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "pt2format/_viewer/viewer.html" in names
    # The typed API: the generated stubs and the marker that makes type checkers read them.
    assert {"pt2format/py.typed", "pt2format/__init__.pyi", "pt2format/dcp.pyi"} <= set(names), names
    assert not [n for n in names if n.startswith(("loaders/", "exporter/", "tests/"))], names

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    # torch from the version constraints.txt pins (a local wheel on the project's machines: no download).
    install = _run([str(py), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), f"{wheel}[torch]"])
    assert install.returncode == 0, install.stderr[-3000:]
    assert "deprecat" not in install.stderr.lower(), install.stderr[-3000:]

    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PT2FORMAT_VIEWER_HTML")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    (python_block,) = _readme_blocks("python")
    lines = [ln for ln in python_block.splitlines() if not any(k in ln for k in NEEDS_MORE)]
    script = PREAMBLE + "\n".join(lines) + "\n" + CHECKS
    where = _run([str(py), "-c", "import pt2format; print(pt2format.__file__)"], cwd=work, env=env)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr  # the installed wheel, not the checkout
    proc = _run([str(py), "-c", script], cwd=work, env=env)
    assert proc.returncode == 0 and "PY-OK" in proc.stdout, proc.stderr[-3000:]

    # A missing extra's hint, installed from a wheel: the extra's own requirements (no index has pt2format).
    import shlex
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    hint = _run([str(py), "-c", "from pt2format._deps import install_hint; print(install_hint('torch'))"],
                cwd=work, env=env)
    assert hint.stdout.strip() == "pip install " + " ".join(shlex.quote(r) for r in extra["torch"]), hint

    (work / "model.zip").write_bytes((work / "model.pt2").read_bytes())
    (bash_block,) = _readme_blocks("bash")
    for line in bash_block.splitlines():
        cmd = line.split("#", 1)[0].strip()
        if not cmd:
            continue
        proc = _run(["bash", "-c", cmd], cwd=work, env=env)
        assert proc.returncode == 0, (cmd, proc.stderr[-3000:])
    page = (work / "model.pt2f.html").read_text(encoding="utf-8")
    assert "<!--PT2F-EMBED-->" not in page and 'data-name="model.pt2f"' in page

    # `convert model.pt2f model.pt2` (the README's last conversion) gave torch an archive it loads, with the
    # outputs of the module it came from (rebuilt here from the same seed).
    model_code = PREAMBLE[PREAMBLE.index("class Net"):PREAMBLE.index("ep = ")]
    check = _run([str(py), "-c", "import torch\n" + model_code + "got = torch.export.load('model.pt2').module()(x)\n"
                  "assert torch.equal(got, model(x)); print('CONVERT-OK')"], cwd=work, env=env)
    assert check.returncode == 0 and "CONVERT-OK" in check.stdout, check.stderr[-3000:]
    print(f"wheel test: {time.monotonic() - start:.0f} s")
