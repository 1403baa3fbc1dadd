"""Helpers for the TypeScript reader tests: build and run it, and make .pt2f files independently.

`pack_container` writes the header and section table straight from SPEC.md
§2-3 (not through pt2format's writer), `flatc_binary` encodes a JSON tree with
flatc itself, and `FbBuilder` hand-assembles FlatBuffers for hostile inputs,
so the TS reader is checked against the spec and third-party bytes as well
as against pt2format's own writer.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TS_DIR = ROOT / "loaders" / "ts"
CLI = TS_DIR / "dist" / "cli.js"
FBS = ROOT / "schema" / "pt2format.fbs"

MAGIC = b"\x89PT2F\r\n\x1a"
HEADER_SIZE = 64
ENTRY_SIZE = 48
PROGRAM, DATA = 1, 2
FLATBUFFERS, MSGPACK, JSON = 1, 2, 3


def missing_toolchain() -> str | None:
    """Why the TS tests cannot run here, or None."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} not found on PATH (install Node.js >= 18; scripts/build_ts.sh does it as root)"
    return None


@functools.cache
def build() -> None:
    """Build loaders/ts once per test session (scripts/build_ts.sh is a no-op when up to date)."""
    r = subprocess.run(["bash", str(ROOT / "scripts" / "build_ts.sh"), "--no-browser"], capture_output=True,
                       text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"scripts/build_ts.sh failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")


def node(*args, timeout: float = 120, cwd=TS_DIR) -> subprocess.CompletedProcess:
    return subprocess.run(["node", *map(str, args)], capture_output=True, cwd=cwd, timeout=timeout)


def ts_dump(path, validate: bool = True) -> subprocess.CompletedProcess:
    """`node dist/cli.js dump FILE` (bytes stdout, so the comparison is byte for byte).

    `validate=False` (`--no-validate`) compares the decoder alone, against Python's `_codecs.decode`."""
    return node(CLI, "dump", path, *([] if validate else ["--no-validate"]))


