"""Before/after figures of the codebase (issue 23's "Must show"), as Markdown, from one command.

    python scripts/codebase_stats.py [--before REV] [--after REV] [--no-duplicates]

Each revision is read with `git archive` into a temporary directory (never the
work tree), its generated files are deleted there, and what is left is counted:

- hand-written code per top-level folder: non-blank lines of .py, C++
  (.cc .cpp .h .hpp), TypeScript/JavaScript (.ts .js .mjs), shell and .fbs files;
  `schema/history/` (frozen copies) and `conformance/golden/` (data) are left out;
- hand-written validation rules per reader: the call sites of each reader's
  failure helper in its validate module, outside the helpers' own bodies
  (Python `_fail(`, C++ `fail(`/`invalid(`, TypeScript `fail(`), plus error
  constructions raised directly there (`raise XError(`, `throw Error(`, `throw new XError(`);
- the places that spell each option of save, load, load_module, attach_weights
  and save_weights (the options of the --after revision's `pt2format/_options.py`),
  read with `ast` in the Python of pt2format/, exporter/ and loaders/: its default
  written (a parameter with that default, or the `Option(...)` that defines it),
  parameters of that name, keyword arguments of that name, and docstring
  entries `name: ...`;
- the places that spell each bound of the --after revision's
  `pt2format/_generated/limits.py` with a number (`max_depth=128`,
  `MAX_DEPTH = 128`, `kMaxDepth = 128`, `maxDepth: 128`), in all hand-written
  code but tests/, comments and docstrings left out;
- `duplicates --repo DIR` over the hand-written files (the tool of the
  development machine; without it, the command to run is printed).

Generated files are the outputs regen.py writes: the keys of PYTHON_TARGETS and
REPO_TARGETS in that revision's `schema/codegen/targets.py` (a key ending in "/"
is a directory), read with `ast`, never imported.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "6511674"  # the commit when issue 23 was filed

LANGUAGES = {".py": "py", ".cc": "cpp", ".cpp": "cpp", ".h": "cpp", ".hpp": "cpp", ".ts": "ts", ".js": "ts",
             ".mjs": "ts", ".sh": "sh", ".fbs": "fbs"}
FOLDERS = ["schema", "pt2format", "exporter", "loaders", "tests", "conformance", "scripts", "benchmarks"]
NOT_CODE = ("schema/history/", "conformance/golden/")
FUNCTIONS = {"SAVE": "save", "LOAD": "load", "LOAD_MODULE": "load_module", "ATTACH_WEIGHTS": "attach_weights",
             "SAVE_WEIGHTS": "save_weights"}
# Each reader's validate module(s) and failure helpers.
VALIDATORS = {
    "Python": (("pt2format/_validate.py", "pt2format/_validate/"), ("_fail",), r"raise\s+\w*Error\("),
    "C++": (("loaders/cpp/src/validate",), ("fail", "invalid"), r"throw\s+(?:new\s+)?\w*Error\("),
    "TypeScript": (("loaders/ts/src/validate",), ("fail",), r"throw\s+new\s+\w*Error\("),
}


# ---------------------------------------------------------------------------
# A revision's hand-written files
# ---------------------------------------------------------------------------

def extract(repo: Path, rev: str, dest: Path) -> str:
    """The tree of `rev` under `dest` (git archive); returns the full commit id."""
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    data = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return commit


def generated_paths(tree: Path) -> list[str]:
    """The outputs regen.py writes, from the keys of the tree's own targets table ([] without one)."""
    targets = tree / "schema" / "codegen" / "targets.py"
    if not targets.is_file():
        return []
    out = []
    for node in ast.parse(targets.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                isinstance(t, ast.Name) and t.id.endswith("_TARGETS") for t in node.targets):
            out += [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return out


def drop_generated(tree: Path) -> int:
    """Delete the generated files of `tree`; returns how many."""
    n = 0
    for rel in generated_paths(tree):
        p = tree / rel
        if rel.endswith("/") and p.is_dir():
            n += sum(1 for f in p.rglob("*") if f.is_file())
            shutil.rmtree(p)
        elif p.is_file():
            p.unlink()
            n += 1
    return n


def code_files(tree: Path) -> dict[str, str]:
    """{relative path: language} of the hand-written code files left in `tree`."""
    out = {}
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree).as_posix()
        if p.is_file() and p.suffix in LANGUAGES and not rel.startswith(NOT_CODE) and "node_modules/" not in rel:
            out[rel] = LANGUAGES[p.suffix]
    return out


