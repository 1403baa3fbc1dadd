"""torch's loader runs only when a torch archive is named as one; every way it fails is a TorchArchiveError.

The hostile archive is a real `torch.export.save` output whose size
expression (`expr_str`, which torch hands to `sympy.sympify`) is replaced by
one that creates a marker file when evaluated. A control test shows that
`torch.export.load` does run it; every path that reads a `.pt2f` (CLI
commands and API entries) is then given the same bytes under a `.pt2f` name,
and must end in a typed error with no marker.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile

import pytest
import torch

import pt2format
from pt2format.errors import FormatError, HeaderError, TorchArchiveError

SIZE_EXPR = "Symbol('s77', positive=True, integer=True)"
CLI_TIMEOUT = 120


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


def _rewrite(archive: bytes, change) -> bytes:
    """The archive with `change(name, bytes)` applied to each member (None drops it), entry names kept."""
    src = zipfile.ZipFile(io.BytesIO(archive))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            data = change(info.filename, src.read(info.filename))
            if data is not None:
                z.writestr(info, data)
    return out.getvalue()


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """(good archive bytes, hostile archive bytes, marker path) for a program with one dynamic dim."""
    d = tmp_path_factory.mktemp("torch-archives")
    ep = torch.export.export(Double(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    good = buf.getvalue()
    marker = d / "MARKER"
    payload = f"(__import__('pathlib').Path({str(marker)!r}).touch(), {SIZE_EXPR})[1]"

    def inject(name, data):
        if name.endswith("models/model.json"):
            text = data.decode()
            assert SIZE_EXPR in text, "torch no longer writes this size expression: update the test"
            return text.replace(SIZE_EXPR, payload).encode()
        return data

    return good, _rewrite(good, inject), marker


@pytest.fixture()
def marker(archives):
    path = archives[2]
    if path.exists():
        path.unlink()
    yield path
    if path.exists():
        path.unlink()


def _cli(*args, timeout=CLI_TIMEOUT):
    return subprocess.run([sys.executable, "-m", "pt2format", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_control_torch_runs_the_payload(archives, marker, tmp_path):
    """The hostile archive is live: torch.export.load on it creates the marker (so the tests below can fail)."""
    path = tmp_path / "evil.pt2"
    path.write_bytes(archives[1])
    code = f"import torch; torch.export.load({str(path)!r})"
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=CLI_TIMEOUT, check=False)
    assert marker.exists()


def _refused_as_torch_archive(proc, dest=None):
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "HeaderError" in proc.stderr and "torch.export archive" in proc.stderr
    assert "--from-torch" in proc.stderr and "from_torch" in proc.stderr
    assert dest is None or not dest.exists()


def test_convert_of_a_renamed_torch_archive_runs_nothing(archives, marker, tmp_path):
    """`convert` reads anything not named .pt2 as a .pt2f: a torch zip is a typed error saying how to convert it."""
    for name in ("model.pt2f", "model", "model.bin"):
        src = tmp_path / name
        src.write_bytes(archives[1])
        _refused_as_torch_archive(_cli("convert", src, tmp_path / "out.pt2f", "--encoding", "json"),
                                  tmp_path / "out.pt2f")
    _refused_as_torch_archive(_cli("convert", src, tmp_path / "out.pt2"), tmp_path / "out.pt2")  # to torch
    for command in (["inspect"], ["inspect", "--hexdump"], ["validate"], ["dump"]):
        _refused_as_torch_archive(_cli(*command, src))
    assert not marker.exists()


def test_every_reading_api_refuses_a_torch_archive_without_running_it(archives, marker, tmp_path):
    src = tmp_path / "model.pt2f"
    src.write_bytes(archives[1])
    calls = {
        "read": lambda f: pt2format.read(f),
        "validate": lambda f: pt2format.validate(f),
        "open": lambda f: pt2format.open(f),
        "load": lambda f: pt2format.load(f),
        "load mmap=False": lambda f: pt2format.load(f, mmap=False),
        "load_module": lambda f: pt2format.load_module(f),
        "to_torch": lambda f: pt2format.to_torch(f, tmp_path / "out.pt2"),
        "convert": lambda f: __import__("pt2format._api", fromlist=["convert"]).convert(f, tmp_path / "o.pt2f",
                                                                                           "json"),
    }
    for what, call in calls.items():
        for source in (src, archives[1], io.BytesIO(archives[1])):
            with pytest.raises(HeaderError, match="torch.export archive") as info:
                call(source)
            assert "--from-torch" in str(info.value), what
    assert not marker.exists()


def test_named_torch_archive_still_converts(archives, tmp_path):
    """The explicit forms keep working: a .pt2 source, --from-torch, and from_torch on a file object."""
    src = tmp_path / "model.pt2"
    src.write_bytes(archives[0])
    x = torch.randn(5, 3)
    proc = _cli("convert", src, tmp_path / "a.pt2f")
    assert proc.returncode == 0, proc.stderr
    other = tmp_path / "model.archive"
    other.write_bytes(archives[0])
    proc = _cli("convert", "--from-torch", other, tmp_path / "b.pt2f", "--encoding", "msgpack")
    assert proc.returncode == 0, proc.stderr
    pt2format.from_torch(io.BytesIO(archives[0]), tmp_path / "c.pt2f")
    for name in ("a.pt2f", "b.pt2f", "c.pt2f"):
        assert torch.equal(pt2format.load(tmp_path / name).module()(x), x * 2)
    proc = _cli("convert", src, tmp_path / "again.pt2")
    assert proc.returncode == 2 and "not to another .pt2" in proc.stderr


def _damaged(good: bytes) -> dict:
    flipped = bytearray(good)
    at = flipped.find(b'"graph_module"')
    flipped[at + 1] ^= 0xFF  # a member's bytes no longer match its CRC
    return {
        "truncated zip": good[:len(good) // 2],
        "model json not json": _rewrite(good, lambda n, d: b"{not json" if n.endswith("models/model.json") else d),
        "model json missing": _rewrite(good, lambda n, d: None if n.endswith("models/model.json") else d),
        "member bytes flipped": bytes(flipped),
        "empty file": b"",
        "not a zip": b"hello, torch" * 10,
    }


def test_damaged_torch_archive_is_a_torch_archive_error(archives, tmp_path):
    """Whatever fails in the explicit torch path (zip, JSON, torch's RuntimeError) is one typed error naming torch."""
    cases = _damaged(archives[0])
    for what, data in cases.items():
        path = tmp_path / f"{what.replace(' ', '-')}.pt2"
        path.write_bytes(data)
        with pytest.raises(TorchArchiveError) as info:
            pt2format.from_torch(path, tmp_path / "out.pt2f")
        assert "torch" in str(info.value) and info.value.file == str(path), what
        with pytest.raises(TorchArchiveError):
            pt2format.from_torch(io.BytesIO(data), tmp_path / "out.pt2f")
        assert not (tmp_path / "out.pt2f").exists()
    # torch's own exception is kept as the cause, and torch named as the section
    with pytest.raises(TorchArchiveError) as info:
        pt2format.from_torch(io.BytesIO(cases["model json missing"]), tmp_path / "out.pt2f")
    assert isinstance(info.value.__cause__, RuntimeError) and info.value.section == "torch.export.load"
    path = tmp_path / "damaged.pt2"
    path.write_bytes(cases["member bytes flipped"])
    proc = _cli("convert", path, tmp_path / "out.pt2f")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "TorchArchiveError" in proc.stderr and "torch.export.load" in proc.stderr


def test_pt2f_given_as_torch_archive_says_so(archives, tmp_path):
    src = tmp_path / "model.pt2"
    src.write_bytes(archives[0])
    pt2f = tmp_path / "real.pt2f"
    pt2format.from_torch(src, pt2f)
    renamed = tmp_path / "real.pt2"
    renamed.write_bytes(pt2f.read_bytes())
    with pytest.raises(TorchArchiveError, match="a .pt2f file already"):
        pt2format.from_torch(renamed, tmp_path / "out.pt2f")


def test_from_torch_refuses_special_files(tmp_path):
    fifo = tmp_path / "fifo.pt2"
    os.mkfifo(fifo)
    code = (f"import pt2format\ntry:\n    pt2format.from_torch({str(fifo)!r}, {str(tmp_path / 'o.pt2f')!r})\n"
            "except pt2format.FormatError as e:\n    print(type(e).__name__, e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=CLI_TIMEOUT)
    assert proc.returncode == 0 and proc.stdout.startswith("FormatError") and "not a regular file" in proc.stdout
    with pytest.raises(FormatError, match="not a regular file"):
        pt2format.from_torch(tmp_path, tmp_path / "o.pt2f")


def test_help_states_the_rule():
    top = _cli("--help").stdout
    convert = _cli("convert", "--help").stdout
    for text in (top, convert):
        flat = " ".join(text.split())
        assert "torch.export.load" in flat and "--from-torch" in flat and ".pt2" in flat
    assert "never handed to torch because of its content" in " ".join(convert.split())
