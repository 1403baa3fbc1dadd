"""The conformance corpus: every case, by name, loaded from the topic modules on demand.

`all_cases()` imports the topic modules (which import torch and the model
code) and returns the registry; nothing is imported at package import time.
"""

from __future__ import annotations

import importlib

from conformance.corpus._case import REGISTRY, Case, Program, case  # noqa: F401

#: Topic modules, in report order.
MODULES = (
    "basic",
    "dynamic",
    "control_flow",
    "state",
    "custom_ops",
    "dtypes",
    "tensors",
    "ir",
    "multi",
    "torchbind",
    "transformers_models",
    "standins",
    "hf_architectures",
    "hf_flows",
    "exportdb",
    "torch_export_tests",
)

_loaded = False


def all_cases() -> dict[str, Case]:
    """name -> Case for the whole corpus, in registration order."""
    global _loaded
    if not _loaded:
        for m in MODULES:
            importlib.import_module(f"conformance.corpus.{m}")
        _loaded = True
    return REGISTRY


def get_case(name: str) -> Case:
    cases = all_cases()
    if name not in cases:
        raise KeyError(f"no corpus case {name!r} (have {len(cases)})")
    return cases[name]


def select(*, tags=None, names=None) -> list[Case]:
    """Cases with any of `tags` (all when None), or exactly `names`, in registry order."""
    cases = all_cases()
    if names:
        return [get_case(n) for n in names]
    out = list(cases.values())
    if tags:
        out = [c for c in out if c.tags & set(tags)]
    return out