def nonblank(path: Path) -> int:
    return sum(1 for line in path.read_text(errors="replace").splitlines() if line.strip())


# ---------------------------------------------------------------------------
# The figures of one tree
# ---------------------------------------------------------------------------

def line_counts(tree: Path, files: dict[str, str]) -> dict[str, list[int]]:
    """{row: [lines per file]}: one row per folder, loaders/ split by language, the rest under 'other'."""
    rows: dict[str, list[int]] = {}
    for rel, lang in files.items():
        top = rel.split("/", 1)[0] if "/" in rel else ""
        row = f"loaders/ ({lang})" if top == "loaders" else f"{top}/" if top in FOLDERS else f"other: {top or '.'}/"
        rows.setdefault(row, []).append(nonblank(tree / rel))
    return rows


def _helper_bodies(lines: list[str], helpers: tuple, lang: str) -> set[int]:
    """Line numbers inside the definitions of the failure helpers (their own calls are not rules)."""
    inside, i = set(), 0
    start = re.compile(rf"^def ({'|'.join(helpers)})\(" if lang == "Python"
                       else rf"\b(void|function)\s+({'|'.join(helpers)})\s*\(")
    while i < len(lines):
        if start.search(lines[i]):
            j = i + 1
            while j < len(lines) and not (lines[j][:1].strip() and (lang == "Python" or lines[j].startswith("}"))):
                j += 1
            inside.update(range(i, j + (lang != "Python")))
            i = j
        i += 1
    return inside


def validation_rules(tree: Path, files: dict[str, str]) -> dict[str, tuple[int, list[str]]]:
    """{reader: (rules, files counted)}."""
    out = {}
    for reader, (prefixes, helpers, direct) in VALIDATORS.items():
        call = re.compile(rf"(?<![\w.])({'|'.join(helpers)})\(")
        total, counted = 0, []
        for rel in files:
            if not rel.startswith(prefixes):
                continue
            lines = (tree / rel).read_text().splitlines()
            skip = _helper_bodies(lines, helpers, reader)
            for n, line in enumerate(lines):
                code = line.split("//")[0] if reader != "Python" else line.split("#")[0]
                if n in skip or code.lstrip().startswith(("def ", "*")):
                    continue
                total += len(call.findall(code)) + len(re.findall(direct, code))
            counted.append(rel)
        out[reader] = (total, counted)
    return out


def option_table(tree: Path) -> dict[str, list[tuple[str, object]]]:
    """{function: [(option, default)]} from the tree's pt2format/_options.py ({} without one)."""
    path = tree / "pt2format" / "_options.py"
    if not path.is_file():
        return {}
    shared, tables = {}, {}

    def option(node):
        if isinstance(node, ast.Name):
            return shared.get(node.id)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "documented":
            return option(node.func.value)  # a shared option documented for another function: same default
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Option":
            default = node.args[1]
            return node.args[0].value, ast.literal_eval(default) if isinstance(default, ast.Constant) or (
                isinstance(default, ast.Tuple) and not default.elts) else ast.unparse(default)
        return None

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "Option":
                shared[name] = option(node.value)
            elif name in FUNCTIONS and isinstance(node.value, ast.Call):
                tables[FUNCTIONS[name]] = [o for o in map(option, node.value.args) if o]
    return tables


class _OptionSpellings(ast.NodeVisitor):
    """Per option name: defaults written, parameters declared, keywords passed, docstring entries."""

    def __init__(self, options: dict):
        self.options = options  # name -> default
        self.count = {name: [0, 0, 0, 0] for name in options}

    def _function(self, node):
        args = node.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for a in positional + args.kwonlyargs:
            if a.arg in self.count:
                self.count[a.arg][1] += 1
        for a, d in pairs:
            if a.arg in self.count and _literal(d) == self.options[a.arg]:
                self.count[a.arg][0] += 1
        for line in (ast.get_docstring(node) or "").splitlines():
            m = re.match(r"\s*(\w+)(?: \(.*\))?:", line)
            if m and m[1] in self.count:
                self.count[m[1]][3] += 1
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Call(self, node):
        if getattr(node.func, "id", "") == "Option" and node.args and isinstance(node.args[0], ast.Constant):
            if node.args[0].value in self.count:  # the one definition: name and default
                self.count[node.args[0].value][0] += 1
        for k in node.keywords:
            if k.arg in self.count:
                self.count[k.arg][2] += 1
        self.generic_visit(node)


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def option_places(tree: Path, files: dict[str, str], options: dict) -> dict[str, list[int]]:
    """{"name = default": [defaults, parameters, keywords, docstring entries]} over the Python of pt2format/,
    exporter/ and loaders/ (read with ast: comments and prose elsewhere do not count)."""
    defaults = {name: default for opts in options.values() for name, default in opts}
    visitor = _OptionSpellings(defaults)
    for rel, lang in files.items():
        if lang == "py" and rel.split("/", 1)[0] in ("pt2format", "exporter", "loaders"):
            visitor.visit(ast.parse((tree / rel).read_text()))
    return {f"{name} = {defaults[name]!r}": visitor.count[name] for name in sorted(defaults)}


