"""scripts/codebase_stats.py counts what a tiny repository of known contents holds, revision by revision.

Every expected figure is the number of lines this test writes, never the
script's own output for another input: two commits of a synthetic repository
(a generated file, a validate module of each reader, an options table, a limits
table), and an uncommitted file the script must not see (it reads git, not the
work tree).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "codebase_stats.py"

FILES_1 = {
    "schema/codegen/targets.py": (
        'PYTHON_TARGETS = {\n    "pt2format/_generated/limits.py": lambda c: c,\n'
        '    "pt2format/_generated/big.py": lambda c: c,\n}\n'
        'REPO_TARGETS = {\n    "loaders/ts/src/generated/": lambda c: c,\n}\n'),  # 7 lines
    "schema/pt2format.fbs": 'table Package (pt2f_limits: "max_depth=128") {\n  x: int;\n}\nroot_type Package;\n',  # 4
    "pt2format/_generated/limits.py": "MAX_DEPTH = 128\nLIMITS = {'max_depth': MAX_DEPTH}\n",
    "pt2format/_generated/big.py": "x = 1\n" * 50,
    "pt2format/_options.py": ('_FSYNC = Option("fsync", True, "bool", "flush.")  # max_depth=128 in a comment\n'
                              'SAVE = Options(_FSYNC, Option("encoding", "flatbuffers", "str", "enc."))\n'),  # 2
    "pt2format/_validate.py": (
        "def _fail(message, path=None):\n    return ValidationError(message, path)\n\n\n"
        "def check(tree, max_depth=128):\n    if not tree:\n        raise _fail('empty', 'tree')\n"
        "    if tree.x < 0:\n        raise _fail('negative', 'x')  # a rule\n"
        "    if tree.x > 9:\n        raise VersionError('too new')\n"),  # 9 non-blank, 3 rules
    "exporter/_save.py": ("def save(ep, path, *, encoding: str = 'flatbuffers', fsync: bool = True):\n"
                          "    write(path, encoding=encoding, fsync=fsync)\n"),  # 2
    "loaders/cpp/src/validate.cc": (
        "[[noreturn]] void fail(const std::string &msg) {\n  throw Error(msg);\n}\n"
        "[[noreturn]] void invalid(const std::string &msg) {\n  fail(msg);\n}\n"
        "void check(int x) {\n  if (x < 0) invalid(\"negative\");  // fail( in a comment\n"
        "  if (x > 9) fail(\"too new\");\n  constexpr int kMaxDepth = 128;\n}\n"),  # 11 lines, 2 rules
    "loaders/ts/src/validate.ts": (
        "function fail(message: string): ValidationError {\n  return new ValidationError(message);\n}\n"
        "export function check(x: number): void {\n  if (x < 0) throw fail('negative');\n"
        "  if (x > 9) throw new VersionError('too new');\n}\nconst maxDepth: number = 128;\n"),  # 8, 2 rules
    "loaders/ts/src/generated/model.ts": "export const A = 1;\n" * 30,
    "loaders/_load.py": "def load(path, *, fsync=True):\n    pass\n",  # 2
    "tests/test_x.py": "def test_x():\n    assert 1\n\n",  # 2
    "README.md": "# prose is not code\n",
}
# The second commit: the exporter forwards without spelling the default; the Python reader gains a rule; load's
# table takes the shared fsync with its own doc (`documented`: the default is not written again).
FILES_2 = {
    "pt2format/_options.py": FILES_1["pt2format/_options.py"] + 'LOAD = Options(_FSYNC.documented("flush, on load."))\n',

    "exporter/_save.py": ('@SAVE.implements\ndef save(ep, path, *, encoding, fsync):\n    """Save.\n\n    Args:\n'
                          '        fsync: flush.\n    """\n    write(path)\n'),  # 7
    "pt2format/_validate.py": FILES_1["pt2format/_validate.py"] + "    if tree.y:\n        raise _fail('y', 'y')\n",
    # The C++ and TypeScript validators split into parts: the same lines and rules, every part counted.
    "loaders/cpp/src/validate.cc": FILES_1["loaders/cpp/src/validate.cc"].split("void check")[0],  # 6, the helpers
    "loaders/cpp/src/validate_data.cc": (
        "void check(int x) {\n  if (x < 0) invalid(\"negative\");  // fail( in a comment\n"
        "  if (x > 9) fail(\"too new\");\n  constexpr int kMaxDepth = 128;\n}\n"),  # 5, 2 rules
    "loaders/ts/src/validate.ts": (
        "function fail(message: string): ValidationError {\n  return new ValidationError(message);\n}\n"
        "const maxDepth: number = 128;\n"),  # 4
    "loaders/ts/src/validate/data.ts": (
        "export function check(x: number): void {\n  if (x < 0) throw fail('negative');\n"
        "  if (x > 9) throw new VersionError('too new');\n}\n"),  # 4, 2 rules
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _commit(repo: Path, files: dict, message: str) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", message)


def _row(out: str, first_cell: str) -> list[str]:
    line = next(l for l in out.splitlines() if l.startswith(f"| {first_cell} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_figures_of_a_synthetic_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, FILES_1, "one")
    _commit(repo, FILES_2, "two")
    (repo / "pt2format" / "uncommitted.py").write_text("x = 1\n" * 100)  # the work tree is not read
    r = subprocess.run([sys.executable, str(SCRIPT), "--repo", str(repo), "--before", "HEAD~1", "--after", "HEAD",
                        "--no-duplicates"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "generated files left out: 3 before, 3 after" in out  # limits.py, big.py, model.ts
    assert _row(out, "schema/")[1:4] == ["11", "11", "0"]
    assert _row(out, "pt2format/")[1:4] == ["11", "14", "+3"]
    assert _row(out, "exporter/")[1:4] == ["2", "7", "+5"]
    assert _row(out, "loaders/ (py)")[1:3] == ["2", "2"]
    assert _row(out, "loaders/ (cpp)")[1:3] == ["11", "11"]
    assert _row(out, "loaders/ (ts)")[1:3] == ["8", "8"]
    assert _row(out, "tests/")[1:3] == ["2", "2"]
    assert _row(out, "**total**")[1:3] == ["47", "55"]
    assert _row(out, "Python")[1:3] == ["3", "4"]
    assert _row(out, "C++")[1:3] == ["2", "2"]
    assert _row(out, "TypeScript")[1:3] == ["2", "2"]
    assert _row(out, "C++")[4] == "`loaders/cpp/src/validate.cc`, `loaders/cpp/src/validate_data.cc`"
    assert _row(out, "TypeScript")[4] == "`loaders/ts/src/validate/data.ts`, `loaders/ts/src/validate.ts`"  # path order
    # fsync: default written in the options table, the exporter (before only) and the loader's load; a
    # parameter of save and load; passed on by the exporter before; documented in save's Args after
    assert _row(out, "`fsync = True`")[1:5] == ["3 → 2", "2 → 2", "1 → 0", "0 → 1"]
    assert "- `load`: fsync\n" in out
    assert _row(out, "`encoding = 'flatbuffers'`")[1:4] == ["2 → 1", "1 → 1", "1 → 0"]
    # max_depth with a number: the .fbs, _validate.py's default, kMaxDepth, maxDepth (generated limits.py and
    # the comment in _options.py not)
    assert _row(out, "`max_depth`")[2:4] == ["4", "4"]
    assert re.search(r"before: `HEAD~1` \([0-9a-f]{10}\), after: `HEAD`", out)
