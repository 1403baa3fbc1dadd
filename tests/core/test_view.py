"""pt2format._view: what `pt2format view` embeds (no browser, no built page needed).

The page template is a stand-in with the embed marker; tests/native/test_viewer.py
runs the real page in Chromium.
"""

from __future__ import annotations

import base64
import re
import zlib

import pytest

import pt2f_samples

from pt2format import _view as view
from pt2format._api import write_package
from pt2format._container.header import SectionKind, unpack_header


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "tiny.pt2f"
    write_package(path, pt2f_samples.tiny_package((3, 5)), pt2f_samples.float_payloads((3, 5)), fsync=False)
    return path


@pytest.fixture
def template(tmp_path, monkeypatch):
    t = tmp_path / "viewer.html"
    t.write_text("<html><body>\n<!--PT2F-EMBED-->\n</body></html>", encoding="utf-8")
    monkeypatch.setenv(view.TEMPLATE_ENV, str(t))
    return t


def _program(buf: bytes) -> bytes:
    p = unpack_header(buf).sections[0]
    return buf[p.offset:p.end]


def test_weights_left_out_by_default_program_kept_byte_for_byte(sample):
    original = sample.read_bytes()
    data, shards, weights = view.page_bytes(sample)
    assert weights == "omitted" and shards == {}
    h = unpack_header(data)  # a valid container: header checksum, layout, lengths
    assert [s.kind for s in h.sections] == [SectionKind.PROGRAM]
    assert _program(data) == _program(original)
    assert h.sections[0].checksum == unpack_header(original).sections[0].checksum
    assert len(data) < len(original)


def test_with_weights_embeds_the_file_unchanged(sample):
    data, _, weights = view.page_bytes(sample, with_weights=True)
    assert weights == "embedded" and data == sample.read_bytes()


def test_max_weight_bytes_is_an_inclusive_limit(sample):
    size = sum(s.length for s in unpack_header(sample.read_bytes()).sections if s.kind == SectionKind.DATA)
    assert size > 0
    assert view.page_bytes(sample, max_weight_bytes=size)[2] == "embedded"
    assert view.page_bytes(sample, max_weight_bytes=size - 1)[2] == "omitted"


