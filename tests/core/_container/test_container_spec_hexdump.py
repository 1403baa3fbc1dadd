"""The annotated hexdump in schema/SPEC.md §3.1 is exactly what the writer produces for its sample tree.

Regenerate the block after an intended change with
`python tests/core/_container/test_container_spec_hexdump.py --write`.
"""

import re
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

from pt2format import _api  # noqa: E402
from pt2format._container.annotate import annotate  # noqa: E402
from pt2format._generated import model as m  # noqa: E402

SPEC = ROOT / "schema" / "SPEC.md"
BLOCK = re.compile(r"(<!-- BEGIN generated hexdump -->\n```text\n)(.*?)(```\n<!-- END generated hexdump -->)", re.S)


def spec_sample_bytes() -> bytes:
    """The SPEC's example: one empty program "forward" and one float32 tensor [1.0, 2.0], FlatBuffers."""
    pkg = m.Package(producer=m.Producer(name="spec"),  # format_version: the writer records the minor it needs
                    programs=[m.Program(name="forward", graph=m.Graph(), signature=m.GraphSignature())],
                    tensors=[m.Tensor(storage=0, dtype=m.ScalarType.FLOAT32, sizes=[2], strides=[1])],
                    storages=[m.Storage()])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "spec.pt2f"
        _api.write_package(path, pkg, [struct.pack("<2f", 1.0, 2.0)], fsync=False)
        return path.read_bytes()


def test_spec_hexdump_matches_writer():
    match = BLOCK.search(SPEC.read_text(encoding="utf-8"))
    assert match, "SPEC.md lost its generated hexdump block"
    assert match.group(2) == annotate(spec_sample_bytes())


def test_spec_sample_fields_by_hand():
    """Independent of the annotator: the SPEC sample's key fields, read with plain struct calls."""
    data = spec_sample_bytes()
    assert data[:8] == b"\x89PT2F\r\n\x1a"
    assert struct.unpack_from("<HHI", data, 8) == (1, 2, 160)
    assert struct.unpack_from("<Q", data, 32)[0] == len(data)
    kind, enc, align, offset, length = struct.unpack_from("<HHIQQ", data, 64 + 48)
    assert (kind, enc, align, length) == (2, 0, 64, 8) and offset % 64 == 0 and offset + 8 == len(data)
    assert data[offset:] == struct.pack("<2f", 1.0, 2.0)
    assert data[160 + 4:160 + 8] == b"P2FP"  # FlatBuffers file identifier right after the root offset


if __name__ == "__main__" and "--write" in sys.argv:
    text = SPEC.read_text(encoding="utf-8")
    new, n = BLOCK.subn(lambda mt: mt.group(1) + annotate(spec_sample_bytes()) + mt.group(3), text)
    assert n == 1, "marker block not found"
    SPEC.write_text(new, encoding="utf-8")
    print("updated", SPEC)
