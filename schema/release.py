"""Release a format minor in one command: `python schema/release.py 1.1`.

The steps, in the only order that is correct (SPEC.md §8.5; issue 22):

1. refuse unless the working schema's version line says this version, the
   newest release of its major is the minor before it, and the working schema
   and container table are compatible with every release (schema/evolution.py);
2. mark the version line released (`X.Y (date) ...; released.`);
3. freeze `pt2format.fbs` and `container.toml` into `schema/history/X.Y/`, and the string
   classes' digests (`string_grammar.py`) next to them;
4. regenerate every artifact (`regen.py`): the minor tables now credit the
   release's names to it from history, and the SPEC title, §8.3/§8.4 tables
   and docs/versions.md carry the version (one source, codegen/versions.py);
5. date the release's CHANGELOG heading (`## X.Y (unreleased)` -> `## X.Y — date`);
6. write the release's golden files (`conformance/make_golden.py`), which
   never rewrites one that exists.

Safe to re-run: a version already frozen with exactly the working schema is
"already released" and only completes what is missing (golden files); one
frozen with a different schema is refused. After a release the working
schema is the release: the next change starts with a `/// X.(Y+1) (date)`
line, and regen.py refuses additions until it has one.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import evolution  # noqa: E402
from codegen import container  # noqa: E402
from codegen.bfbs import build_bfbs  # noqa: E402

_LINE = re.compile(r"^(///\s+)(\d+)\.(\d+) \((\d{4}-\d\d-\d\d)\)(.*)$", re.M)
_UNRELEASED = re.compile(r"[;,]?\s*(in progress,?\s*)?unreleased\.?\s*$")


class ReleaseError(SystemExit):
    """The release cannot go ahead; the message says why and what to do first."""

    def __init__(self, message: str):
        super().__init__(f"release: {message}")


def parse_version(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not m:
        raise ReleaseError(f"version {text!r} is not MAJOR.MINOR")
    return int(m[1]), int(m[2])


def released_line(fbs_text: str, version: tuple[int, int], date: str) -> str:
    """The schema text with the version line of `version` dated `date` and marked released."""
    head, sep, rest = fbs_text.partition("namespace")

    def fix(m: re.Match) -> str:
        if (int(m[2]), int(m[3])) != version:
            return m[0]
        note = _UNRELEASED.sub("", m[5]).rstrip().rstrip(";,")
        return f"{m[1]}{m[2]}.{m[3]} ({date}){note}; released."

    new_head, n = _LINE.subn(fix, head)
    if n == 0:
        raise ReleaseError("the schema's header comment has no `///   X.Y (YYYY-MM-DD)` version line")
    return new_head + sep + rest


def _check(root: Path, version: tuple[int, int]) -> bool:
    """Refuse a release out of order or of an incompatible schema; True when it is already done."""
    fbs = root / "schema" / "pt2format.fbs"
    history_dir = root / "schema" / "history"
    working_version = evolution.schema_version(fbs.read_text())
    label = f"{version[0]}.{version[1]}"
    frozen = history_dir / label
    if frozen.exists():
        same = all((frozen / name).exists() and (frozen / name).read_text() == (root / "schema" / name).read_text()
                   for name in ("pt2format.fbs", "container.toml"))
        if same:
            return True
        raise ReleaseError(f"{label} is already in schema/history/ with a different schema; a release is frozen "
                           "for good (start the next minor with a new version line)")
    if working_version != version:
        raise ReleaseError(f"the schema's version line says {working_version[0]}.{working_version[1]}, not {label}: "
                           f"release the version the schema is at")
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "w").mkdir()
        working = build_bfbs(Path(d) / "w", fbs)
        history = []
        for v, path in evolution.history_versions(history_dir):
            (Path(d) / path.parent.name).mkdir()
            history.append((v, build_bfbs(Path(d) / path.parent.name, path)))
        problems = evolution.check_release_order(history, working, version)
        table = container.load(container.table_path(fbs))
        for v, s in history:
            if v[0] == version[0]:
                problems += [f"against {v[0]}.{v[1]}: {p}" for p in evolution.diff(s, working)]
                old = history_dir / f"{v[0]}.{v[1]}" / "container.toml"
                if old.exists():
                    problems += [f"against {v[0]}.{v[1]}: {p}" for p in evolution.diff_container(container.load(old),
                                                                                               table)]
    if problems:
        raise ReleaseError(f"cannot release {label}:\n  " + "\n  ".join(problems))
    return False


def _changelog(root: Path, version: tuple[int, int], date: str) -> None:
    path = root / "schema" / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8")
    label = f"{version[0]}.{version[1]}"
    if re.search(rf"^## {re.escape(label)} — ", text, re.M):
        return
    new, n = re.subn(rf"^## {re.escape(label)} \(unreleased\)\s*$", f"## {label} — {date}", text, count=1,
                     flags=re.M)
    if n != 1:
        raise ReleaseError(f"schema/CHANGELOG.md has no `## {label} (unreleased)` heading to date")
    path.write_text(new, encoding="utf-8")


def release(version: tuple[int, int], *, root: Path = ROOT, date: str | None = None, golden: bool = True,
            python: str = sys.executable, log=print) -> None:
    """Every step of a release of `version` in the checkout at `root` (see the module doc)."""
    date = date or datetime.date.today().isoformat()
    label = f"{version[0]}.{version[1]}"
    done = _check(root, version)
    if done:
        log(f"{label} is already released (schema/history/{label} is the working schema)")
    else:
        _changelog(root, version, date)  # first: it refuses without a heading, before anything changed
        log(f"dated `## {label}` in schema/CHANGELOG.md")
        fbs = root / "schema" / "pt2format.fbs"
        fbs.write_text(released_line(fbs.read_text(), version, date))
        frozen = root / "schema" / "history" / label
        frozen.mkdir(parents=True)
        for name in ("pt2format.fbs", "container.toml"):
            (frozen / name).write_text((root / "schema" / name).read_text())
        log(f"froze schema/history/{label}/ (pt2format.fbs, container.toml)")
    r = subprocess.run([python, str(root / "schema" / "regen.py")], capture_output=True, text=True, cwd=root)
    if r.returncode:
        raise ReleaseError(f"regen.py failed:\n{r.stdout}{r.stderr}")
    log("regenerated (regen.py): minor tables, FIELDS.md, SPEC title and tables, docs/versions.md")
    grammar = root / "schema" / "history" / label / "string_grammar.json"
    if not grammar.exists():  # the string classes' behaviour, frozen with the schema (string_grammar.py)
        r = subprocess.run([python, str(root / "schema" / "string_grammar.py"), "--write", str(grammar)],
                           capture_output=True, text=True, cwd=root)
        if r.returncode:
            raise ReleaseError(f"string_grammar.py failed:\n{r.stdout}{r.stderr}")
        log(f"recorded the string classes' digests: schema/history/{label}/string_grammar.json")
    if golden:
        r = subprocess.run([python, str(root / "conformance" / "make_golden.py")], capture_output=True, text=True,
                           cwd=root)
        log(r.stdout.rstrip())
        if r.returncode:
            raise ReleaseError(f"make_golden.py failed:\n{r.stderr[-2000:]}")
        log(f"golden files: conformance/golden/{label}/")
    log(f"released {label}. Commit everything; the next change starts with a `/// {version[0]}.{version[1] + 1} "
        "(date)` line in schema/pt2format.fbs and a `## "
        f"{version[0]}.{version[1] + 1} (unreleased)` heading in schema/CHANGELOG.md.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version", help="the version to release, MAJOR.MINOR: the one the schema's version line says")
    ap.add_argument("--date", help="release date, YYYY-MM-DD (default: today)")
    ap.add_argument("--no-golden", action="store_true", help="skip the golden files (tests of the command only)")
    args = ap.parse_args(argv)
    if args.date and not re.fullmatch(r"\d{4}-\d\d-\d\d", args.date):
        ap.error("--date is YYYY-MM-DD")
    release(parse_version(args.version), date=args.date, golden=not args.no_golden)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
