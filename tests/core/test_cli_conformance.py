"""`pt2format conformance`: every reader's dump of every golden file against expected.json, as a table.

Golden directories are built here with write_package (no torch). Other
readers are small scripts with known behaviour (right dump, wrong dump, crash,
hang, "unsupported encoding"), plus one run with the C++ and TypeScript
readers when they are built.
"""

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


from pt2f_samples import ENCODINGS, float_payloads, tiny_package, write_raw, write_shard  # noqa: E402

from pt2format import _api  # noqa: E402
from pt2format._conformance import default_golden_dir, find_golden  # noqa: E402
from pt2format._dump import dump  # noqa: E402
from pt2format._generated import model as m  # noqa: E402
from pt2format.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SIZES = (3, 5)


def make_case(vdir: Path, case: str, sizes=SIZES, encodings=ENCODINGS) -> Path:
    """<vdir>/<case>/<encoding>.pt2f for each encoding, and expected.json dumped from the first file only."""
    cdir = vdir / case
    cdir.mkdir(parents=True)
    for enc in encodings:
        _api.write_package(cdir / f"{enc}.pt2f", tiny_package(sizes), float_payloads(sizes), encoding=enc,
                           fsync=False)
    (cdir / "expected.json").write_text(dump(cdir / f"{encodings[0]}.pt2f"), encoding="utf-8")
    return cdir


@pytest.fixture()
def golden(tmp_path):
    root = tmp_path / "golden"
    make_case(root / "1.0", "tiny")
    make_case(root / "1.0", "three-json", sizes=(2, 4, 8), encodings=("json",))
    return root


FAKE = textwrap.dedent("""
    import os, sys, time
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "fbonly" and not os.path.basename(path).startswith("flatbuffers"):
        sys.stderr.write("program encoding not supported\\n")
        sys.exit(3)
    if mode == "crash":
        sys.stderr.write("noise\\nboom: cannot parse\\n")
        sys.exit(1)
    if mode == "hang":
        time.sleep(30)
    if mode == "signal":
        os.kill(os.getpid(), 9)
    from pt2format._dump import dump
    text = dump(path)
    if mode == "bad":
        text = text.replace('"name":"w1"', '"name":"w2"', 1)
    sys.stdout.buffer.write(text.encode("utf-8"))
""")


