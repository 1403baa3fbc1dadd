"""What the command line says for a wrong path: the kind of file in words, the real problem first, short lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pt2f_samples

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pt2format", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def pt2f_bytes():
    from pt2format._api import write_package

    import io

    buf = io.BytesIO()
    write_package(buf, pt2f_samples.tiny_package((3, 5)), pt2f_samples.float_payloads((3, 5)), fsync=False)
    return buf.getvalue()


@pytest.mark.parametrize("command", [["validate"], ["inspect"], ["dump"], ["convert", "{}", "x.pt2f"],
                                     ["convert", "{}", "x.pt2f", "--encoding", "json"]])
def test_a_directory_is_named_a_directory(tmp_path, command):
    """Not "got d (directory, FIFO, device or socket)", and convert says it before asking for --encoding."""
    (tmp_path / "d").mkdir()
    args = [a.format("d") for a in command] if "{}" in command else [*command, "d"]
    proc = _cli(*args, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "not a regular file (expected a regular file, got a directory)" in proc.stderr
    assert "--encoding" not in proc.stderr


def test_a_fifo_is_named_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "f")
    proc = _cli("validate", "f", cwd=tmp_path)
    assert proc.returncode == 1 and "got a FIFO" in proc.stderr, proc.stderr


@pytest.mark.parametrize("content", [b"hello\n", b"", b"x" * 63])
def test_a_short_file_of_another_kind_is_not_a_pt2format_file(tmp_path, content):
    """A text file shorter than a header is "not a pt2format file", as a longer one is; not "too short"."""
    (tmp_path / "notes.txt").write_bytes(content)
    proc = _cli("validate", "notes.txt", cwd=tmp_path)
    assert proc.returncode == 1 and "not a pt2format file: bad magic" in proc.stderr, proc.stderr
    assert "too short" not in proc.stderr


def test_a_truncated_pt2format_file_is_too_short(tmp_path, pt2f_bytes):
    """A file that starts as a .pt2f does (the magic) but stops inside the header is a truncated one."""
    (tmp_path / "cut.pt2f").write_bytes(pt2f_bytes[:20])
    proc = _cli("validate", "cut.pt2f", cwd=tmp_path)
    assert proc.returncode == 1 and "file too short for a header" in proc.stderr, proc.stderr


def test_the_torch_archive_hint_is_short_lines(tmp_path):
    torch = pytest.importorskip("torch")
    ep = torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    torch.export.save(ep, tmp_path / "m.pt2")
    os.replace(tmp_path / "m.pt2", tmp_path / "m.bin")  # a name that does not ask for a conversion
    proc = _cli("validate", "m.bin", cwd=tmp_path)
    assert proc.returncode == 1 and "torch.export archive" in proc.stderr, proc.stderr
    lines = proc.stderr.rstrip("\n").split("\n")
    assert len(lines) > 3 and max(len(line) for line in lines) <= 160, lines
    assert max(len(line) for line in lines[1:]) <= 100, lines
    assert any("pt2format convert --from-torch" in line for line in lines) and "from_torch(" in proc.stderr
