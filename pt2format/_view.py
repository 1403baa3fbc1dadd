"""`pt2format view`: one self-contained HTML page showing a file's programs.

The page itself (TypeScript reader + viewer + layout worker, one file) is
built by `scripts/build_ts.sh` into `loaders/ts/viewer/dist/viewer.html`
and copied into wheels as `pt2format/_viewer/viewer.html`; this module only
embeds bytes into it, base64 in `<script>` elements the page decodes. It
reads the file with the Python reader first (header, checksums, program,
invariants; data checksums too when the data is embedded), so a file that
cannot be shown (empty, damaged, not a .pt2f) is the reader's typed error
here, naming the file and section, and no page is written: a page would
only show it too, or worse, the drop hint of an empty page. The page keeps
its own typed errors for files dropped on it.

Weights are left out unless asked (`with_weights`, or all data fits in
`max_weight_bytes`): the embedded file is then the PROGRAM section alone in
a fresh container, byte-identical program, so the page opens instantly and
its side panel says values are not available.
"""

from __future__ import annotations

import base64
import html
import os
import zlib
from pathlib import Path

from pt2format.errors import Pt2FormatError

MARKER = "<!--PT2F-EMBED-->"
TEMPLATE_ENV = "PT2FORMAT_VIEWER_HTML"
#: In an installed wheel: the page the build step put into the package (scripts/build_backend.py).
_PACKAGED = Path(__file__).resolve().parent / "_viewer" / "viewer.html"
#: In a checkout (editable install): the page scripts/build_ts.sh builds.
_BUILT = Path(__file__).resolve().parents[1] / "loaders" / "ts" / "viewer" / "dist" / "viewer.html"


class ViewerNotBuiltError(RuntimeError):
    """The viewer page is neither in the package nor built in the checkout."""


def template_path() -> Path:
    """The page: $PT2FORMAT_VIEWER_HTML, else the one inside the package (a wheel), else the checkout's build."""
    env = os.environ.get(TEMPLATE_ENV)
    if env:
        path = Path(env)
        if not path.is_file():
            raise ViewerNotBuiltError(f"{TEMPLATE_ENV} names no file: {path} (unset it to use this installation's "
                                      "page; in a checkout, scripts/build_ts.sh builds one)")
        return path
    for path in (_PACKAGED, _BUILT):
        if path.is_file():
            return path
    if (_BUILT.parents[1] / "package.json").is_file():  # a checkout: the page is built, not committed
        raise ViewerNotBuiltError("the viewer page is not built in this checkout: run `bash scripts/build_ts.sh "
                                  "--no-browser` (needs Node.js >= 18 and npm on PATH), or point "
                                  f"{TEMPLATE_ENV} at a built viewer.html")
    raise ViewerNotBuiltError("this installation of pt2format has no viewer page (it was built where Node.js was "
                              "not on PATH). Either reinstall it where `npm` (Node.js >= 18) is on PATH "
                              "(`pip install .` in a checkout builds the page into the package; a wheel or "
                              "sdist built with Node carries it), or build the page in a checkout with "
                              "`bash scripts/build_ts.sh --no-browser` and run "
                              f"`{TEMPLATE_ENV}=<checkout>/loaders/ts/viewer/dist/viewer.html pt2format view FILE`")


def _repack(header, program: bytes, encoding: int, data_sections, program_crc: int | None = None) -> bytes:
    """A main container holding `program` then the given (entry, bytes) DATA sections, in their order.

    `program_crc`: keep the original PROGRAM checksum (the program bytes are
    unchanged), so damage in them still shows in the page; None computes it.
    """
    from pt2format._container.align import align_up
    from pt2format._container.header import (ChecksumKind, Header, SectionEntry, SectionKind, header_length,
                                             pack_header)

    count = 1 + len(data_sections)
    offset = align_up(header_length(count), header.sections[0].alignment)
    p0 = header.sections[0]
    checksum = (p0.checksum_kind, p0.checksum) if program_crc is not None else (ChecksumKind.CRC32, zlib.crc32(program))
    entries = [SectionEntry(SectionKind.PROGRAM, encoding, p0.alignment, offset, len(program), *checksum)]
    chunks = [(offset, program)]
    end = offset + len(program)
    for entry, data in data_sections:
        start = align_up(end, entry.alignment)
        entries.append(SectionEntry(entry.kind, entry.encoding, entry.alignment, start, entry.length,
                                    entry.checksum_kind, entry.checksum))
        chunks.append((start, data))
        end = start + entry.length
    head = pack_header(Header(header.format_major, header.format_minor, header.required_features, end,
                              tuple(entries), header.header_version, header.flags))
    out = bytearray(end)
    out[:len(head)] = head
    for start, data in chunks:
        out[start:start + len(data)] = data
    return bytes(out)


