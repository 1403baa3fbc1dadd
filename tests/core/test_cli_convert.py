"""`pt2format convert` between torch .pt2 and .pt2f, and `pt2format --version`."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import pt2format
from pt2format.cli import main


@pytest.fixture(scope="module")
def ep():
    torch.manual_seed(0)
    return torch.export.export(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()), (torch.randn(2, 3),))


def test_convert_torch_archive_to_pt2f_and_back(ep, tmp_path):
    x = torch.randn(2, 3)
    want = ep.module()(x)
    torch.export.save(ep, tmp_path / "model.pt2")
    assert main(["convert", str(tmp_path / "model.pt2"), str(tmp_path / "model.pt2f")]) == 0
    assert torch.equal(pt2format.load(tmp_path / "model.pt2f").module()(x), want)
    assert main(["convert", str(tmp_path / "model.pt2f"), str(tmp_path / "back.pt2")]) == 0
    assert torch.equal(torch.export.load(tmp_path / "back.pt2").module()(x), want)
    assert main(["convert", str(tmp_path / "model.pt2"), "-o", str(tmp_path / "m.json.pt2f"),
                 "--encoding", "json"]) == 0
    with pt2format.read(tmp_path / "m.json.pt2f") as f:
        assert f.header.sections[0].encoding == 3


def test_convert_between_pt2f_needs_an_encoding(ep, tmp_path, capsys):
    pt2format.save(ep, tmp_path / "a.pt2f")
    assert main(["convert", str(tmp_path / "a.pt2f"), str(tmp_path / "b.pt2f")]) == 2
    assert "--encoding is required" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "a.pt2f"), str(tmp_path / "b.pt2f"), "--encoding", "msgpack"]) == 0
    assert main(["convert", str(tmp_path / "a.pt2f"), str(tmp_path / "b.pt2f"), "-o", "x"]) == 2


def test_convert_multi_program_to_torch_needs_a_program(ep, tmp_path, capsys):
    """The CLI user is told about --program (not Python's program=), and not that they typed 'forward'."""
    pt2format.save({"a": ep, "b": ep}, tmp_path / "two.pt2f")
    assert main(["convert", str(tmp_path / "two.pt2f"), str(tmp_path / "two.pt2")]) == 2
    err = capsys.readouterr().err
    assert "--program" in err and "program=" not in err and "forward" not in err, err
    assert err.count("\n") == 1
    assert not (tmp_path / "two.pt2").exists()
    assert main(["convert", str(tmp_path / "two.pt2f"), str(tmp_path / "b.pt2"), "--program", "b"]) == 0


def test_default_program_error_does_not_claim_a_name_was_given(ep, tmp_path):
    pt2format.save({"a": ep, "b": ep}, tmp_path / "two.pt2f")
    with pytest.raises(pt2format.LoadError) as e:
        pt2format.load(tmp_path / "two.pt2f")
    assert "got forward" not in str(e.value) and "program='a'" in str(e.value)


def test_torch_archive_to_pt2_is_refused(ep, tmp_path, capsys):
    """Issue 25, rough edge 1: it wrote a .pt2f named out.pt2, which torch.export.load then rejected."""
    torch.export.save(ep, tmp_path / "model.pt2")
    for args in (["model.pt2", "out.pt2"], ["--from-torch", "model.pt2", "out.PT2"]):
        assert main(["convert", *[str(tmp_path / a) if not a.startswith("-") else a for a in args]]) == 2
        assert "not to another .pt2" in capsys.readouterr().err
    with pytest.raises(ValueError, match="ends in .pt2"):
        pt2format.from_torch(tmp_path / "model.pt2", tmp_path / "out.pt2")
    # Nor does a .pt2f re-encoded into a name torch takes for its own.
    pt2format.save(ep, tmp_path / "a.pt2f")
    assert main(["convert", str(tmp_path / "a.pt2f"), str(tmp_path / "out.pt2"), "--encoding", "json"]) == 2
    assert "a DEST ending in .pt2 is a torch archive" in capsys.readouterr().err
    assert not (tmp_path / "out.pt2").exists() and not (tmp_path / "out.PT2").exists()


@pytest.mark.parametrize("dest", ["out.onnx", "out"])
def test_unsupported_output_is_named(ep, tmp_path, capsys, dest):
    pt2format.save(ep, tmp_path / "a.pt2f")
    assert main(["convert", str(tmp_path / "a.pt2f"), str(tmp_path / dest)]) == 2
    err = capsys.readouterr().err
    assert "unsupported output" in err and "--encoding is required" not in err
    assert not (tmp_path / dest).exists()


@pytest.mark.parametrize("which", ["source", "dest", "torch source"])
def test_directory_is_the_typed_error(ep, tmp_path, capsys, which):
    """As for every other command: FormatError naming the path, one line, exit 1 (not [Errno 21])."""
    pt2format.save(ep, tmp_path / "a.pt2f")
    d = tmp_path / "dir.pt2f"
    d.mkdir()
    args = {"source": [str(d), str(tmp_path / "b.pt2f"), "--encoding", "json"],
            "dest": [str(tmp_path / "a.pt2f"), str(d), "--encoding", "json"],
            "torch source": [str(tmp_path / "dir.pt2"), str(tmp_path / "c.pt2f")]}[which]
    if which == "torch source":
        (tmp_path / "dir.pt2").mkdir()
    assert main(["convert", *args]) == 1
    err = capsys.readouterr().err
    assert "FormatError" in err and "not a regular file" in err and "Errno" not in err and err.count("\n") == 1, err
    validate = main(["validate", str(d)])
    assert validate == 1 and "FormatError" in capsys.readouterr().err


def test_version():
    proc = subprocess.run([sys.executable, "-m", "pt2format", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    major, minor = pt2format.FORMAT_VERSION
    assert proc.stdout.strip() == f"pt2format {pt2format.__version__} (format {major}.{minor})"
