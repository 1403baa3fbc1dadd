"""Runs readers over the golden files and compares each reader's canonical dump with `expected.json`, byte for byte.

The golden layout is `conformance/golden/<format-version>/<case>/`, each case
holding one or more `.pt2f` files and `expected.json`, their canonical dump
(SPEC.md §6; the dump does not depend on the program encoding, so one
expected.json serves a case saved in several encodings). The Python reader
runs in this process; every other reader is a command that prints the dump of
the file named by its last argument and exits 3 when the file's program
encoding is one it does not read. Nothing here imports torch.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field

from pt2format._source import read_regular
from pt2format.errors import Pt2FormatError

OK, MISMATCH, ERROR, UNSUPPORTED = "ok", "MISMATCH", "ERROR", "unsupported"
#: Exit status by which a reader says the file's program encoding is not one it reads.
EXIT_UNSUPPORTED = 3
PYTHON = "python"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")


class UsageError(Exception):
    """A bad command line (unknown reader command, missing golden directory): exit status 2."""


@dataclass(frozen=True)
class Reader:
    """An external reader: `argv + [file]` prints the canonical dump of `file`."""

    name: str
    argv: tuple


@dataclass
class GoldenFile:
    """One `.pt2f` of a golden case and where its expected dump lives (`problem` when the case is unusable)."""

    label: str
    path: str | None
    expected: str | None
    problem: str | None = None
    results: dict = field(default_factory=dict)  # reader name -> (status, detail)


def parse_reader(spec: str) -> Reader:
    """`NAME=COMMAND` (COMMAND split like a shell would, without running one)."""
    name, sep, command = spec.partition("=")
    if not sep or not _NAME.match(name):
        raise ValueError(f"expected NAME=COMMAND with NAME made of letters, digits, '_.+-', got {spec!r}")
    if name == PYTHON:
        raise ValueError(f"reader name {PYTHON!r} is the built-in Python reader")
    argv = tuple(shlex.split(command))
    if not argv:
        raise ValueError(f"reader {name!r}: empty command")
    return Reader(name, argv)


def default_golden_dir(cwd: str | None = None) -> str | None:
    """`conformance/golden` under the working directory, else under the checkout this package lives in."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for base in (cwd or os.getcwd(), here):
        candidate = os.path.join(base, "conformance", "golden")
        if os.path.isdir(candidate):
            return candidate
    return None


def _version_key(name: str):
    parts = name.split(".")
    if all(p.isdigit() for p in parts):
        return (0, tuple(int(p) for p in parts), name)
    return (1, (), name)


def _subdirs(path: str, key=None) -> list:
    names = [n for n in os.listdir(path) if not n.startswith(".") and os.path.isdir(os.path.join(path, n))]
    return sorted(names, key=key)


def find_golden(root: str) -> list:
    """Every golden `.pt2f` under `root`, versions in numeric order, then cases and files by name."""
    out = []
    for version in _subdirs(root, key=_version_key):
        vdir = os.path.join(root, version)
        for case in _subdirs(vdir):
            cdir = os.path.join(vdir, case)
            label = f"{version}/{case}"
            files = sorted(n for n in os.listdir(cdir) if n.endswith(".pt2f") and os.path.isfile(os.path.join(cdir, n)))
            expected = os.path.join(cdir, "expected.json")
            problem = None if os.path.isfile(expected) else "expected.json is missing"
            if not files:
                out.append(GoldenFile(label, None, None, "no .pt2f file in the case"))
            for name in files:
                out.append(GoldenFile(f"{label}/{name}", os.path.join(cdir, name), expected, problem))
    return out


def _python_dump(path: str):
    """(dump bytes, shard file names) from the Python reader."""
    from pt2format._api import read
    from pt2format._container.crc import crc32
    from pt2format._dump import dump_text

    with read(path) as f:
        crcs = [crc32(f.storage_view(i)) for i in range(len(f.package.storages))]
        shards = [s.name for s in f.package.shard_files]
        return dump_text(f.package, crcs).encode("utf-8"), shards


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def difference(expected: bytes, got: bytes) -> str:
    """Where two dumps first differ, with a little context from each."""
    n = min(len(expected), len(got))
    i = next((k for k in range(n) if expected[k] != got[k]), n)
    lo = max(0, i - 40)
    exp = expected[lo:i + 40].decode("utf-8", "replace")
    out = got[lo:i + 40].decode("utf-8", "replace")
    sizes = f" ({len(expected)} expected bytes, {len(got)} got)" if len(expected) != len(got) else ""
    return f"first difference at byte {i}{sizes}: expected ...{exp!r}... got ...{out!r}..."


