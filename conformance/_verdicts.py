"""What a conformance run checks and how it records the outcome: encodings, checks, statuses, targets.

A `CaseResult` holds one verdict per target x check; `Target` names the
writer, loader and dump reader of one row; the pinned lists say which
cases torch cannot export (not_exportable.toml) and which differences are
understood (explained.toml). Shared by the runner and the report renderer.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field

ENCODINGS = ("flatbuffers", "msgpack", "json")
PARENT_CHECKS = ("export", "save", "validate", "dump", "dedup")
CHILD_CHECKS = ("load", "graph", "meta", "signature", "range_constraints", "module_call_graph", "state",
                "example_inputs", "resave", "outputs", "extra_inputs", "invalid_inputs", "decomp", "unflatten",
                "reexport", "programs", "options")
CHECKS = PARENT_CHECKS + CHILD_CHECKS
PASS, FAIL, ERROR, NA, BLOCKED, TORCH = "pass", "fail", "error", "na", "blocked", "torch"


@dataclass
class CaseResult:
    """Verdicts for one case: rows[encoding][check] = [status, reason]."""

    name: str
    tags: tuple = ()
    torch_error: str | None = None
    rows: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: Inputs checked beyond the example, summed over the programs: {"extra": n, "invalid": n}.
    inputs: dict = field(default_factory=dict)

    def failures(self) -> list[tuple[str, str, str, str]]:
        """(encoding, check, status, reason) for every check that neither passed nor was not applicable."""
        out = []
        for enc, row in self.rows.items():
            for check in CHECKS:
                status, reason = row.get(check, [BLOCKED, "not run"])
                if status not in (PASS, NA):
                    out.append((enc, check, status, reason))
        return out

    @property
    def passed(self) -> bool:
        return self.torch_error is None and not self.failures()

    def to_json(self) -> dict:
        return {"name": self.name, "tags": list(self.tags), "torch_error": self.torch_error, "rows": self.rows,
                "timings": self.timings, "phases": self.phases, "seconds": self.seconds, "inputs": self.inputs}

    @classmethod
    def from_json(cls, doc: dict) -> "CaseResult":
        return cls(doc["name"], tuple(doc.get("tags", ())), doc.get("torch_error"), doc.get("rows", {}),
                   doc.get("timings", {}), doc.get("phases", {}), doc.get("seconds", 0.0), doc.get("inputs", {}))


def default_encodings(case) -> tuple:
    """All three encodings for the fast set, flatbuffers (the default) for the rest."""
    return ENCODINGS if case.fast else ("flatbuffers",)


def _exc(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)[-2:]
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames))
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:300] if lines else ''} [{where}]"


# --------------------------------------------------------------------------- targets and pinned lists

@dataclass(frozen=True)
class Target:
    """One row per case: files written by `writer`, loaded by `loader` in a fresh process,
    dumped by `dump` (a command with {path}; None = `python -m pt2format dump`).
    Writers and loaders are `module:attribute` names (conformance/adapters.py)."""

    label: str
    writer: str
    loader: str = "conformance.adapters:pt2format_loader"
    dump: str | None = None


def default_targets(encodings) -> tuple:
    """pt2format's own writer and loader, one target per encoding."""
    return tuple(Target(enc, f"conformance.adapters:{enc}_writer") for enc in encodings)


HERE = os.path.dirname(os.path.abspath(__file__))


def _toml(name: str) -> dict:
    import tomllib

    with open(os.path.join(HERE, name), "rb") as f:
        return tomllib.load(f)


def not_exportable() -> dict:
    """case name -> {reason, error}: the pinned cases torch cannot export (not_exportable.toml)."""
    return _toml("not_exportable.toml")


def explained_differences() -> dict:
    """case name -> [{program, check, difference, why}]: differences that are understood and
    accepted (explained.toml): graphs after a follow-up, guard messages, output layouts."""
    out = {}
    for entry in _toml("explained.toml").get("difference", []):
        out.setdefault(entry["case"], []).append(entry)
    return out
