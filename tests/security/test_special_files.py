"""FIFOs, devices and directories, given as any path to any CLI command, end in a typed error without blocking.

Each case runs the real command line in a subprocess with a timeout, so a
command that blocks on a FIFO or reads `/dev/zero` until memory runs out
fails the test instead of hanging it. Inputs (the file itself, its shard or
external file, a golden directory's entries) and outputs (convert's and
view's) are covered.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import save_file

from pt2f_samples import float_payloads, tiny_package

from pt2format import _api
from pt2format._external import plan_safetensors
from pt2format._generated import model as m

TIMEOUT = 120
SIZES = (3, 5, 7)


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pt2format", *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL, env=env)


@pytest.fixture(scope="module")
def viewer_env(tmp_path_factory):
    """A minimal viewer template, so `view` reaches the file whatever the TypeScript build state."""
    page = tmp_path_factory.mktemp("viewer") / "viewer.html"
    page.write_text("<html><!--PT2F-EMBED--></html>", encoding="utf-8")
    return {**os.environ, "PT2FORMAT_VIEWER_HTML": str(page)}


def _special(path, kind: str) -> None:
    """Make `path` a FIFO, a directory, or a symlink to a FIFO, to /dev/zero or to a directory."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "link to /dev/zero":
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        os.symlink("/dev/zero", path)
    elif kind == "link to fifo":
        os.mkfifo(str(path) + ".target")
        os.symlink(str(path) + ".target", path)
    else:
        raise AssertionError(kind)


#: Every command that takes a file, as argv around FILE (and OUT, a fresh output path).
COMMANDS = {
    "inspect": ["inspect", "FILE"],
    "inspect --hexdump": ["inspect", "--hexdump", "FILE"],
    "validate": ["validate", "FILE"],
    "dump": ["dump", "FILE"],
    "convert --encoding": ["convert", "FILE", "OUT.pt2f", "--encoding", "json"],
    "convert to torch": ["convert", "FILE", "OUT.pt2"],
    "convert --from-torch": ["convert", "--from-torch", "FILE", "OUT.pt2f"],
    "view": ["view", "FILE", "-o", "OUT.html"],
}
INPUT_KINDS = ["fifo", "link to /dev/zero", "link to fifo", "directory"]


def _argv(template, file, out_dir):
    return [str(file) if a == "FILE" else str(out_dir / a) if a.startswith("OUT") else a for a in template]


def _refused(proc):
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "FormatError" in proc.stderr and "not a regular file" in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", INPUT_KINDS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_refuses_a_special_input(tmp_path, viewer_env, command, kind):
    name = "model.pt2" if command == "convert --from-torch" else "model.pt2f"
    path = tmp_path / name
    _special(path, kind)
    proc = _cli(*_argv(COMMANDS[command], path, tmp_path), env=viewer_env)
    _refused(proc)
    assert not any(p.name.startswith("OUT") for p in tmp_path.iterdir())


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_special_file_named_pt2_is_refused_by_convert(tmp_path, kind):
    """The documented torch form (`convert model.pt2 ...`) opens the path the one way too."""
    path = tmp_path / "model.pt2"
    _special(path, kind)
    _refused(_cli("convert", path, tmp_path / "out.pt2f"))


def _sharded(tmp_path):
    path = tmp_path / "m.pt2f"
    _api.write_package(path, tiny_package(SIZES), float_payloads(SIZES), max_shard_size=40, fsync=False)
    with _api.read(path) as f:
        shards = [tmp_path / s.name for s in f.package.shard_files]
    assert len(shards) >= 2
    return path, shards[-1]


def _external(tmp_path):
    arrays = {"w": np.arange(12, dtype=np.float32)}
    st = tmp_path / "model.safetensors"
    save_file(arrays, str(st))
    pkg = m.Package(format_version=m.FormatVersion(1, 0),
                    tensors=[m.Tensor(storage=0, dtype=m.ScalarType.FLOAT32, sizes=[12], strides=[1])],
                    storages=[m.Storage()],
                    weight_sets=[m.WeightSet(name="default", entries=[
                        m.StateEntry(name="w", kind=m.StateKind.PARAMETER, tensor=0)])])
    payloads = [arrays["w"].tobytes()]
    main = tmp_path / "m.pt2f"
    _api.write_package(main, pkg, payloads, fsync=False, external=plan_safetensors(pkg, payloads, str(main), str(st)))
    return main, st


#: Commands that read the data of a file (and so open its shard and external files).
DATA_COMMANDS = ["validate", "dump", "convert --encoding"]


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
@pytest.mark.parametrize("layout", ["shard", "external"])
def test_every_command_refuses_a_special_shard_or_external_file(tmp_path, viewer_env, layout, kind):
    main, other = _sharded(tmp_path) if layout == "shard" else _external(tmp_path)
    other.unlink()
    _special(other, kind)
    for command in ("inspect", "inspect --hexdump", "view", *DATA_COMMANDS):
        proc = _cli(*_argv(COMMANDS[command], main, tmp_path), env=viewer_env)
        if command in DATA_COMMANDS:
            _refused(proc)
        else:  # these never open the data files (view shows them as missing); they must still not block
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, (command, proc.stderr)


