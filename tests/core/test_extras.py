"""extra_files and metadata (pt2format._extras): stored in the schema, validated both ways, handed back."""

from __future__ import annotations

import io

import pytest

from pt2f_samples import float_payloads, tiny_package, write_raw

from pt2format import _api, _extras
from pt2format._generated import model as m
from pt2format.cli import main
from pt2format.errors import ValidationError


def _save(target, extra_files=None, metadata=None, encoding="flatbuffers"):
    pkg = tiny_package((4,))
    payloads = _extras.attach(pkg, float_payloads((4,)), extra_files=extra_files, metadata=metadata)
    _api.write_package(target, pkg, payloads, encoding=encoding)
    return pkg


@pytest.mark.parametrize("encoding", ["flatbuffers", "msgpack", "json"])
def test_roundtrip(tmp_path, encoding):
    files = {"b.bin": bytes(range(256)) * 100, "a.txt": "héllo", "empty": b""}
    _save(tmp_path / "m.pt2f", files, {"license": "MIT", "z": ""}, encoding)
    with _api.read(tmp_path / "m.pt2f", verify_data=True) as f:
        assert [e.name for e in f.package.extra_files] == ["a.txt", "b.bin", "empty"]
        assert _extras.extra_files_dict(f) == {"a.txt": "héllo".encode(), "b.bin": files["b.bin"], "empty": b""}
        assert _extras.metadata_dict(f.package) == {"license": "MIT", "z": ""}
        assert bytes(_extras.extra_file_view(f, "a.txt")) == "héllo".encode()


def test_extra_file_bytes_live_in_the_data_section(tmp_path):
    big = b"\xab" * 100_000
    _save(tmp_path / "m.pt2f", {"big": big})
    with _api.read(tmp_path / "m.pt2f") as f:
        assert f.header.sections[0].length < 10_000  # not in the program section
        st = f.package.storages[f.package.extra_files[0].storage]
        assert st.size == len(big) and st.checksum_kind == m.ChecksumKind.CRC32


@pytest.mark.parametrize("name, why", [("", "1 to 255"), ("x" * 256, "1 to 255"), ("a\0b", "control"),
                                       ("a\nb", "control"), (3, "must be a str")])
def test_bad_names_refused_on_write(tmp_path, name, why):
    with pytest.raises((ValueError, TypeError), match=why):
        _save(tmp_path / "m.pt2f", {name: b"x"})
    with pytest.raises((ValueError, TypeError), match=why):
        _save(tmp_path / "n.pt2f", metadata={name: "x"})
    assert not list(tmp_path.iterdir())


def test_bad_values_refused_on_write(tmp_path):
    with pytest.raises(TypeError, match="bytes-like or str"):
        _save(tmp_path / "m.pt2f", {"a": 3})
    with pytest.raises(TypeError, match="must be a str"):
        _save(tmp_path / "m.pt2f", metadata={"a": b"x"})
    with pytest.raises(ValueError, match="at most"):
        _save(tmp_path / "m.pt2f", metadata={"a": "x" * (_extras.MAX_METADATA_BYTES + 1)})


def _planted(tmp_path, entries):
    """A file whose storages are laid out correctly (write_raw leaves them as given) and `entries` as planted."""
    pkg = tiny_package((4,))
    payloads = float_payloads((4,)) + [b"x"]
    pkg.segments = [m.Segment(file=0, section=1)]
    pkg.storages = [m.Storage(segment=0, offset=0, size=16), m.Storage(segment=0, offset=64, size=1)]
    pkg.extra_files = entries
    write_raw(tmp_path / "bad.pt2f", pkg, payloads)
    return tmp_path / "bad.pt2f"


@pytest.mark.parametrize("entries, where", [
    ([m.ExtraFile("b", 1), m.ExtraFile("a", 1)], "extra_files[1].name"),
    ([m.ExtraFile("a", 1), m.ExtraFile("a", 1)], "extra_files[1].name"),
    ([m.ExtraFile("a\x01", 1)], "ExtraFile.name"),  # refused while decoding: its string class
    ([m.ExtraFile(None, 1)], "extra_files[0].name"),
    ([m.ExtraFile("a", 7)], "extra_files[0].storage"),
])
def test_hostile_extra_file_entries_rejected_on_read(tmp_path, entries, where):
    path = _planted(tmp_path, entries)
    with pytest.raises(ValidationError) as info:
        _api.read(path)
    assert info.value.path == where


def test_inspect_shows_metadata_and_extra_files(tmp_path, capsys):
    _save(tmp_path / "m.pt2f", {"notes.txt": b"12345"}, {"author": "me"})
    assert main(["inspect", str(tmp_path / "m.pt2f")]) == 0
    out = capsys.readouterr().out
    assert "author: 'me'" in out
    assert "extra files: notes.txt (5 bytes)" in out


def test_stream_roundtrip_keeps_extras():
    buf = io.BytesIO()
    _save(buf, {"a": b"1"}, {"k": "v"})
    with _api.read(buf.getvalue()) as f:
        assert _extras.extra_files_dict(f) == {"a": b"1"}
        assert _extras.metadata_dict(f.package) == {"k": "v"}