def test_damaged_program_is_the_readers_typed_error(sample, template, tmp_path):
    """A flipped byte in PROGRAM: view refuses with the same error pt2format.read raises, and writes no page."""
    import pt2format
    from pt2format.errors import ChecksumError

    buf = bytearray(sample.read_bytes())
    p = unpack_header(bytes(buf)).sections[0]
    buf[p.offset + p.length // 2] ^= 0x01
    sample.write_bytes(bytes(buf))
    with pytest.raises(ChecksumError) as want:
        pt2format.read(sample)
    with pytest.raises(ChecksumError) as got:
        view.render(sample)
    assert str(got.value) == str(want.value) and "tiny.pt2f" in str(got.value)


def test_damaged_data_is_refused_only_when_embedded(sample):
    """Without weights the page never reads the data; with them, every data checksum is checked first."""
    from pt2format.errors import ChecksumError

    buf = bytearray(sample.read_bytes())
    d = next(s for s in unpack_header(bytes(buf)).sections if s.kind == SectionKind.DATA)
    buf[d.offset] ^= 0x01
    sample.write_bytes(bytes(buf))
    assert view.page_bytes(sample)[2] == "omitted"
    with pytest.raises(ChecksumError, match="tiny.pt2f"):
        view.page_bytes(sample, with_weights=True)


@pytest.mark.parametrize("content", [b"", b"\x00" * 100, b"PK\x03\x04 not a pt2f file at all"])
def test_cli_view_refuses_an_unreadable_file_and_writes_no_page(tmp_path, template, capsys, content):
    """`pt2format view empty.pt2f` once exited 0 with a page showing the drop hint (issue #25, rough edge 3)."""
    import pt2format
    from pt2format.cli import main
    from pt2format.errors import Pt2FormatError

    bad = tmp_path / "empty.pt2f"
    bad.write_bytes(content)
    with pytest.raises(Pt2FormatError) as want:
        pt2format.read(bad)
    out = tmp_path / "page.html"
    assert main(["view", str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"pt2format view: {type(want.value).__name__}: {want.value}"
    assert "empty.pt2f" in err and not out.exists()


def test_cli_view_of_a_directory_is_a_typed_error(tmp_path, template, capsys):
    from pt2format.cli import main

    d = tmp_path / "dir.pt2f"
    d.mkdir()
    assert main(["view", str(d)]) == 1
    assert "FormatError" in capsys.readouterr().err and not (tmp_path / "dir.pt2f.html").exists()


def test_render_fills_the_marker(sample, template):
    page = view.render(sample, with_weights=True)
    assert view.MARKER not in page
    m = re.search(r'<script id="pt2f-data" type="application/octet-stream" data-name="tiny.pt2f" '
                  r'data-weights="embedded">([A-Za-z0-9+/=]+)</script>', page)
    assert m and base64.b64decode(m.group(1)) == sample.read_bytes()


def test_render_escapes_the_file_name(tmp_path, template):
    path = tmp_path / 'a"<b>.pt2f'
    write_package(path, pt2f_samples.tiny_package((2,)), pt2f_samples.float_payloads((2,)), fsync=False)
    page = view.render(path)
    assert 'data-name="a&quot;&lt;b&gt;.pt2f"' in page


def test_missing_template_names_the_variable(sample, tmp_path, monkeypatch):
    monkeypatch.setenv(view.TEMPLATE_ENV, str(tmp_path / "nope.html"))
    with pytest.raises(view.ViewerNotBuiltError, match=view.TEMPLATE_ENV):
        view.render(sample)


def test_page_inside_the_package_comes_first(tmp_path, monkeypatch):
    """An installed wheel reads the page from pt2format/_viewer/, never from a checkout path."""
    packaged, built = tmp_path / "pkg" / "viewer.html", tmp_path / "checkout" / "viewer.html"
    for p in (packaged, built):
        p.parent.mkdir()
        p.write_text("<html><!--PT2F-EMBED--></html>", encoding="utf-8")
    monkeypatch.delenv(view.TEMPLATE_ENV, raising=False)
    monkeypatch.setattr(view, "_PACKAGED", packaged)
    monkeypatch.setattr(view, "_BUILT", built)
    assert view.template_path() == packaged
    packaged.unlink()
    assert view.template_path() == built


@pytest.mark.parametrize("checkout", [True, False])
def test_missing_page_says_what_to_do_where_it_is(tmp_path, monkeypatch, checkout):
    """A checkout is told to build the page; an installation without one is told to reinstall with Node.js, or
    to build the page in a checkout and name it."""
    built = tmp_path / "loaders" / "ts" / "viewer" / "dist" / "viewer.html"
    if checkout:
        (tmp_path / "loaders" / "ts" / "viewer").mkdir(parents=True)
        (tmp_path / "loaders" / "ts" / "viewer" / "package.json").write_text("{}")
    monkeypatch.delenv(view.TEMPLATE_ENV, raising=False)
    monkeypatch.setattr(view, "_PACKAGED", tmp_path / "pkg" / "viewer.html")
    monkeypatch.setattr(view, "_BUILT", built)
    with pytest.raises(view.ViewerNotBuiltError) as e:
        view.template_path()
    if checkout:
        assert "scripts/build_ts.sh" in str(e.value)
    else:
        assert "Node.js" in str(e.value) and view.TEMPLATE_ENV in str(e.value)
    assert str(tmp_path) not in str(e.value)


def test_template_without_single_marker_is_refused(sample, tmp_path, monkeypatch):
    t = tmp_path / "bad.html"
    t.write_text("<html></html>", encoding="utf-8")
    monkeypatch.setenv(view.TEMPLATE_ENV, str(t))
    with pytest.raises(view.ViewerNotBuiltError, match="marker"):
        view.render(sample)