def test_conformance_does_not_block_on_special_golden_entries(tmp_path):
    root = tmp_path / "golden"
    case = root / "1.0" / "case"
    case.mkdir(parents=True)
    _special(case / "model.pt2f", "fifo")
    _special(case / "other.pt2f", "link to /dev/zero")
    _api.write_package(case / "good.pt2f", tiny_package(SIZES), float_payloads(SIZES), fsync=False)
    _special(case / "expected.json", "fifo")
    proc = _cli("conformance", root)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "expected.json" in proc.stdout
    fifo_root = tmp_path / "golden-fifo"
    _special(fifo_root, "fifo")
    proc = _cli("conformance", fifo_root)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def _device(path) -> None:
    """A character device like /dev/null at `path` (root only), so a bad save would replace ours, not /dev's."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError, AttributeError):
        pytest.skip("cannot create a device node here (not root)")


OUTPUT_COMMANDS = {
    "convert --encoding": ["convert", "FILE", "DEST", "--encoding", "json"],
    "convert to torch": ["convert", "FILE", "DEST"],
    "view": ["view", "FILE", "-o", "DEST"],
}


@pytest.mark.parametrize("kind", ["fifo", "link to fifo", "link to device", "directory"])
@pytest.mark.parametrize("command", list(OUTPUT_COMMANDS))
def test_every_output_refuses_a_special_file(tmp_path, viewer_env, command, kind):
    src = tmp_path / "m.pt2f"
    if command == "convert to torch":
        import torch

        import pt2format

        ep = torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
        pt2format.save(ep, src, fsync=False)
    else:
        _api.write_package(src, tiny_package(SIZES), float_payloads(SIZES), fsync=False)
    dest = tmp_path / ("out.pt2" if command == "convert to torch" else "out.html" if command == "view" else "o.pt2f")
    if kind == "link to device":
        _device(tmp_path / "dev")
        os.symlink(tmp_path / "dev", dest)
    else:
        _special(dest, kind)
    argv = [str(src) if a == "FILE" else str(dest) if a == "DEST" else a for a in OUTPUT_COMMANDS[command]]
    _refused(_cli(*argv, env=viewer_env))
    if kind == "link to device":
        assert stat.S_ISCHR(os.stat(tmp_path / "dev").st_mode)  # not replaced by a regular file


_API_SCRIPT = """
import os, sys, torch, pt2format
d = sys.argv[1]
ep = torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
good = os.path.join(d, "good.pt2f")
pt2format.save(ep, good, fsync=False)
entries = {
    "read": lambda p: pt2format.read(p),
    "read mmap=False": lambda p: pt2format.read(p, mmap=False),
    "validate": lambda p: pt2format.validate(p),
    "open": lambda p: pt2format.open(p),
    "open mmap=False": lambda p: pt2format.open(p, mmap=False),
    "load": lambda p: pt2format.load(p),
    "load mmap=False": lambda p: pt2format.load(p, mmap=False),
    "load_module": lambda p: pt2format.load_module(p),
    "load_module mmap=False": lambda p: pt2format.load_module(p, mmap=False),
    "from_torch": lambda p: pt2format.from_torch(p, os.path.join(d, "o.pt2f")),
    "to_torch": lambda p: pt2format.to_torch(p, os.path.join(d, "o.pt2")),
    "attach_weights": lambda p: pt2format.attach_weights(pt2format.load(good, weights=False), p),
    "save external_data": lambda p: pt2format.save(ep, os.path.join(d, "e.pt2f"), external_data=p),
    "save to": lambda p: pt2format.save(ep, p),
    "to_torch to": lambda p: pt2format.to_torch(good, p),
}
for kind in sys.argv[2:]:
    path = os.path.join(d, kind)
    for name, call in entries.items():
        try:
            call(path)
            print(name, kind, "no error", flush=True)
        except pt2format.FormatError as e:
            print(name, kind, type(e).__name__, "regular" if "not a regular file" in str(e) else str(e), flush=True)
"""


def test_every_api_entry_refuses_special_files(tmp_path):
    """Each public entry that takes a path, on a FIFO, a link to /dev/zero or to a FIFO, and a directory."""
    kinds = ["fifo", "link to /dev/zero", "link to fifo", "directory"]
    for kind in kinds:
        _special(tmp_path / kind.replace("/", "_"), kind)
    kinds = [k.replace("/", "_") for k in kinds]
    proc = subprocess.run([sys.executable, "-c", _API_SCRIPT, str(tmp_path), *kinds], capture_output=True,
                          text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 15 * len(kinds), proc.stdout
    for line in lines:
        assert line.endswith("FormatError regular"), line