def dump_batch(paths, timeout: float = 300, validate: bool = True, verify_data: bool = False) -> list[dict]:
    """Dump many files in one Node process; one record per file (see tools/dump-batch.mjs).

    `validate=False`: the decoder alone; `verify_data=True`: also every data checksum (as pt2format.validate)."""
    out = []
    paths = [str(p) for p in paths]
    flags = (["--verify-data"] if verify_data else []) + ([] if validate else ["--no-validate"])
    for i in range(0, len(paths), 200):  # keep argv short
        r = node(TS_DIR / "tools" / "dump-batch.mjs", *flags, *paths[i:i + 200], timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"dump-batch failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
        # split on \n only: dumps may hold U+2028, which str.splitlines() treats as a line break
        out += [json.loads(line) for line in r.stdout.decode("utf-8").split("\n") if line]
    return out


_AT = re.compile(r" at (\S+): ")


def errors_at(paths) -> dict[str, tuple[str | None, str | None, dict]]:
    """Per file (as a str): the TS reader's error class, the path its message names (` at PATH: `), and the record."""
    out = {}
    for r in dump_batch(paths, verify_data=True):
        found = _AT.search(r.get("message", ""))
        out[r["file"]] = (r.get("error"), found.group(1) if found else None, r)
    return out


def chromium() -> str | None:
    for exe in ("chromium", "chromium-browser"):
        path = shutil.which(exe)
        if path:
            return path
    return None



# ---------------------------------------------------------------------------
# Containers straight from SPEC.md
# ---------------------------------------------------------------------------

def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def storage_layout(sizes, alignment: int = 64) -> tuple[list[int], int]:
    """Offsets of payloads placed back to back at `alignment` multiples, and the DATA section length."""
    offsets, end = [], 0
    for s in sizes:
        start = align_up(end, alignment)
        offsets.append(start)
        end = start + s
    return offsets, end


def pack_container(program: bytes, payloads=(), *, encoding: int = FLATBUFFERS, fmt=None, features: int = 0,
                   program_alignment: int = 8, data_alignment: int = 64) -> bytes:
    """A main .pt2f file per SPEC.md §2-3: header, section table, PROGRAM, one DATA section (if payloads).

    `fmt` defaults to the program's own `Package.format_version` (1.0 when it does not decode), so the
    header and the tree agree as a writer keeps them."""
    if fmt is None:
        fmt = program_format_version(program, {FLATBUFFERS: "flatbuffers", 2: "msgpack", 3: "json"}.get(encoding))
    nsec = 2 if payloads else 1
    hlen = HEADER_SIZE + ENTRY_SIZE * nsec
    prog_off = align_up(hlen, program_alignment)
    entries = [(PROGRAM, encoding, program_alignment, prog_off, len(program), 1, zlib.crc32(program))]
    body = bytearray(bytes(prog_off - hlen) + program)
    if payloads:
        offsets, length = storage_layout([len(p) for p in payloads])
        data = bytearray(length)
        for off, p in zip(offsets, payloads):
            data[off:off + len(p)] = p
        data_off = align_up(prog_off + len(program), data_alignment)
        body += bytes(data_off - (prog_off + len(program))) + data
        entries.append((DATA, 0, data_alignment, data_off, len(data), 1, zlib.crc32(bytes(data))))
    file_length = hlen + len(body)
    head = bytearray(struct.pack("<8sHHIHHIQQI20x", MAGIC, 1, nsec, hlen, fmt[0], fmt[1], 0, features,
                                 file_length, 0))
    for e in entries:
        head += struct.pack("<HHIQQII16x", *e)
    struct.pack_into("<I", head, 40, zlib.crc32(bytes(head)))
    return bytes(head + body)


def reseal(buf: bytearray) -> bytearray:
    """Recompute every CRC-32 section checksum that is in bounds, then the header checksum."""
    count = struct.unpack_from("<H", buf, 10)[0]
    hlen = min(HEADER_SIZE + ENTRY_SIZE * count, len(buf))
    for i in range(count):
        at = HEADER_SIZE + ENTRY_SIZE * i
        if at + ENTRY_SIZE > len(buf):
            break
        _k, _e, _a, off, length, ck_kind, _c = struct.unpack_from("<HHIQQII", buf, at)
        if ck_kind == 1 and off + length <= len(buf):
            struct.pack_into("<I", buf, at + 28, zlib.crc32(bytes(buf[off:off + length])))
    struct.pack_into("<I", buf, 40, 0)
    struct.pack_into("<I", buf, 40, zlib.crc32(bytes(buf[:hlen])))
    return buf


def section_table(buf: bytes) -> list[tuple]:
    """(kind, encoding, alignment, offset, length, checksum_kind, checksum) per section entry."""
    count = struct.unpack_from("<H", buf, 10)[0]
    return [struct.unpack_from("<HHIQQII", buf, HEADER_SIZE + ENTRY_SIZE * i) for i in range(count)]


def flatc_binary(json_text: str, tmp: Path) -> bytes:
    """Encode a flatc-convention JSON tree with flatc itself (`flatc -b schema/pt2format.fbs x.json`).

    flatc does not parse a non-canonical NaN's "nan:0x<bits>" spelling (SPEC.md section 4): those
    floats are handed to it as "nan", and the comparison is against flatc's own buffer."""
    src = tmp / "tree.json"
    src.write_text(re.sub(r'"nan:0x[0-9a-f]{16}"', '"nan"', json_text), encoding="utf-8")
    r = subprocess.run(["flatc", "-b", "-o", str(tmp), str(FBS), str(src)], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"flatc failed: {r.stderr}")
    outs = [p for p in tmp.glob("tree.*") if p.name != "tree.json"]  # extension from the schema's file_extension
    if len(outs) != 1:
        raise RuntimeError(f"flatc wrote {outs}, expected one binary")
    return outs[0].read_bytes()


# ---------------------------------------------------------------------------
# Hand-assembled FlatBuffers (hostile inputs)
# ---------------------------------------------------------------------------

def field_id(cls, name: str) -> int:
    """The vtable slot id of `cls.name` from the generated model (not hard-coded)."""
    for f in cls.FIELDS:
        if f[0] == name:
            return f[1]
    raise KeyError(name)


def union_index(union: str, member: str) -> int:
    from pt2format._generated import model
    return model.UNIONS[union].index(member) + 1


# ---------------------------------------------------------------------------
# Headless Chromium
# ---------------------------------------------------------------------------

BROWSER_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--disable-extensions", "--mute-audio")


def run_page_dump(exe: str, ts_dir: Path, data: bytes, tmp: Path, timeout: float = 120) -> dict:
    """Serve ts_dir on 127.0.0.1, open browser/dump.html in headless Chromium, return its POSTed report.

    Only /dist/, /browser/ and /node_modules/flatbuffers/ are served, plus the
    file under test at /file.pt2f; the page POSTs {"status", "text"} to /report.
    """
    import http.server
    import threading

    allowed = ("/dist/", "/browser/", "/node_modules/flatbuffers/")
    got: dict = {}
    done = threading.Event()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(ts_dir), **kw)

        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript",
                          ".mjs": "text/javascript"}

        def log_message(self, *args):  # keep test output clean
            pass

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path == "/file.pt2f":
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if not path.startswith(allowed) or ".." in path:
                self.send_error(404)
                return
            super().do_GET()

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(204)
            self.end_headers()
            if self.path == "/report":
                got.update(json.loads(body.decode("utf-8")))
                done.set()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/browser/dump.html?file=/file.pt2f&report=/report"
    profile = tmp / "chromium-profile"
    log = tmp / "chromium.log"
    with open(log, "wb") as logf:
        proc = subprocess.Popen([exe, *BROWSER_FLAGS, f"--user-data-dir={profile}", url], stdout=logf,
                                stderr=subprocess.STDOUT)
        try:
            finished = done.wait(timeout)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            server.shutdown()
            server.server_close()
    if not finished:
        raise AssertionError(f"the page never reported back within {timeout}s; chromium log:\n"
                             + log.read_text(errors="replace")[-4000:])
    return got


