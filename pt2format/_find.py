"""find_program: the Program of a package a call asks for (by name, or the only / "forward" one).

The one statement of the default-program rule: `load`, `load_module`,
`attach_weights` and `open(...).program()` all choose through it, so they
pick the same program and refuse with the same error.
"""

from __future__ import annotations

from pt2format.errors import ProgramNotFoundError


def find_program(package, name):
    """The Program named `name`; None picks the only program, or "forward"."""
    progs = package.programs
    names = [p.name for p in progs]
    program_was_default = name is None
    if name is None:
        if len(progs) == 1:
            return progs[0]
        name = "forward"
    for p in progs:
        if p.name == name:
            return p
    if len(names) > 1:
        raise ProgramNotFoundError(f"this file holds {len(names)} programs ({', '.join(map(repr, names))}); choose one with "
                        f"program=..., e.g. pt2format.load(path, program={names[0]!r})"
                        if name == "forward" and program_was_default else
                        f"no program named {name!r}; this file holds {', '.join(map(repr, names))}",
                        expected=f"one of {names}", got=None if program_was_default else name)
    raise ProgramNotFoundError(f"no program named {name!r}; this file holds {names[0]!r}" if names else
                    "this file holds no programs", expected=names, got=name)
