"""Where the schema and its history live in this checkout."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
FBS = ROOT / "schema" / "pt2format.fbs"
HISTORY = ROOT / "schema" / "history"
