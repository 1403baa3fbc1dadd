"""regen.py refuses a schema whose string fields or dtypes lack the attributes every reader depends on."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FBS = ROOT / "schema" / "pt2format.fbs"


def _regen_scratch(tmp_path, text):
    fbs = tmp_path / "pt2format.fbs"
    fbs.write_text(text)
    return subprocess.run([sys.executable, str(ROOT / "schema" / "regen.py"), "--fbs", str(fbs), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True)


def test_unchanged_schema_generates(tmp_path):
    # The control: the scratch generation itself works, so the refusals below are about the edit.
    proc = _regen_scratch(tmp_path, FBS.read_text())
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("edit, message", [
    (('  FLOAT32 = 7 (pt2f_itemsize: "4"),', "  FLOAT32 = 7,"), "ScalarType.FLOAT32 needs (pt2f_itemsize"),
    (('  FLOAT32 = 7 (pt2f_itemsize: "4"),', '  FLOAT32 = 7 (pt2f_itemsize: "0"),'), "ScalarType.FLOAT32 needs (pt2f_itemsize"),
    (('  UNSPECIFIED = 0,', '  UNSPECIFIED = 0 (pt2f_itemsize: "1"),'), "UNSPECIFIED holds no data"),
    (('  name: string (pt2f_string: "local_name");', "  name: string;"), "has no (pt2f_string"),
    (('  parts: [TensorPart] (pt2f_keys: "name unique", pt2f_since: "1.1");', '  parts: [TensorPart] (pt2f_keys: "nam unique", pt2f_since: "1.1");'),
     "TensorPart.nam is not a string field"),
    (('  parts: [TensorPart] (pt2f_keys: "name unique", pt2f_since: "1.1");', '  parts: [TensorPart] (pt2f_keys: "name", pt2f_since: "1.1");'),
     "needs a vector of tables and 'key sorted|unique'"),
    (('  dtype: ScalarType (pt2f_value: "nonzero");', '  dtype: ScalarType (pt2f_value: "member");'),
     "needs a union field and 'member', or an enum field"),
    (('  spec: InputSpecKind (pt2f_value: "member");', '  spec: InputSpecKind (pt2f_value: "nonzero");'),
     "needs a union field and 'member', or an enum field"),
], ids=["itemsize-missing", "itemsize-zero", "itemsize-on-unspecified", "string-class-missing", "keys-not-a-string",
        "keys-without-mode", "value-member-on-enum", "value-nonzero-on-union"])
def test_regen_refuses_a_missing_attribute(tmp_path, edit, message):
    text = FBS.read_text()
    old, new = edit
    assert old in text
    proc = _regen_scratch(tmp_path, text.replace(old, new, 1))
    assert proc.returncode != 0
    assert message in proc.stderr


def test_itemsizes_are_torchs():
    torch = pytest.importorskip("torch")
    from pt2format._generated import model as m
    from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE

    assert {int(k): v for k, v in m.ITEMSIZE.items()} == {
        int(st): dt.itemsize for dt, st in DTYPE_TO_SCALAR_TYPE.items()}


def test_every_scalar_type_maps_to_a_torch_dtype():
    pytest.importorskip("torch")
    from pt2format._generated import model as m
    from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE

    assert {int(t) for t in m.ScalarType if t != m.ScalarType.UNSPECIFIED} == {int(v) for v in DTYPE_TO_SCALAR_TYPE.values()}
