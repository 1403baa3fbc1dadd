"""Serdes mode: every `torch.export.export` in the tests returns its program after a pt2format round trip.

torch runs its own export tests a second time with `export` replaced by
export -> `torch.export.save` -> `torch.export.load` (test/export/test_serdes.py),
so every assertion a test makes about an exported program is also made about
the loaded one. This plugin does the same with pt2format: with
`pytest --serdes` (`--serdes-encoding E`) (or `PT2F_SERDES=1|flatbuffers|msgpack|json`),
`torch.export.export` returns `pt2format.load(pt2format.save(ep))`, so the
existing tests run against loaded programs.

The patch is installed at configure time, before any test module is imported,
so `from torch.export import export` in a test module binds the patched
function too. Calls made while saving or loading go to torch's own `export`.
A failure to save or load raises the original exception with a note naming
serdes mode, so the test fails where the round trip lost the program.

Subclass weights: the program comes from this process, so the loader is
given the tensor subclass types found in its own state as `allow_subclasses`
(what the test author would pass).
"""

from __future__ import annotations

import functools
import io
import os
import threading

ENV = "PT2F_SERDES"
ENCODINGS = ("flatbuffers", "msgpack", "json")


def encoding_from(option: str | None) -> str | None:
    """The encoding asked for by the --serdes option or the PT2F_SERDES variable, or None (mode off)."""
    value = option if option is not None else os.environ.get(ENV, "")
    value = value.strip().lower()
    if value in ("", "0", "off", "no", "false"):
        return None
    if value in ("1", "on", "yes", "true"):
        return "flatbuffers"
    if value not in ENCODINGS:
        raise ValueError(f"serdes mode: unknown encoding {value!r} (one of {', '.join(ENCODINGS)}, or 1)")
    return value


#: Tests that fail in serdes mode, with why (strict xfail when the mode is on), as torch's
#: test_serdes.py lists its own (`_expected_failure_serdes`). Two kinds: what the mode itself
#: changes (the test compares against a program that is now a loaded one, or needs two exports
#: to share storages, which two independent loads cannot), and problems the mode found.
EXPECTED_FAILURES = {
    "tests/roundtrip/test_roundtrip_corpus_regressions.py::test_programs_loaded_separately_resave_to_the_same_bytes":
        "the mode: the two programs are exported from one module but each export is loaded on its own, so "
        "they no longer share their weight storages (6 storages instead of 4)",
    "tests/roundtrip/test_roundtrip_features.py::test_multi_program_file_stores_shared_weights_once":
        "the mode: the two exports of one module are loaded independently, so the tied weight is two storages",
    "tests/roundtrip/test_roundtrip_features.py::test_rebuilt_program_has_the_attributes_torch_gives_one":
        "the mode: the 'torch' program is itself a loaded one and carries _pt2format_saved_guards_code",
    "tests/roundtrip/test_roundtrip_models.py::test_roundtrip_of_decomposed_program[dynamic_derived]":
        "found by the mode: run_decompositions() of a loaded program rebuilds the ExportedProgram, whose "
        "_guards_code torch re-derives from the graph's ShapeEnv; the loaded ShapeEnv holds no guards, so the "
        "decomposed program's module() drops 2*x.size()[0] == y.size()[0] and fails inside the graph "
        "(RuntimeError 'The size of tensor a (10) must match the size of tensor b (9)') where torch's "
        "decomposed program raises AssertionError 'Guard failed: 2 * x.size()[0] == y.size()[0]'",
}


class SerdesStats:
    def __init__(self, encoding: str):
        self.encoding = encoding
        self.round_trips = 0
        self.save_failures = 0
        self.load_failures = 0


_local = threading.local()
STATS: SerdesStats | None = None


def _subclass_types(ep) -> tuple:
    """Tensor subclass types in the program's state (parameters, buffers, constants), inner ones included."""
    import torch

    found: list[type] = []

    def visit(t):
        if not isinstance(t, torch.Tensor):
            return
        cls = type(t)
        if cls in (torch.Tensor, torch.nn.Parameter):
            if cls is torch.nn.Parameter and type(t.data) not in (torch.Tensor, torch.nn.Parameter):
                visit(t.data)
            return
        if issubclass(cls, torch.nn.Parameter):
            return
        if cls not in found:
            found.append(cls)
        flatten = getattr(t, "__tensor_flatten__", None)
        if flatten is not None:
            names, _ = flatten()
            for n in names:
                visit(getattr(t, n))

    for t in list(ep.state_dict.values()) + list(ep.constants.values()):
        visit(t)
    return tuple(found)


def round_trip(ep, encoding: str):
    """pt2format.load(pt2format.save(ep)) through memory; errors carry a note naming serdes mode."""
    import pt2format

    buf = io.BytesIO()
    try:
        pt2format.save(ep, buf, encoding=encoding, fsync=False, progress=False)
    except BaseException as e:
        if STATS is not None:
            STATS.save_failures += 1
        e.add_note(f"[pt2format serdes mode] pt2format.save ({encoding}) of the exported program failed")
        raise
    try:
        return pt2format.load(buf.getvalue(), allow_subclasses=_subclass_types(ep))
    except BaseException as e:
        if STATS is not None:
            STATS.load_failures += 1
        e.add_note(f"[pt2format serdes mode] pt2format.load ({encoding}) of the saved program failed")
        raise


def install(encoding: str) -> None:
    """Replace torch.export.export by export + round trip (once per process)."""
    global STATS
    import torch.export

    if getattr(torch.export.export, "_pt2f_serdes", False):
        return
    original = torch.export.export
    STATS = SerdesStats(encoding)

    @functools.wraps(original)
    def export_with_serdes(*args, **kwargs):
        ep = original(*args, **kwargs)
        if getattr(_local, "busy", False):  # an export made by save/load itself
            return ep
        _local.busy = True
        try:
            loaded = round_trip(ep, encoding)
        finally:
            _local.busy = False
        STATS.round_trips += 1
        return loaded

    export_with_serdes._pt2f_serdes = True
    export_with_serdes._pt2f_original = original
    torch.export.export = export_with_serdes


def summary_lines() -> list[str]:
    if STATS is None:
        return []
    return [f"pt2format serdes mode ({STATS.encoding}): {STATS.round_trips} exports round-tripped, "
            f"{STATS.save_failures} failed at save, {STATS.load_failures} failed at load"]