@pytest.fixture()
def fake(tmp_path, monkeypatch):
    """`fake(name, mode)` -> a --reader spec running FAKE in `mode` (the script imports pt2format from ROOT)."""
    script = tmp_path / "fake_reader.py"
    script.write_text(FAKE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return lambda name, mode: f"{name}={shlex.quote(sys.executable)} {shlex.quote(str(script))} {mode}"


def rows(out: str) -> dict:
    """Table rows as {golden file: [status per reader]} (header line excluded)."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("golden file "))
    table = {}
    for ln in lines[start + 1:]:
        if not ln:
            break
        label, *cells = ln.split()
        table[label] = cells
    return table


def run(argv, capsys):
    status = main(["conformance"] + [str(a) for a in argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_python_reader_all_ok(golden, capsys):
    status, out, _ = run([golden], capsys)
    assert status == 0, out
    assert rows(out) == {
        "1.0/three-json/json.pt2f": ["ok"],
        "1.0/tiny/flatbuffers.pt2f": ["ok"],
        "1.0/tiny/json.pt2f": ["ok"],  # expected.json was dumped from flatbuffers.pt2f
        "1.0/tiny/msgpack.pt2f": ["ok"],
    }
    assert "4 golden files x 1 readers: 4 ok, 0 unsupported, 0 MISMATCH, 0 ERROR" in out


def test_one_changed_byte_is_a_mismatch(golden, capsys):
    expected = golden / "1.0" / "tiny" / "expected.json"
    data = bytearray(expected.read_bytes())
    at = data.index(b'"name":"w1"') + len(b'"name":"w')
    data[at:at + 1] = b"7"
    expected.write_bytes(bytes(data))
    status, out, _ = run([golden], capsys)
    assert status == 1
    assert rows(out)["1.0/tiny/msgpack.pt2f"] == ["MISMATCH"]
    assert rows(out)["1.0/three-json/json.pt2f"] == ["ok"]
    assert f"MISMATCH 1.0/tiny/msgpack.pt2f [python]: first difference at byte {at}:" in out


def test_missing_expected_and_empty_case_are_errors(golden, capsys):
    (golden / "1.0" / "tiny" / "expected.json").unlink()
    (golden / "1.0" / "empty").mkdir()
    status, out, _ = run([golden], capsys)
    assert status == 1
    table = rows(out)
    assert table["1.0/tiny/json.pt2f"] == ["ERROR"]
    assert table["1.0/empty"] == ["ERROR"]
    assert "ERROR 1.0/empty [python]: no .pt2f file in the case" in out
    assert "ERROR 1.0/tiny/json.pt2f [python]: expected.json is missing" in out


def test_damaged_golden_file_is_an_error(golden, capsys):
    path = golden / "1.0" / "tiny" / "flatbuffers.pt2f"
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF  # magic
    path.write_bytes(bytes(data))
    status, out, _ = run([golden], capsys)
    assert status == 1
    assert rows(out)["1.0/tiny/flatbuffers.pt2f"] == ["ERROR"]
    assert "ERROR 1.0/tiny/flatbuffers.pt2f [python]: HeaderError:" in out


def test_external_readers(golden, fake, capsys):
    status, out, _ = run([golden, "--reader", fake("fb", "fbonly"), "--reader", fake("all", "any")], capsys)
    assert status == 0, out
    assert rows(out) == {
        "1.0/three-json/json.pt2f": ["ok", "unsupported", "ok"],
        "1.0/tiny/flatbuffers.pt2f": ["ok", "ok", "ok"],
        "1.0/tiny/json.pt2f": ["ok", "unsupported", "ok"],
        "1.0/tiny/msgpack.pt2f": ["ok", "unsupported", "ok"],
    }
    assert out.splitlines()[1].split() == ["golden", "file", "python", "fb", "all"]
    assert "4 golden files x 3 readers: 9 ok, 3 unsupported, 0 MISMATCH, 0 ERROR" in out


def test_external_reader_mismatch_and_crash(golden, fake, capsys):
    status, out, _ = run([golden, "--reader", fake("bad", "bad"), "--reader", fake("crash", "crash")], capsys)
    assert status == 1
    assert rows(out)["1.0/tiny/flatbuffers.pt2f"] == ["ok", "MISMATCH", "ERROR"]
    assert "MISMATCH 1.0/tiny/flatbuffers.pt2f [bad]: first difference at byte" in out
    assert "ERROR 1.0/tiny/flatbuffers.pt2f [crash]: exit 1: boom: cannot parse" in out


def test_external_reader_timeout_and_signal(tmp_path, fake, capsys):
    root = tmp_path / "g"
    make_case(root / "1.0", "one", encodings=("flatbuffers",))
    status, out, _ = run([root, "--timeout", "1", "--reader", fake("hang", "hang"), "--reader", fake("sig", "signal")],
                         capsys)
    assert status == 1
    assert rows(out)["1.0/one/flatbuffers.pt2f"] == ["ok", "ERROR", "ERROR"]
    assert "[hang]: timed out after 1 s" in out
    assert "[sig]: killed by signal 9" in out


@pytest.mark.parametrize("spec", ["noequals", "=cmd", "a b=cmd", "python=cat", "x=", "x=  "])
def test_bad_reader_spec_is_a_usage_error(golden, spec, capsys):
    with pytest.raises(SystemExit) as e:
        main(["conformance", str(golden), "--reader", spec])
    assert e.value.code == 2
    assert "--reader" in capsys.readouterr().err


def test_unknown_command_and_duplicate_names_are_usage_errors(golden, capsys):
    status, out, err = run([golden, "--reader", "x=/nonexistent/pt2f-dump"], capsys)
    assert status == 2 and out == ""
    assert "reader 'x': command '/nonexistent/pt2f-dump' not found" in err
    status, _, err = run([golden, "--reader", "x=cat", "--reader", "x=cat"], capsys)
    assert status == 2 and "reader 'x' given twice" in err
    status, _, err = run([golden / "nope"], capsys)
    assert status == 2 and "does not exist" in err


def test_no_golden_cases_fails(tmp_path, capsys):
    (tmp_path / "1.0").mkdir()
    status, out, _ = run([tmp_path], capsys)
    assert status == 1 and "no golden cases" in out


def test_versions_in_numeric_order_and_staging_dirs_ignored(tmp_path):
    for version in ("2.0", "1.10", "1.9"):
        (tmp_path / version / "c").mkdir(parents=True)
        (tmp_path / version / "c" / "program.pt2f").write_bytes(b"")
    (tmp_path / "1.9" / ".c-json-tmp123").mkdir()  # make_golden's staging directory
    (tmp_path / "1.9" / ".c-json-tmp123" / "program.pt2f").write_bytes(b"")
    (tmp_path / "README.md").write_text("not a version")
    assert [g.label for g in find_golden(str(tmp_path))] == [
        "1.9/c/program.pt2f", "1.10/c/program.pt2f", "2.0/c/program.pt2f"]


def test_shard_files_are_not_cases(tmp_path, capsys):
    """A shard the case's main file names is data, not a golden file of its own."""
    cdir = tmp_path / "1.0" / "sharded"
    cdir.mkdir(parents=True)
    payloads = float_payloads(SIZES)
    size = write_shard(cdir / "data.pt2f", payloads)
    pkg = tiny_package(SIZES)
    pkg.required_features = 1
    pkg.shard_files = [m.ShardFile("data.pt2f", size)]
    pkg.segments = [m.Segment(file=1, section=0)]
    pkg.storages = [m.Storage(0, 0, 12), m.Storage(0, 64, 20)]
    write_raw(cdir / "main.pt2f", pkg, [])
    (cdir / "expected.json").write_text(dump(cdir / "main.pt2f"), encoding="utf-8")
    status, out, _ = run([tmp_path], capsys)
    assert status == 0, out
    assert rows(out) == {"1.0/sharded/main.pt2f": ["ok"]}


def test_default_golden_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    repo_golden = ROOT / "conformance" / "golden"
    assert default_golden_dir() == (str(repo_golden) if repo_golden.is_dir() else None)
    make_case(tmp_path / "conformance" / "golden" / "1.0", "here", encodings=("msgpack",))
    status, out, _ = run([], capsys)
    assert status == 0, out
    assert out.splitlines()[0] == f"golden files: {tmp_path / 'conformance' / 'golden'}"
    assert list(rows(out)) == ["1.0/here/msgpack.pt2f"]


def test_runs_without_torch(golden):
    """`python -m pt2format conformance` with torch made unimportable."""
    code = ("import sys; sys.modules['torch'] = None; sys.argv = ['pt2format', 'conformance', sys.argv[1]]; "
            "import runpy; runpy.run_module('pt2format', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code, str(golden)], capture_output=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b"4 ok, 0 unsupported" in proc.stdout


# -- the real C++ and TypeScript readers, when built -------------------------------

def _newest_mtime(path: Path) -> float:
    if path.is_file():
        return path.stat().st_mtime
    return max(p.stat().st_mtime for p in path.rglob("*") if p.is_file())


def _native(name):
    """(reader spec, None) or (None, reason to skip)."""
    schema_time = (ROOT / "schema" / "pt2format.fbs").stat().st_mtime
    if name == "cpp":
        exe = ROOT / "build" / "cpp" / "pt2f-dump"
        if not exe.is_file():
            return None, f"{exe} is not built (bash scripts/build_cpp.sh)"
        if _newest_mtime(exe) < schema_time:
            return None, f"{exe} is older than schema/pt2format.fbs: stale build (bash scripts/build_cpp.sh)"
        return f"cpp={shlex.quote(str(exe))}", None
    cli = ROOT / "loaders" / "ts" / "dist" / "cli.js"
    if not cli.is_file():
        return None, f"{cli} is not built (bash scripts/build_ts.sh)"
    if subprocess.run(["sh", "-c", "command -v node"], capture_output=True).returncode != 0:
        return None, "node is not on PATH"
    if _newest_mtime(cli.parent) < schema_time:
        return None, f"{cli.parent} is older than schema/pt2format.fbs: stale build (bash scripts/build_ts.sh)"
    return f"ts=node {shlex.quote(str(cli))} dump", None


@pytest.mark.native
@pytest.mark.parametrize("name", ["cpp", "ts"])
def test_native_reader(golden, name, capsys):
    spec, reason = _native(name)
    if spec is None:
        pytest.skip(reason)
    status, out, _ = run([golden, "--reader", spec], capsys)
    assert status == 0, out
    assert rows(out) == {  # both read all three encodings
        "1.0/three-json/json.pt2f": ["ok", "ok"],
        "1.0/tiny/flatbuffers.pt2f": ["ok", "ok"],
        "1.0/tiny/json.pt2f": ["ok", "ok"],
        "1.0/tiny/msgpack.pt2f": ["ok", "ok"],
    }