def _compare(expected: bytes, got: bytes) -> tuple:
    return (OK, "") if got == expected else (MISMATCH, difference(expected, got))


def run_external(reader: Reader, path: str, expected: bytes, timeout: float) -> tuple:
    """(status, detail) of one external reader on one file."""
    try:
        proc = subprocess.run(list(reader.argv) + [path], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return ERROR, f"timed out after {timeout:g} s"
    except OSError as e:
        return ERROR, f"cannot run {reader.argv[0]!r}: {e}"
    err = _last_line(proc.stderr.decode("utf-8", "replace"))
    if proc.returncode == EXIT_UNSUPPORTED:
        return UNSUPPORTED, err
    if proc.returncode < 0:
        return ERROR, f"killed by signal {-proc.returncode}" + (f": {err}" if err else "")
    if proc.returncode != 0:
        return ERROR, f"exit {proc.returncode}" + (f": {err}" if err else "")
    return _compare(expected, proc.stdout)


def check_commands(readers) -> None:
    """Refuse the run before it starts when a reader's program cannot be found or names repeat."""
    seen = set()
    for r in readers:
        if r.name in seen:
            raise UsageError(f"reader {r.name!r} given twice")
        seen.add(r.name)
        if shutil.which(r.argv[0]) is None:
            raise UsageError(f"reader {r.name!r}: command {r.argv[0]!r} not found or not executable")


def run_case_files(files, readers, *, timeout: float) -> None:
    """Fill in `results` of every golden file, then drop the files that a case's main file names as its shards."""
    names = [PYTHON] + [r.name for r in readers]
    shard_paths = set()
    for gf in files:
        if gf.problem is not None:
            gf.results = {n: (ERROR, gf.problem) for n in names}
            continue
        try:
            expected = bytes(read_regular(gf.expected)[0])  # never a FIFO or device swapped in since the listing
        except (Pt2FormatError, OSError) as e:
            gf.results = {n: (ERROR, f"expected.json: {e}") for n in names}
            continue
        try:
            got, shards = _python_dump(gf.path)
            gf.results[PYTHON] = _compare(expected, got)
            shard_paths.update(os.path.join(os.path.dirname(gf.path), s) for s in shards)
        except Exception as e:  # noqa: BLE001 - one broken file must not stop the table
            gf.results[PYTHON] = (ERROR, f"{type(e).__name__}: {_last_line(str(e))}")
        for r in readers:
            gf.results[r.name] = run_external(r, gf.path, expected, timeout)
    files[:] = [gf for gf in files if gf.path is None or gf.path not in shard_paths]


def table(files, readers) -> str:
    """The case x reader table, a summary line, and one line per mismatch or error."""
    names = [PYTHON] + [r.name for r in readers]
    head = ["golden file"] + names
    rows = [[gf.label] + [gf.results[n][0] for n in names] for gf in files]
    widths = [max(len(row[c]) for row in [head] + rows) for c in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [head] + rows]
    counts = {s: 0 for s in (OK, UNSUPPORTED, MISMATCH, ERROR)}
    problems = []
    for gf in files:
        for n in names:
            status, detail = gf.results[n]
            counts[status] += 1
            if status in (MISMATCH, ERROR):
                problems.append(f"{status} {gf.label} [{n}]: {detail}")
    lines.append("")
    lines.append(f"{len(files)} golden files x {len(names)} readers: "
                 + ", ".join(f"{counts[s]} {s}" for s in (OK, UNSUPPORTED, MISMATCH, ERROR)))
    lines.extend(problems)
    return "\n".join(lines) + "\n"


def run(root: str | None, readers=(), *, timeout: float = 120.0) -> tuple:
    """Check every golden file with every reader; returns (exit status, report text).

    Exit status 0 when every cell is ok or unsupported, 1 on any mismatch or
    error or when there is no golden file at all. Raises UsageError for a
    missing golden directory or reader command.
    """
    if root is None:
        root = default_golden_dir()
        if root is None:
            raise UsageError("no conformance/golden directory in the working directory or the pt2format "
                             "checkout; pass GOLDEN_DIR")
    if not os.path.isdir(root):
        raise UsageError(f"golden directory {root!r} does not exist")
    readers = list(readers)
    check_commands(readers)
    files = find_golden(root)
    if not files:
        return 1, f"no golden cases under {root} (expected <format-version>/<case>/*.pt2f + expected.json)\n"
    run_case_files(files, readers, timeout=timeout)
    report = f"golden files: {root}\n" + table(files, readers)
    bad = any(status in (MISMATCH, ERROR) for gf in files for status, _ in gf.results.values())
    return (1 if bad else 0), report
