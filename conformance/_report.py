"""Render runner verdicts as the markdown report (conformance/REPORT.md): case x target x check.

Every cell that is not a plain pass carries a reason: failures, errors and
passes with a note are numbered one by one; a not-applicable cell points to
its reason in a deduplicated list (many cells share one, e.g. "the case lists
no invalid input and none could be derived"). No machine path appears: the
reasons come from the runner, which names files by their base names only.
"""

from __future__ import annotations

import re

from conformance._verdicts import BLOCKED, CHECKS, ERROR, FAIL, NA, PASS, TORCH, CaseResult

_CELL = {PASS: "ok", FAIL: "FAIL", ERROR: "ERR", NA: "–", BLOCKED: "·", TORCH: "torch"}
_SHORT = {"export": "exp", "save": "save", "validate": "valid", "dump": "dump", "dedup": "dedup", "load": "load",
          "graph": "graph", "meta": "meta", "signature": "sig", "range_constraints": "ranges",
          "module_call_graph": "mcg", "state": "state", "example_inputs": "ex.in", "resave": "resave",
          "outputs": "out", "extra_inputs": "extra", "invalid_inputs": "invalid", "decomp": "decomp",
          "unflatten": "unflat", "reexport": "reexp", "programs": "progs", "options": "opts"}
_LABEL = {"flatbuffers": "flat", "msgpack": "msgp", "json": "json"}
_PATHS = re.compile(r"(?:/work|/root|/tmp|/home|/var|/private)/[^\s'\"\]\)|,;]*")


def scrub(text: str) -> str:
    """Machine paths out: a committed report must not name this machine's directories."""
    return _PATHS.sub("<path>", text)


def render_report(results: list[CaseResult], *, title: str = "pt2format conformance report",
                  not_run: list[str] = ()) -> str:
    import torch

    import pt2format

    counted = [r for r in results if r.torch_error is None]
    rows = [(r, label) for r in counted for label in r.rows]
    labels = list(dict.fromkeys(label for _, label in rows))
    lines = [f"# {title}", "",
             f"torch {torch.__version__}, pt2format format {'.'.join(map(str, pt2format.FORMAT_VERSION))}. "
             f"{len(results)} cases, {len(results) - len(counted)} pinned as not exportable by torch itself "
             "(conformance/not_exportable.toml; listed, not counted). Cases passing every check, per row label: "
             + ", ".join(f"{_LABEL.get(lb, lb)} {_clean(counted, lb)}/{sum(1 for r in counted if lb in r.rows)}"
                         for lb in labels) + ".", "",
             "Rows: `flat`/`msgp`/`json` are pt2format's writer and loader in each encoding; any other label is a "
             "writer/loader named on the runner's command line (conformance/README.md), e.g. `torch` = "
             "torch.export.save/load.", "",
             "Cells: ok = pass (ok* = pass with a note), FAIL = mismatch, ERR = exception, – = not applicable, "
             "· = blocked by an earlier failure. `[n]` numbers a reason under the table; `–[Nn]` an N/A reason.", ""]
    lines += ["## Totals per row label", "", "| label | " + " | ".join(_SHORT[c] for c in CHECKS) + " |",
              "|---|" + "---|" * len(CHECKS)]
    for label in labels:
        mine = [(r, e) for r, e in rows if e == label]
        cells = []
        for c in CHECKS:
            ok = sum(1 for r, e in mine if r.rows[e].get(c, [BLOCKED])[0] == PASS)
            app = sum(1 for r, e in mine if r.rows[e].get(c, [BLOCKED])[0] != NA)
            cells.append(f"{ok}/{app}")
        lines.append(f"| {_LABEL.get(label, label)} | " + " | ".join(cells) + " |")
    lines += ["", "(passing / applicable; the rest of the rows are N/A for that column, each with its reason.)", ""]

    lines += ["## Verdicts", "",
              "| case | row | " + " | ".join(_SHORT[c] for c in CHECKS) + " | inputs | save s | load s |",
              "|---|---|" + "---|" * len(CHECKS) + "---|---|---|"]
    notes, na_reasons = [], {}
    for r, label in rows:
        cells = []
        for c in CHECKS:
            status, reason = r.rows[label].get(c, [BLOCKED, ""])
            mark = _CELL[status]
            if status == PASS and reason:
                mark = "ok*"
            if status in (FAIL, ERROR, PASS) and reason:
                notes.append((r.name, label, c, status, reason))
                mark = f"{mark}[{len(notes)}]"
            elif status in (NA, BLOCKED):
                key = _generic(reason or "no reason given")
                n = na_reasons.setdefault(key, len(na_reasons) + 1)
                mark = f"{mark}[N{n}]"
            cells.append(mark)
        t = r.timings.get(label, {})
        load_s = sum(v for k, v in t.items() if k.startswith("load_s"))
        lines.append(f"| {r.name} | {_LABEL.get(label, label)} | " + " | ".join(cells)
                     + f" | {_inputs_cell(r)} | {t.get('save_s', 0):.2f} | {load_s:.2f} |")
    lines += ["", "`inputs`: other valid inputs + invalid inputs checked (summed over the case's programs; listed by "
              "the case or derived from the program's shapes and ranges, conformance/_inputs.py).", "",
              _inputs_summary(counted), ""]
    if notes:
        lines += ["## Reasons", ""]
        for i, (name, label, c, status, reason) in enumerate(notes, 1):
            lines.append(f"{i}. `{name}` {label} {c} ({status}): {_md(reason)}")
        lines.append("")
    if na_reasons:
        lines += ["## Why a cell is not applicable (–) or blocked (·)", ""]
        for text, n in na_reasons.items():
            lines.append(f"- N{n}. {_md(text)}")
        lines.append("")
    if not_run:
        lines += ["## Selected cases not run (the run was interrupted)", "",
                  ", ".join(f"`{n}`" for n in not_run), ""]
    lost = [r for r in results if r.torch_error is not None]
    if lost:
        lines += ["## Cases pinned as not exportable by torch (not counted)", ""]
        for r in lost:
            lines.append(f"- `{r.name}`: {_md(r.torch_error)}")
    return scrub("\n".join(lines) + "\n")