def program_format_version(program: bytes, encoding) -> tuple:
    """(major, minor) of an encoded program's Package.format_version; (1, 0) when it does not decode."""
    from pt2format import _codecs

    try:
        fv = _codecs.decode(program, encoding).format_version
        return (fv.major, fv.minor) if fv is not None else (1, 0)
    except Exception:  # noqa: BLE001 - hostile or broken programs get the first version
        return (1, 0)


# -- hand-built FlatBuffers programs (shared offsets, deep nesting, bad vectors) --------------------

def fb_package(build_program_value):
    """A Package with one Program whose example_inputs is built by `build_program_value(builder)`."""
    import flatbuffers

    from pt2format._generated import model as m

    b = flatbuffers.Builder(1024)
    value = build_program_value(b)
    b.StartObject(len(m.Program.FIELDS))
    b.PrependUOffsetTRelativeSlot(field_id(m.Program, "example_inputs"), value, 0)
    prog = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(prog)
    progs = b.EndVector()
    b.StartObject(2)
    b.PrependUint32Slot(field_id(m.FormatVersion, "major"), 1, 0)
    fv = b.EndObject()
    b.StartObject(len(m.Package.FIELDS))
    b.PrependUOffsetTRelativeSlot(field_id(m.Package, "format_version"), fv, 0)
    b.PrependUOffsetTRelativeSlot(field_id(m.Package, "programs"), progs, 0)
    b.Finish(b.EndObject(), file_identifier=m.FILE_IDENTIFIER.encode())
    return bytes(b.Output())


def int_value(b, v=7):
    from pt2format._generated import model as m

    b.StartObject(1)
    b.PrependInt64Slot(field_id(m.IntValue, "value"), v, 0)
    iv = b.EndObject()
    return wrap_value(b, "IntValue", iv)


def wrap_value(b, member, table):
    from pt2format._generated import model as m

    b.StartObject(2)
    vid = field_id(m.Value, "value")
    b.PrependUint8Slot(vid - 1, union_index("ValueKind", member), 0)
    b.PrependUOffsetTRelativeSlot(vid, table, 0)
    return b.EndObject()


def list_value(b, items, record=None):
    from pt2format._generated import model as m

    b.StartVector(4, len(items), 4)
    for it in reversed(items):
        b.PrependUOffsetTRelative(it)
    vec = b.EndVector()
    if record is not None:
        record.append(vec)
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(field_id(m.ListValue, "items"), vec, 0)
    return wrap_value(b, "ListValue", b.EndObject())
