"""Coverage-guided fuzzing of the Python reader: `read` + `validate` on every input, `load` on a share.

Each input is one mode byte then a body, so mutations are not all stopped by
the CRCs (the same three ways as loaders/cpp/fuzz/fuzz_reader.cc):

  mode % 3 == 0: the body is a whole file, as is;
  mode % 3 == 1: the body is a whole file whose section and header checksums
                 are recomputed first (reaches the section table, the codecs
                 and validation);
  mode % 3 == 2: the body's first byte picks the encoding, the rest is the
                 PROGRAM section of a well-formed container (reaches the
                 decoders directly).

A `Pt2FormatError` is a clean rejection. Any other exception is a finding:
the input and its traceback are written to the findings directory and the
run goes on (`scripts/fuzz_python.sh` fails if the directory is not empty).
Inputs that read cleanly are also loaded with `pt2format.load` when their
CRC-32 is 0 mod LOAD_SHARE.

Run through scripts/fuzz_python.sh (atheris, libFuzzer flags after the
arguments); `--replay FILE...` runs inputs once without atheris (the
regression test uses it).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import traceback
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "conformance" / "golden"
LOAD_SHARE = 32
ENCODINGS = ("flatbuffers", "msgpack", "json")
FINDINGS = Path(os.environ.get("PT2F_FUZZ_FINDINGS", ROOT / "build" / "py-fuzz" / "findings"))
_SCRATCH = Path(tempfile.mkdtemp(prefix="pt2f-pyfuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
_seen = set()


def golden_files():
    return sorted(GOLDEN.glob("*/*/program.pt2f"))


def seed_inputs():
    """(name, bytes) seeds: each golden file in all three modes."""
    from pt2format._container.header import ENCODING_NAMES
    from pt2format._container.reader import ContainerFile

    out = []
    for path in golden_files():
        data = path.read_bytes()
        case = f"{path.parent.parent.name}-{path.parent.name}"  # version and case: 1.0 and 1.1 share case names
        out.append((f"{case}.raw", b"\x00" + data))
        out.append((f"{case}.resealed", b"\x01" + data))
        with ContainerFile(path) as c:
            enc = ENCODING_NAMES[c.header.sections[0].encoding]
            program = bytes(c.section_view(0))
        out.append((f"{case}.program", b"\x02" + bytes([ENCODINGS.index(enc)]) + program))
    return out


def _file_bytes(data: bytes):
    """The file to read for one fuzz input (None when the input is too short to say)."""
    from pt2f_samples import reseal_sections

    if len(data) < 2:
        return None
    mode, body = data[0] % 3, data[1:]
    if mode == 0:
        return body
    if mode == 1:
        return bytes(reseal_sections(bytearray(body)))
    return _wrap_program(ENCODINGS[body[0] % 3], body[1:])


def _wrap_program(encoding: str, program: bytes) -> bytes:
    from pt2format._container.align import PROGRAM_ALIGNMENT, align_up
    from pt2format._container.header import ENCODING_BY_NAME, header_length, pack_header
    from pt2format._container.writer import build_header

    header = build_header(format_version=(1, 0), required_features=0, program_length=len(program),
                          program_crc=zlib.crc32(program), encoding=ENCODING_BY_NAME[encoding], data_layout=None,
                          data_crc=None)
    head = pack_header(header)
    start = align_up(header_length(1), PROGRAM_ALIGNMENT)
    return head + bytes(start - len(head)) + program


def one_input(data: bytes) -> None:
    """Run one input through the reader; record (and swallow) anything that is not a Pt2FormatError."""
    from pt2format.errors import Pt2FormatError

    try:
        blob = _file_bytes(data)
    except Exception:  # noqa: BLE001 - a body too broken for the test-side resealer: not the reader's business
        return
    if blob is None:
        return
    path = _SCRATCH / "input.pt2f"
    path.write_bytes(blob)
    stage = "read"
    try:
        import pt2format

        with pt2format.read(path) as f:
            names = [p.name for p in f.package.programs]
        stage = "validate"
        pt2format.validate(path)
        if zlib.crc32(data) % LOAD_SHARE == 0:
            stage = "load"
            for name in names:
                pt2format.load(path, program=name)
    except Pt2FormatError:
        pass
    except Exception as e:  # noqa: BLE001 - exactly what the fuzzer looks for
        _record(data, stage, e)


def _record(data: bytes, stage: str, e: BaseException) -> None:
    tb = traceback.extract_tb(e.__traceback__)
    where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
    key = (stage, type(e).__name__, where)
    if key in _seen:
        return
    _seen.add(key)
    FINDINGS.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:16]
    (FINDINGS / f"{digest}.input").write_bytes(data)
    (FINDINGS / f"{digest}.txt").write_text(
        f"stage: {stage}\n{type(e).__name__} at {where}: {str(e)[:500]}\n\n" + "".join(traceback.format_exception(e)))
    print(f"FINDING {digest}: {stage}: {type(e).__name__} at {where}: {str(e)[:200]}", file=sys.stderr, flush=True)


def write_seeds(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    seeds = seed_inputs()
    for name, data in seeds:
        (directory / name).write_bytes(data)
    return len(seeds)


def _import_corpus_ops() -> None:
    """Define the custom operators the golden files call, so `load` of an input grown from them goes on past
    node targets to the stored guards (the 1.1 custom_op program has `input_guards` and `guard_sources`)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import conformance.oplibs.custom_ops  # noqa: F401


def main(argv) -> int:
    if argv and argv[0] == "--seeds":
        print(write_seeds(Path(argv[1])))
        return 0
    if argv and argv[0] == "--replay":
        import warnings

        warnings.simplefilter("ignore")
        _import_corpus_ops()
        for p in argv[1:]:
            one_input(Path(p).read_bytes())
        return 1 if _seen else 0
    import atheris

    # Coverage is measured over the reader (container, codecs, validation),
    # which is what most inputs exercise; torch and the loader are imported
    # afterwards, uninstrumented, so loads on the share stay fast.
    with atheris.instrument_imports(include=["pt2format"], exclude=["pt2format.loaders", "pt2format.exporter"]):
        import pt2format._api  # noqa: F401
        import pt2format._codecs.flatbuffers  # noqa: F401
        import pt2format._codecs.json  # noqa: F401
        import pt2format._codecs.msgpack  # noqa: F401
        import pt2format._validate  # noqa: F401
        import pt2format.errors  # noqa: F401
    import torch  # noqa: F401

    import pt2format.loaders  # noqa: F401
    import warnings

    _import_corpus_ops()

    warnings.simplefilter("ignore")
    atheris.Setup([sys.argv[0], *argv], one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
