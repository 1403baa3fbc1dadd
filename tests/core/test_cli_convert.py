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
    pt2format.save({"a": ep, "b": ep}, tmp_path / "two.pt2f")
    assert main(["convert", str(tmp_path / "two.pt2f"), str(tmp_path / "two.pt2")]) == 1
    assert "program=" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "two.pt2f"), str(tmp_path / "b.pt2"), "--program", "b"]) == 0


def test_version():
    proc = subprocess.run([sys.executable, "-m", "pt2format", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    major, minor = pt2format.FORMAT_VERSION
    assert proc.stdout.strip() == f"pt2format {pt2format.__version__} (format {major}.{minor})"
