"""Quantized, sparse and wrapper-subclass rows (1.1): the three readers accept and dump them alike, and refuse alike."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import native_util_cpp as C
import native_util_ts as T
import pt2format
from pt2format.errors import ValidationError

import crafting
from subclass_samples import RecordModule, record_mutations


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("composite") / "w.pt2f"
    coo = torch.sparse_coo_tensor(torch.tensor([[0, 1], [2, 3]]), torch.tensor([1.0, 2.0]), (4, 4)).coalesce()
    per_channel = torch.quantize_per_channel(torch.randn(3, 2), torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64),
                                             torch.tensor([0, 1, 2]), 0, torch.qint8)
    pt2format.save_weights({"coo": coo, "csr": coo.to_dense().to_sparse_csr(), "q": per_channel,
                            "qt": torch.quantize_per_tensor(torch.randn(4), 0.1, 2, torch.quint8)}, path, progress=False)
    return path


def _python_dump(path) -> bytes:
    return subprocess.run([sys.executable, "-m", "pt2format", "dump", str(path)], capture_output=True, check=True).stdout


def test_three_readers_dump_composite_rows_alike(saved, cpp_release, ts_reader):
    want = _python_dump(saved)
    assert b'"SPARSE_COO"' in want and b'"QINT8"' in want
    r = C.run(cpp_release / "pt2f-dump", saved)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want
    t = T.ts_dump(saved)
    assert t.returncode == 0, t.stderr
    assert t.stdout == want


def test_a_part_pointing_forward_is_refused_by_all(saved, cpp_release, ts_reader, tmp_path):
    def mutate(p):
        i = next(i for i, t in enumerate(p.tensors) if t.parts)
        p.tensors[i].parts[0].tensor = i  # not an earlier row
    bad = crafting.craft(saved, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(ValidationError, match="earlier tensor row"):
        pt2format.validate(bad)
    r = C.run(cpp_release / "pt2f-dump", "--error-class", bad)
    assert r.stdout.decode().strip() == "ValidationError"
    [rec] = T.dump_batch([bad])
    assert rec["error"] == "ValidationError", rec


# --------------------------------------------------------------------------- structured contexts (EnumValue, ObjectValue)


@pytest.fixture(scope="module")
def records_program(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "p.pt2f"
    pt2format.save(torch.export.export(RecordModule(), (torch.randn(3),)), path, progress=False, fsync=False)
    return path


def test_three_readers_dump_structured_contexts_alike(records_program, cpp_release, ts_reader):
    want = _python_dump(records_program)
    assert b'"EnumValue"' in want and b'"NAMEDTUPLE"' in want and b'"DATACLASS"' in want
    r = C.run(cpp_release / "pt2f-dump", records_program)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want
    t = T.ts_dump(records_program)
    assert t.returncode == 0, t.stderr
    assert t.stdout == want


@pytest.mark.parametrize("name,mutate,message", record_mutations(), ids=[r[0] for r in record_mutations()])
def test_malformed_structured_contexts_are_refused_by_all(records_program, cpp_release, ts_reader, tmp_path, name,
                                                          mutate, message):
    bad = crafting.craft(records_program, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(ValidationError, match=message):
        pt2format.validate(bad)
    r = C.run(cpp_release / "pt2f-dump", "--error-class", bad)
    assert r.stdout.decode().strip() == "ValidationError", r.stderr
    [rec] = T.dump_batch([bad])
    assert rec["error"] == "ValidationError", rec
    assert message.split()[0] in rec.get("message", message), rec
