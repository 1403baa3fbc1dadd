"""Emits the field-path bookkeeping of generated table functions (see pt2format/_codecs/_runtime.py `note`).

A generated function keeps the field it is working on in the local `f_` and
runs its body inside `try:`; CPython 3.11+ makes that free until something is
raised. On an error the except block notes (f_, key, locals()) on the exception
and re-raises, so the codec entry point can name the path with no second,
reflective walk of the input.
"""

from __future__ import annotations


def marker(name: str, ind: str, container: str | None = None) -> str:
    """The statement recording that the following code works on field `name`
    (`container`: where a vector of tables' elements are, for the element index)."""
    value = repr(name) if container is None else repr((name, container))
    return f"{ind}f_ = {value}\n"


def wrapped(head: str, body: str, ind: str, key: str, slots: str | None = None, errors: str = "_PATH_ERRORS") -> str:
    """`head` (a def line), then `body` (written at indent `ind`) inside the try/except that notes the path."""
    inner = "".join("    " + line if line.strip() else line for line in body.splitlines(True))
    extra = f", {slots}" if slots else ""
    return (f"{head}{ind}f_ = None\n{ind}try:\n{inner}"
            f"{ind}except {errors} as e_:\n{ind}    _note(e_, f_, {key}, locals(){extra})\n{ind}    raise\n\n")


def wrap_since(w, start: int, ind: str, key: str, slots: str | None = None, errors: str = "_PATH_ERRORS") -> None:
    """Wrap what was written through `w` (a list's append) since index `start` (the def line) with `wrapped`."""
    out = w.__self__
    head, body = out[start], "".join(out[start + 1:])
    del out[start:]
    out.append(wrapped(head, body, ind, key, slots, errors))
