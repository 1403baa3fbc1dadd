"""Render runner verdicts as the markdown report (conformance/REPORT.md): case x encoding x check."""

from __future__ import annotations

from conformance.runner import BLOCKED, CHECKS, ERROR, FAIL, NA, PASS, TORCH, CaseResult

_CELL = {PASS: "ok", FAIL: "FAIL", ERROR: "ERR", NA: "–", BLOCKED: "·", TORCH: "torch"}
_SHORT = {"export": "exp", "save": "save", "validate": "valid", "dump": "dump", "dedup": "dedup", "load": "load",
          "graph": "graph", "meta": "meta", "signature": "sig", "range_constraints": "ranges",
          "module_call_graph": "mcg", "state": "state", "example_inputs": "ex.in", "resave": "resave",
          "outputs": "out", "extra_inputs": "extra", "invalid_inputs": "invalid", "decomp": "decomp",
          "unflatten": "unflat", "reexport": "reexp"}


def render_report(results: list[CaseResult], *, title: str = "pt2format conformance report") -> str:
    import torch

    import pt2format

    counted = [r for r in results if r.torch_error is None]
    rows = [(r, enc) for r in counted for enc in r.rows]
    lines = [f"# {title}", "",
             f"torch {torch.__version__}, pt2format format {'.'.join(map(str, pt2format.FORMAT_VERSION))}. "
             f"{len(results)} cases: {sum(r.passed for r in counted)} pass every check, "
             f"{len(counted) - sum(r.passed for r in counted)} fail some, "
             f"{len(results) - len(counted)} cannot be exported by torch itself (listed, not counted).", "",
             "Cells: ok = pass (ok* = pass with a note), FAIL = mismatch, ERR = exception, – = not applicable, "
             "· = blocked by an earlier failure. Reasons are listed below the table.", ""]
    totals = {c: sum(1 for r, e in rows if r.rows[e].get(c, [BLOCKED])[0] == PASS) for c in CHECKS}
    applicable = {c: sum(1 for r, e in rows if r.rows[e].get(c, [BLOCKED])[0] != NA) for c in CHECKS}
    lines.append("| case | enc | " + " | ".join(_SHORT[c] for c in CHECKS) + " | save s | load s |")
    lines.append("|---|---|" + "---|" * len(CHECKS) + "---|---|")
    notes = []
    for r, enc in rows:
        cells = []
        for c in CHECKS:
            status, reason = r.rows[enc].get(c, [BLOCKED, ""])
            mark = _CELL[status]
            if status == PASS and reason:
                mark = "ok*"
            if status in (FAIL, ERROR, PASS) and reason:
                notes.append((r.name, enc, c, status, reason))
                mark = f"{mark}[{len(notes)}]"
            cells.append(mark)
        t = r.timings.get(enc, {})
        load_s = sum(v for k, v in t.items() if k.startswith("load_s"))
        lines.append(f"| {r.name} | {enc[:4]} | " + " | ".join(cells)
                     + f" | {t.get('save_s', 0):.2f} | {load_s:.2f} |")
    lines.append("| **passing** | | " + " | ".join(f"{totals[c]}/{applicable[c]}" for c in CHECKS) + " | | |")
    if notes:
        lines += ["", "## Reasons", ""]
        for i, (name, enc, c, status, reason) in enumerate(notes, 1):
            lines.append(f"{i}. `{name}` {enc} {c} ({status}): {_md(reason)}")
    lost = [r for r in results if r.torch_error is not None]
    if lost:
        lines += ["", "## Cases torch itself cannot export (not counted)", ""]
        for r in lost:
            lines.append(f"- `{r.name}`: {_md(r.torch_error)}")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