def limit_table(tree: Path) -> dict[str, str]:
    """{NAME: value as written} from the tree's pt2format/_generated/limits.py ({} without one)."""
    path = tree / "pt2format" / "_generated" / "limits.py"
    if not path.is_file():
        return {}
    return {node.targets[0].id: ast.unparse(node.value) for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.isupper() and not isinstance(node.value, ast.Dict)}


def code_only(text: str, lang: str) -> str:
    """`text` without comments and (Python) docstrings: prose that quotes a bound is not a place that sets it."""
    if lang != "py":
        return re.sub(r"/\*.*?\*/", "", re.sub(r"//[^\n]*", "", text), flags=re.S)
    lines = text.splitlines()
    try:
        for node in ast.walk(ast.parse(text)):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                    getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
                for i in range(body[0].lineno - 1, body[0].end_lineno):
                    lines[i] = ""
        for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if tok.type == tokenize.COMMENT:
                row = tok.start[0] - 1
                lines[row] = lines[row][:tok.start[1]]
    except (SyntaxError, tokenize.TokenError):
        pass
    return "\n".join(lines)


def limit_places(tree: Path, files: dict[str, str], limits: dict[str, str]) -> dict[str, int]:
    """{NAME: places where a spelling of the bound's name is given a number}, tests/ left out."""
    text = [code_only((tree / rel).read_text(), lang) for rel, lang in files.items() if not rel.startswith("tests/")]
    out = {}
    for name in limits:
        snake = name.lower()
        camel = re.sub(r"_(\w)", lambda m: m[1].upper(), snake)
        spellings = "|".join(map(re.escape, (snake, name, camel, "k" + camel[0].upper() + camel[1:])))
        pattern = re.compile(rf"(?<![\w.])(?:{spellings})\b\s*(?::[^=;\n]*?)?[=:]\s*\(?\s*\d")
        out[name] = sum(len(pattern.findall(t)) for t in text)
    return out


def duplicates(tree: Path) -> str | None:
    """The summary line of `duplicates --repo tree`, None when the tool is not on PATH."""
    tool = shutil.which("duplicates")
    if tool is None:
        return None
    r = subprocess.run([tool, "--repo", str(tree), "--seconds", "300"], capture_output=True, text=True)
    return (r.stdout.splitlines() or ["(no output)"])[0]


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

def measure(repo: Path, rev: str, tmp: Path, with_duplicates: bool) -> dict:
    tree = tmp / rev.replace("/", "_").replace("~", "_").replace("^", "_")
    tree.mkdir()
    commit = extract(repo, rev, tree)
    options, limits = option_table(tree), limit_table(tree)  # limits.py is generated: read it first
    n_generated = drop_generated(tree)
    files = code_files(tree)
    return {"rev": rev, "commit": commit, "tree": tree, "files": files, "generated": n_generated,
            "options": options, "limits": limits,
            "lines": line_counts(tree, files), "rules": validation_rules(tree, files),
            "duplicates": duplicates(tree) if with_duplicates else None}


def _delta(a: int, b: int) -> str:
    return f"{b - a:+d}" if a != b else "0"


