"""The string-class checks the generated Python decoders emit (one helper for all three encodings).

Each string field of the schema has a `pt2f_string` class (regen.py refuses one
without); a generated decoder calls the class's checker from
`pt2format._strings.CHECKERS` right after decoding the string, with the
field's `Table.field` name for the error.
"""

from __future__ import annotations

from pt2format._strings import STRING_CLASSES


def string_check_imports() -> str:
    """Module-level aliases `_SC_<class>` for every string class."""
    lines = ["from pt2format._strings import CHECKERS as _SC\n"]
    lines += [f"_SC_{c} = _SC[{c!r}]\n" for c in STRING_CLASSES]
    return "".join(lines) + "\n"


def string_check(var: str, cls: str, field: str) -> str:
    """One statement checking the decoded string `var` (not None)."""
    return f"_SC_{cls}({var}, {field!r})"


def string_check_all(var: str, cls: str, field: str) -> str:
    """One statement checking every string of the decoded list `var`."""
    return f"for _s in {var}: _SC_{cls}(_s, {field!r})"