def _clean(results, label: str) -> int:
    """Cases whose row `label` has no failing, erroring or blocked check."""
    return sum(1 for r in results if label in r.rows
               and all(r.rows[label].get(c, [BLOCKED])[0] in (PASS, NA) for c in CHECKS))


def _inputs_cell(r: CaseResult) -> str:
    info = r.inputs or {}
    if not info:
        return ""
    return f"{info.get('extra', 0)} + {info.get('invalid', 0)}"


def _inputs_summary(results) -> str:
    """What the `inputs` column adds up to, per program: how many programs with dynamic input
    dimensions (and how many static ones) were checked on at least two other valid inputs."""
    dyn, stat = [], []
    for r in results:
        for pname, p in (r.inputs or {}).get("programs", {}).items():
            who = r.name if pname == "forward" else f"{r.name}[{pname}]"
            (dyn if p.get("dynamic_dims") else stat).append((who, p.get("extra", 0), p.get("invalid", 0)))
    if not dyn and not stat:
        return "Inputs per program: not recorded by this run."

    def part(progs, what):
        short = [f"`{w}` ({n})" for w, n, _ in progs if n < 2]
        inval = sum(1 for _, _, k in progs if k >= 1)
        return (f"{len(progs)} {what}: {len(progs) - len(short)} checked on at least two other valid inputs"
                + (f", fewer: {', '.join(short)}" if short else "") + f"; {inval} on at least one invalid input")

    return ("Inputs per program: " + part(dyn, "programs with dynamic input dimensions (other sizes inside their "
                                               "ranges)") + ". " + part(stat, "static programs (fresh values)") + ".")


def _generic(reason: str) -> str:
    """An N/A reason without its program prefix and torch's traceback location, so equal reasons group."""
    reason = re.sub(r"^\[[^\]]+\] ", "", reason)
    return re.sub(r" \[[\w.]+:\d+( <- [\w.]+:\d+)*\]", "", reason)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
