"""The command line: inspect, validate (exit 0/1/2), dump, convert; runs without torch."""

import subprocess
import sys
from pathlib import Path

import pytest


from pt2f_samples import float_payloads, tiny_package  # noqa: E402

from pt2format import _api  # noqa: E402
from pt2format._dump import dump  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def sample(tmp_path):
    path = tmp_path / "m.pt2f"
    pkg = tiny_package((3, 5, 7))
    sub = m.Graph(nodes=[m.Node(name="inner", target="torch.ops.aten.sin.default")])
    pkg.programs[0].graph.nodes[0].inputs.append(m.NamedArgument("body", m.GraphArgument("body", sub)))
    _api.write_package(path, pkg, float_payloads((3, 5, 7)))
    return path


def test_inspect(sample, capsys):
    assert main(["inspect", str(sample)]) == 0
    out = capsys.readouterr().out
    assert "format: 1.0" in out
    assert "PROGRAM FLATBUFFERS" in out and "DATA    RAW" in out
    assert "forward: 4 nodes (1 in 1 subgraphs)" in out
    assert "     3  torch.ops.aten.add.Tensor" in out and "     1  torch.ops.aten.sin.default" in out
    assert "tensors: 3 in 3 storages, 60 bytes" in out
    assert "dtypes: FLOAT32 x3" in out


def test_inspect_top(sample, capsys):
    assert main(["inspect", "--top", "1", str(sample)]) == 0
    out = capsys.readouterr().out
    assert "aten.sin" not in out and "... 1 more operators" in out


def test_inspect_hexdump(sample, capsys):
    assert main(["inspect", "--hexdump", str(sample)]) == 0
    out = capsys.readouterr().out
    assert '00000000  89 50 54 32 46 0d 0a 1a' in out and "section_count = 2" in out


def test_validate_ok(sample, capsys):
    assert main(["validate", str(sample)]) == 0
    assert capsys.readouterr().out == "OK\n"


def test_validate_bad_file(sample, capsys):
    data = bytearray(sample.read_bytes())
    data[-1] ^= 1
    sample.write_bytes(data)
    assert main(["validate", str(sample)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ChecksumError" in captured.err and "storages[2]" in captured.err


def test_validate_missing_file(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope")]) == 1
    assert "No such file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["validate"], ["frobnicate", "x"], ["convert"],
                                  ["convert", "x", "--encoding", "xml", "-o", "y"]])
def test_usage_errors_exit_2(argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2


def test_dump(sample, capsys):
    assert main(["dump", str(sample)]) == 0
    assert capsys.readouterr().out == dump(sample)


def test_convert(sample, tmp_path, capsys):
    out = tmp_path / "out.pt2f"
    assert main(["convert", str(sample), "--encoding", "json", "-o", str(out), "--no-fsync"]) == 0
    assert dump(out) == dump(sample)
    with _api.read(out) as f:
        assert f.header.sections[0].encoding == 3


def test_module_entry_point_without_torch(sample):
    code = ("import sys, runpy; sys.argv = ['pt2format', 'validate', sys.argv[1]]\n"
            "try:\n    runpy.run_module('pt2format', run_name='__main__')\n"
            "except SystemExit as e:\n    assert 'torch' not in sys.modules, 'torch imported'\n    raise\n")
    proc = subprocess.run([sys.executable, "-c", code, str(sample)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "OK\n"
