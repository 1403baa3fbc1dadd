"""Storages without data (format 1.1, required_features bit 2): the three readers accept, dump and refuse alike.

The program is a real one: a module built on the meta device and exported
(as the corpus case `meta_device_state`), saved by pt2format in each
encoding. Python's reader is the reference; the C++ and TypeScript readers
must give its canonical dump byte for byte, accept the file, refuse each
broken rule with the same class at the same field path, and never hand out
bytes for a tensor that has none.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch

import invalid_corpus as IC
import native_util_cpp as C
import native_util_ts as T
import pt2format
from pt2format._container.header import FEATURE_META_STORAGES
from pt2format.errors import Pt2FormatError

ENCODINGS = ("flatbuffers", "msgpack", "json")


class MetaState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 3))
        self.register_buffer("tail", self.scale[1:], persistent=False)  # a view of another buffer

    def forward(self, x):
        return self.lin(x) * self.scale + self.tail.sum()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{encoding: path} of the meta-device program, saved by pt2format."""
    with torch.device("meta"):
        module = MetaState()
    ep = torch.export.export(module, (torch.randn(2, 4, device="meta"),))
    out = {}
    for enc in ENCODINGS:
        path = tmp_path_factory.mktemp("meta") / f"meta-{enc}.pt2f"
        pt2format.save(ep, path, encoding=enc, progress=False, fsync=False)
        out[enc] = path
    return out


def _python_dump(path) -> bytes:
    return subprocess.run([sys.executable, "-m", "pt2format", "dump", str(path)], capture_output=True,
                          check=True).stdout


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_three_readers_dump_a_meta_device_program_alike(saved, cpp_release, ts_reader, encoding):
    path = saved[encoding]
    with pt2format.read(path) as f:
        assert f.package.required_features & FEATURE_META_STORAGES
        assert f.package.storages and all(st.meta_nbytes and not st.size for st in f.package.storages)
    want = _python_dump(path)
    r = C.run(cpp_release / "pt2f-dump", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want
    t = T.ts_dump(path)
    assert t.returncode == 0, t.stderr
    assert t.stdout == want


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_three_readers_accept_a_meta_device_program(saved, cpp_release, ts_reader, encoding):
    """Validation and every data checksum, as pt2format.validate (the invalid corpus's verdicts)."""
    path = saved[encoding]
    assert IC.python_verdict(path) == IC.OK
    assert IC.cpp_verdict(cpp_release, path) == IC.OK
    assert IC.ts_verdicts([path]) == {str(path): IC.OK}


def test_meta_tensor_bytes_are_refused_by_name_and_storages_are_empty(saved, cpp_release, ts_reader):
    """A meta tensor has no bytes: tensor(i) names it (never a view of other bytes); a storage is empty, as Python's."""
    path = saved["flatbuffers"]
    with pt2format.read(path) as f:
        n_tensors = len(f.package.tensors)
        py_sizes = [len(f.storage_view(i)) for i in range(len(f.package.storages))]
    assert py_sizes and set(py_sizes) == {0}
    # C++: the compiled README example reads every parameter with File::tensor.
    r = C.run(cpp_release / "pt2f-inspect-example", path)
    assert r.returncode == 1, r.stdout
    assert re.search(r"at tensors\[\d+\]\.storage: tensor is a meta-device tensor", r.stderr), r.stderr
    # TypeScript: tensor(i) for every row, storageBytes(i) for every storage.
    script = (
        "import { readFileSync } from 'node:fs';"
        "import { readPt2f } from './dist/index.js';"
        "const f = readPt2f(new Uint8Array(readFileSync(process.argv[1])));"
        "const tensors = [];"
        f"for (let i = 0; i < {n_tensors}; i++) {{"
        "  try { f.tensor(i); tensors.push('read'); } catch (e) { tensors.push(`${e.name}: ${e.message}`); }"
        "}"
        "const storages = [];"
        f"for (let i = 0; i < {len(py_sizes)}; i++) storages.push(f.storageBytes(i).length);"
        "console.log(JSON.stringify({tensors, storages}));")
    r = subprocess.run(["node", "--input-type=module", "-e", script, str(path)], cwd=T.TS_DIR,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["storages"] == py_sizes
    assert len(got["tensors"]) == n_tensors
    for i, msg in enumerate(got["tensors"]):
        assert msg.startswith("ValidationError: ") and f"at tensors[{i}].storage" in msg, msg
        assert "meta-device tensor" in msg, msg


META_CASES = sorted({IC.entry_id(e).rsplit("-", 1)[0] for e in IC.entries()
                     if IC.entry_id(e).startswith("meta_storage_")})


def _where(message: str) -> str:
    m = re.search(r"\bat ([^:]+): ", message)
    assert m, message
    return m.group(1)


def test_the_invalid_corpus_covers_the_four_meta_storage_rules():
    assert META_CASES == ["meta_storage_holds_bytes", "meta_storage_tensor_not_meta",
                          "meta_storage_tensor_past_end", "meta_storage_without_feature"]


@pytest.mark.parametrize("case", META_CASES)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_each_meta_storage_rule_is_refused_at_the_same_field(cpp_release, ts_reader, case, encoding):
    """Same class and same field path as Python, for each of the four rules (conformance/invalid/)."""
    path = IC.INVALID_DIR / f"{case}-{encoding}.pt2f"
    with pytest.raises(Pt2FormatError) as info:
        pt2format.validate(path)
    want = (type(info.value).__name__, info.value.path)
    r = C.run(cpp_release / "pt2f-dump", path)
    assert r.returncode == C.EXIT_BAD_FILE, r.stderr
    err = r.stderr
    assert (err.split("pt2f-dump: ", 1)[1].split(":", 1)[0], _where(err)) == want, err
    [rec] = T.dump_batch([path], verify_data=True)
    assert not rec["ok"], rec
    assert (rec["error"], _where(rec["message"])) == want, rec
