"""Every example of torch's ExportDB (torch._export.db.examples), one case each.

Examples are exported strictly (ExportDB documents what TorchDynamo-based
export supports; torch's own test_db exports them with strict=True). An
example torch itself cannot export shows up in the report with torch's
error and is not counted.
"""

from __future__ import annotations

from conformance.corpus._case import Case, Program, add


def _builder(example):
    def build():
        return Program(example.model, tuple(example.example_args), dict(example.example_kwargs or {}),
                       dynamic_shapes=example.dynamic_shapes, strict=True,
                       extra_inputs=[(tuple(a), {}) for a in (example.extra_args or [])
                                     if isinstance(a, tuple)])

    return build


def _register() -> None:
    from torch._export.db.examples import all_examples

    for name, example in sorted(all_examples().items()):
        tags = {"exportdb", "full"}
        add(Case(f"exportdb.{name}", _builder(example), frozenset(tags),
                 description=(example.description or "").strip().splitlines()[0] if example.description else ""))


_register()