def page_bytes(path, *, with_weights: bool = False, max_weight_bytes: int | None = None) -> tuple[bytes, dict, str]:
    """(main file bytes to embed, {shard name: bytes}, "embedded" | "omitted").

    Raises the reader's typed error (Pt2FormatError) when the file cannot be
    read. Programs in MessagePack or JSON are re-encoded as FlatBuffers (the
    encoding the TypeScript reader reads).
    """
    from pt2format._api import read

    # Read as `pt2format.read` does first (typed errors, no page for a file that cannot be shown); the
    # data checksums are checked on the same handle once we know the data is embedded.
    with read(path) as f:
        return _page_bytes(f, path, with_weights=with_weights, max_weight_bytes=max_weight_bytes)


def _page_bytes(f, path, *, with_weights: bool, max_weight_bytes: int | None) -> tuple[bytes, dict, str]:
    from pt2format._container.header import SectionEncoding, SectionKind, unpack_header

    from pt2format._source import read_regular

    names = [s.name for s in f.package.shard_files]
    buf = bytes(read_regular(path)[0])  # never a FIFO, device or directory: FormatError
    header = unpack_header(buf, file=str(path))
    prog = header.sections[0]
    program = buf[prog.offset:prog.end]
    encoding = prog.encoding
    if encoding != SectionEncoding.FLATBUFFERS:
        from pt2format import _codecs
        from pt2format._container.header import ENCODING_NAMES

        program = _codecs.encode(_codecs.decode(program, ENCODING_NAMES[SectionEncoding(encoding)]), "flatbuffers")
        encoding = SectionEncoding.FLATBUFFERS
    data = [(s, buf[s.offset:s.end]) for s in header.sections[1:] if s.kind == SectionKind.DATA]
    shards = _shard_files(path, names)
    total = sum(s.length for s, _ in data) + sum(len(b) for b in shards.values())
    embed = with_weights or (max_weight_bytes is not None and total <= max_weight_bytes)
    if embed and total:
        f.verify_data()  # the data the page will summarize: every checksum
    same = encoding == prog.encoding
    if not embed:
        return _repack(header, program, encoding, [], prog.checksum if same else None), {}, "omitted"
    if same and len(data) == len(header.sections) - 1:
        return buf, shards, "embedded"
    return _repack(header, program, encoding, data, prog.checksum if same else None), shards, "embedded"


def _shard_files(path, names) -> dict:
    """The sibling shard files `names` (listed by the file), read from its directory."""
    from pt2format._source import read_regular

    out = {}
    for name in names:
        if os.path.basename(name) == name and name not in ("", ".", ".."):
            try:
                out[name] = bytes(read_regular(Path(path).parent / name)[0])
            except (Pt2FormatError, OSError):
                continue  # missing or not a regular file: the page reports the shard as missing
    return out


def render(path, *, with_weights: bool = False, max_weight_bytes: int | None = None) -> str:
    """The self-contained HTML page for a .pt2f file."""
    from pt2format._source import read_regular

    template = bytes(read_regular(template_path())[0]).decode("utf-8")
    if template.count(MARKER) != 1:
        raise ViewerNotBuiltError(f"{template_path()} has no single {MARKER} marker (rebuild the viewer)")
    data, shards, weights = page_bytes(path, with_weights=with_weights, max_weight_bytes=max_weight_bytes)
    name = html.escape(Path(path).name, quote=True)
    parts = [f'<script id="pt2f-data" type="application/octet-stream" data-name="{name}" data-weights="{weights}">'
             f'{base64.b64encode(data).decode("ascii")}</script>']
    for shard, blob in shards.items():
        parts.append(f'<script type="application/octet-stream" data-shard="{html.escape(shard, quote=True)}">'
                     f'{base64.b64encode(blob).decode("ascii")}</script>')
    return template.replace(MARKER, "\n".join(parts), 1)


def serve(page: str, *, port: int = 0, open_browser: bool = True, timeout: float | None = None,
          announce=print) -> None:
    """Serve `page` at http://127.0.0.1:PORT/ (localhost only) until interrupted or `timeout` seconds pass."""
    import http.server
    import threading
    import time
    import webbrowser

    body = page.encode("utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            if self.path not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    announce(f"serving {url} (Ctrl-C to stop)", flush=True)
    if open_browser:
        webbrowser.open(url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        if timeout is None:
            while True:
                time.sleep(3600)
        else:
            time.sleep(timeout)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
