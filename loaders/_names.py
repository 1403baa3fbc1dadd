"""Checks on names read from a file before they reach torch, FX code generation or a registry lookup.

FX turns node names, keyword names, attribute paths and forward-argument names
into Python source that it then compiles. Any of them carrying quotes, line
breaks or other syntax could smuggle code into that source, so every such
name is checked here and refused with a LoadError naming the field.
"""

from __future__ import annotations

import re

from pt2format._strings import CHECKERS, is_identifier
from pt2format.errors import LoadError

_WHY_IDENT = "a Python identifier in NFKC form, not a keyword (SPEC.md §9)"
_FQN_ATOM = re.compile(r"[^\x00-\x1f\x7f\"'\\\u2028\u2029\x85]+\Z")
_TEXT_BREAKS = re.compile(r"[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
# Strings the decoder's string classes already accepted (pt2format._strings: only strings that passed are
# ever added). Every `local_name` and every `identifier` is an identifier by `is_identifier`, so a node or
# keyword name read from a file costs a set lookup here, not a second grammar check (20,000 in a large graph).
_IDENTIFIERS_ACCEPTED = (CHECKERS["local_name"].accepted, CHECKERS["identifier"].accepted)
# Texts already found free of other line breaks (every node of a graph usually has the same stack trace);
# bounded in count and length, so what it keeps alive stays small.
_TEXT_OK: set[str] = set()
_TEXT_OK_LIMIT = 256
_TEXT_OK_LONGEST = 8192


def check_identifier(name, path: str, field: str = "") -> str:
    """A name Python compiles to itself (the identifier grammar of pt2format._strings, Unicode included).

    An error names `path + field` (joined only then: most names pass)."""
    if type(name) is str and (name in _IDENTIFIERS_ACCEPTED[0] or name in _IDENTIFIERS_ACCEPTED[1]):
        return name
    if not isinstance(name, str) or not is_identifier(name):
        raise LoadError("not a valid identifier", path=path + field, expected=_WHY_IDENT,
                        got=repr(name)[:200])
    return name


def check_fqn(name, path: str) -> str:
    """A dotted attribute path ("layers.0.weight"): non-empty atoms without quotes, backslashes or control chars."""
    if not isinstance(name, str) or not name or not all(_FQN_ATOM.match(a) for a in name.split(".")):
        raise LoadError("not a valid attribute path", path=path, expected="dot-separated names without quotes, "
                        "backslashes or control characters", got=repr(name)[:200])
    return name


def check_text(text, path: str, field: str = "") -> str:
    """Free text that FX may print into generated code comments: no line breaks other than '\\n'."""
    if type(text) is str and text in _TEXT_OK:
        return text
    if isinstance(text, str):
        if _TEXT_BREAKS.search(text):
            raise LoadError("text contains a line break other than \\n", path=path + field,
                            expected="'\\n' line breaks only", got=repr(text)[:200])
        if type(text) is str and len(text) <= _TEXT_OK_LONGEST:
            if len(_TEXT_OK) >= _TEXT_OK_LIMIT:
                _TEXT_OK.clear()
            _TEXT_OK.add(text)
    return text


_QUOTED_UNSAFE = re.compile(r"['\"\\\x00-\x1f\x7f\x85\u2028\u2029]")


def check_constant_string(value, path: str):
    """A string constant input. torch's ExportedProgram.module() pastes these between quotes into guard code
    that it compiles, so quotes, backslashes and control characters are refused."""
    if isinstance(value, str) and _QUOTED_UNSAFE.search(value):
        raise LoadError("string constant input contains quotes, backslashes or control characters", path=path,
                        expected="plain text", got=repr(value)[:200])
    return value


def check_dotted_identifiers(name, path: str) -> list[str]:
    """'a.b.c' where every part is an identifier; returns the parts."""
    if not isinstance(name, str):
        raise LoadError("expected a string", path=path, got=type(name).__name__)
    parts = name.split(".")
    for p in parts:
        if not is_identifier(p):
            raise LoadError("not a valid qualified name", path=path, expected="dot-separated identifiers",
                            got=repr(name)[:200])
    return parts
