"""What a corpus case is: a named builder of one or more programs to export, plus tags.

A case module registers builders with `@case(...)`. A builder returns a
`Program` (one exported program, saved as the file's only program) or a dict
name -> Program (a multi-program file). Building runs model code; it happens
only in the producer process, never in the process that loads the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

#: Tags: "fast" runs in the default test run (all three encodings); "full"
#: only with --corpus; "slow" is heavy (big models, C++ builds) and also only
#: with --corpus; "exportdb" marks torch's ExportDB examples.
#: "torch_tests" marks programs ported from PyTorch's own export tests.
TAGS = frozenset({"fast", "full", "slow", "exportdb", "transformers", "gap", "torch_tests"})

Inputs = tuple  # (args: tuple, kwargs: dict)


@dataclass
class Program:
    """One program to export: torch.export.export(module, args, kwargs, dynamic_shapes=..., strict=...)."""

    module: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    dynamic_shapes: Any = None
    strict: bool = False
    #: Applied to the exported program (e.g. `lambda ep: ep.run_decompositions()`).
    post: Callable | None = None
    #: Replaces the export call when it needs a context (returns an ExportedProgram).
    export_fn: Callable | None = None
    #: Other valid inputs (args, kwargs), e.g. other sizes for dynamic dims.
    extra_inputs: list = field(default_factory=list)
    #: Inputs the original program rejects; the loaded one must reject them too.
    invalid_inputs: list = field(default_factory=list)
    #: Follow-up checks ("decomp", "unflatten", "reexport") that cannot be recorded because running
    #: torch's own follow-up of the original breaks the process: key -> why. Their cells are N/A.
    torch_breaks: dict = field(default_factory=dict)

    def export(self):
        import torch

        if self.export_fn is not None:
            ep = self.export_fn()
        else:
            ep = torch.export.export(self.module, tuple(self.args), dict(self.kwargs),
                                     dynamic_shapes=self.dynamic_shapes, strict=self.strict)
        return self.post(ep) if self.post is not None else ep


@dataclass
class Case:
    name: str
    build: Callable[[], Program | dict]
    tags: frozenset = frozenset({"full"})
    #: Modules the loading process imports first: operator libraries (custom
    #: ops, torchbind classes) and pytree registrations (transformers), never
    #: the case module itself.
    child_imports: tuple = ()
    #: False when outputs are random: only their types and shapes are compared.
    deterministic: bool = True
    description: str = ""
    #: A known problem this case fails on today (the issue and the error). A string applies to every
    #: test parametrized over the corpus; a dict maps a test function's name (`test_corpus_case`,
    #: `test_load_module_matches_torch_module`, `test_torch_roundtrip`) to its reason. tests/conftest.py
    #: marks those tests as strict expected failures, so each fails again once its problem is fixed.
    xfail: str | dict = ""
    #: check -> a known problem of pt2format's own rows (the issue and the error): the corpus test
    #: expects exactly these checks to fail (strictly: one that passes fails the test), every
    #: other check must pass, so the rest of the case keeps being checked.
    xfail_checks: dict = field(default_factory=dict)

    @property
    def fast(self) -> bool:
        return "fast" in self.tags

    @property
    def slow(self) -> bool:
        return "slow" in self.tags


REGISTRY: dict[str, Case] = {}


def case(name: str, *, tags=("full",), child_imports=(), deterministic=True, xfail="", xfail_checks=None):
    """Register the decorated builder as corpus case `name`."""
    bad = set(tags) - TAGS
    if bad:
        raise ValueError(f"unknown tags {sorted(bad)} for case {name!r}")

    def wrap(fn):
        if name in REGISTRY:
            raise ValueError(f"duplicate corpus case {name!r}")
        REGISTRY[name] = Case(name, fn, frozenset(tags), tuple(child_imports), deterministic,
                              (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else "", xfail,
                              dict(xfail_checks or {}))
        return fn

    return wrap


def add(c: Case) -> None:
    """Register a case built without the decorator (generated cases, e.g. ExportDB)."""
    if c.name in REGISTRY:
        raise ValueError(f"duplicate corpus case {c.name!r}")
    REGISTRY[c.name] = c
