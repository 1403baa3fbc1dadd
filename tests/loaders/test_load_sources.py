"""load from paths, bytes and file objects; extra_files/metadata out; warnings and messages a user reads."""

from __future__ import annotations

import copy
import inspect
import io
import os
import warnings

import pytest
import torch

import pt2format
from pt2format import _api
from pt2format._generated import model as m
from pt2format.exporter import export_package


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return {"out": torch.relu(self.lin(x))}


@pytest.fixture(scope="module")
def ep():
    torch.manual_seed(0)
    return torch.export.export(Small(), (torch.randn(4, 3),))


def _outputs(prog, x):
    with torch.no_grad():
        return prog.module()(x)["out"]


@pytest.mark.parametrize("kind", ["bytes", "bytesio", "file"])
def test_load_from_bytes_and_file_objects(ep, tmp_path, kind):
    path = tmp_path / "m.pt2f"
    pt2format.save(ep, path)
    x = torch.randn(4, 3)
    want = _outputs(ep, x)
    if kind == "file":
        with open(path, "rb") as f:
            got = pt2format.load(f)
    else:
        data = path.read_bytes()
        got = pt2format.load(data if kind == "bytes" else io.BytesIO(data))
    assert torch.equal(_outputs(got, x), want)
    # Loaded tensors are private (copy-on-write in memory): writing one never changes the source.
    with torch.no_grad():
        got.state_dict["lin.weight"].add_(1)
    assert torch.equal(pt2format.load(path).state_dict["lin.weight"], ep.state_dict["lin.weight"])


def test_save_to_a_stream_equals_save_to_a_file(ep, tmp_path):
    buf = io.BytesIO()
    pt2format.save(ep, buf, extra_files={"a": b"1"}, metadata={"k": "v"})
    pt2format.save(ep, tmp_path / "m.pt2f", extra_files={"a": b"1"}, metadata={"k": "v"})
    assert buf.getvalue() == (tmp_path / "m.pt2f").read_bytes()


def test_extra_files_and_metadata_come_back_from_load(ep, tmp_path):
    path = tmp_path / "m.pt2f"
    pt2format.save(ep, path, extra_files={"tok.json": "{}", "blob": b"\x00\xff"}, metadata={"license": "MIT"})
    extra = {"stale": b"dropped"}
    meta = {}
    pt2format.load(path, extra_files=extra, metadata=meta)
    assert extra == {"blob": b"\x00\xff", "tok.json": b"{}"}
    assert meta == {"license": "MIT"}


def test_torch_archive_is_named_with_the_command(ep, tmp_path):
    path = tmp_path / "m.pt2"
    torch.export.save(ep, path)
    for reader in (pt2format.load, pt2format.read):
        with pytest.raises(pt2format.HeaderError, match=r"(?s)torch\.export archive.*pt2format convert model\.pt2"):
            reader(path)
    with pytest.raises(pt2format.HeaderError, match="torch.export archive"):
        pt2format.load(path.read_bytes())


def test_plain_zip_is_not_called_a_torch_archive(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "x.zip", "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(pt2format.HeaderError) as info:
        pt2format.read(tmp_path / "x.zip")
    assert "torch" not in str(info.value) and "bad magic" in str(info.value)


def test_multi_program_message_lists_the_programs(ep, tmp_path):
    path = tmp_path / "llm.pt2f"
    pt2format.save({"prefill": ep, "decode": ep}, path)
    with pytest.raises(pt2format.LoadError) as info:
        pt2format.load(path)
    msg = str(info.value)
    assert "2 programs ('decode', 'prefill')" in msg and "program=" in msg and "no program named" not in msg
    with pytest.raises(pt2format.LoadError, match="no program named 'other'; this file holds 'decode', 'prefill'"):
        pt2format.load(path, program="other")


def test_fallback_warning_is_public_and_points_at_the_caller(ep, tmp_path):
    pkg, payloads = export_package(ep)
    spec = pkg.programs[0].module_call_graph[0].signature.out_spec
    spec.kind, spec.type_name, spec.field_names, spec.keys = m.TreeSpecKind.CUSTOM, "gone.Output", ["out"], []
    _api.write_package(tmp_path / "m.pt2f", copy.deepcopy(pkg), payloads)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        pt2format.load(tmp_path / "m.pt2f")
    hits = [w for w in caught if issubclass(w.category, pt2format.FallbackWarning)]
    assert hits, [str(w.message) for w in caught]
    assert os.path.samefile(hits[0].filename, __file__) and hits[0].lineno == line
    assert issubclass(pt2format.FallbackWarning, UserWarning)