def report(before: dict, after: dict, with_duplicates: bool) -> str:
    out = [f"before: `{before['rev']}` ({before['commit'][:10]}), after: `{after['rev']}` ({after['commit'][:10]}); "
           f"generated files left out: {before['generated']} before, {after['generated']} after.\n"]
    out.append("\n### Hand-written code (non-blank lines)\n\n| folder | before | after | change | files after | "
               "median lines per file after | files over 500 lines after |\n|---|---|---|---|---|---|---|\n")
    rows = [f"{f}/" for f in FOLDERS if f != "loaders"]
    rows[2:2] = [f"loaders/ ({lang})" for lang in ("py", "cpp", "ts")]
    rows += sorted((set(before["lines"]) | set(after["lines"])) - set(rows))
    for row in rows:
        a, b = before["lines"].get(row, []), after["lines"].get(row, [])
        med = f"{statistics.median(b):.0f}" if b else "-"
        out.append(f"| {row} | {sum(a)} | {sum(b)} | {_delta(sum(a), sum(b))} | {len(b)} | {med} | "
                   f"{sum(1 for n in b if n > 500)} |\n")
    ta, tb = (sum(sum(v) for v in m["lines"].values()) for m in (before, after))
    out.append(f"| **total** | {ta} | {tb} | {_delta(ta, tb)} | {len(after['files'])} | "
               f"{statistics.median([n for v in after['lines'].values() for n in v]):.0f} | "
               f"{sum(1 for v in after['lines'].values() for n in v if n > 500)} |\n")
    for m in (before, after):
        long = sorted(((nonblank(m["tree"] / rel), rel) for rel in m["files"]), reverse=True)
        out.append(f"\nOver 500 non-blank lines {'before' if m is before else 'after'}: "
                   + (", ".join(f"`{rel}` {n}" for n, rel in long if n > 500) or "none") + ".\n")
    out.append("\n### Hand-written validation rules per reader\n\n| reader | before | after | change | counted in "
               "(after) |\n|---|---|---|---|---|\n")
    for reader in VALIDATORS:
        (a, _), (b, where) = before["rules"][reader], after["rules"][reader]
        out.append(f"| {reader} | {a} | {b} | {_delta(a, b)} | {', '.join(f'`{w}`' for w in where) or '-'} |\n")
    options = after["options"]
    if options:
        ob, oa = (option_places(m["tree"], m["files"], options) for m in (before, after))
        out.append("\n### Places that spell each option (pt2format/, exporter/, loaders/; generated left out)\n\n"
                   + "".join(f"- `{fn}`: {', '.join(o for o, _ in opts)}\n" for fn, opts in options.items())
                   + "\n| option = default | default written (before → after) | parameters | keywords passed | "
                   "docstring entries |\n|---|---|---|---|---|\n")
        for key in oa:
            out.append(f"| `{key}` | " + " | ".join(f"{ob[key][i]} → {oa[key][i]}" for i in range(4)) + " |\n")
        out.append("| **all** | " + " | ".join(f"{sum(v[i] for v in ob.values())} → {sum(v[i] for v in oa.values())}"
                                              for i in range(4)) + " |\n")
    else:
        out.append("\n(no `pt2format/_options.py` in the after revision: option places not counted)\n")
    limits = after["limits"]
    if limits:
        lb, la = (limit_places(m["tree"], m["files"], limits) for m in (before, after))
        out.append("\n### Places that spell each bound with a number (all hand-written code but tests/)\n\n"
                   "| bound | value | before | after |\n|---|---|---|---|\n")
        for name, value in limits.items():
            out.append(f"| `{name.lower()}` | `{value}` | {lb[name]} | {la[name]} |\n")
        out.append(f"| **all** | | {sum(lb.values())} | {sum(la.values())} |\n")
    else:
        out.append("\n(no `pt2format/_generated/limits.py` in the after revision: bound places not counted)\n")
    out.append("\n### `duplicates` over the hand-written files\n\n")
    if not with_duplicates:
        out.append("(not run: --no-duplicates)\n")
    elif before["duplicates"] is None:
        out.append("`duplicates` is not on PATH. On a machine that has it, extract each revision and run it on the "
                   "hand-written files: `git archive REV | tar -x -C DIR`, delete the generated files (the keys of "
                   "`schema/codegen/targets.py`), then `duplicates --repo DIR`.\n")
    else:
        out.append(f"- before: {before['duplicates']}\n- after: {after['duplicates']}\n")
    return "".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BEFORE, help=f"the revision before (default {BEFORE}, issue 23 filed)")
    ap.add_argument("--after", default="HEAD", help="the revision after (default HEAD)")
    ap.add_argument("--repo", type=Path, default=ROOT, help="the git repository (default: this checkout)")
    ap.add_argument("--no-duplicates", action="store_true", help="skip the duplicates tool")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="codebase_stats_") as d:
        tmp = Path(d)
        (tmp / "before").mkdir()
        (tmp / "after").mkdir()
        before = measure(args.repo, args.before, tmp / "before", not args.no_duplicates)
        after = measure(args.repo, args.after, tmp / "after", not args.no_duplicates)
        sys.stdout.write(report(before, after, not args.no_duplicates))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
