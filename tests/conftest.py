"""Suite-wide options.

`--corpus` runs the slow full conformance corpus. `--exhaustive` also runs what is too slow for
CI over every corpus case (tests marked `exhaustive`: without it they are deselected, not
skipped); CI runs a fixed sample of those cases.

`--serdes` (`--serdes-encoding msgpack|json` for another encoding; or the environment
variable `PT2F_SERDES=1|flatbuffers|msgpack|json`) runs the tests in serdes mode, as torch's
test/export/test_serdes.py runs its own export tests: every `torch.export.export` in the tests
returns `pt2format.load(pt2format.save(ep))` of its program (tests/support/serdes_mode.py), so the
existing tests check loaded programs; the tests listed in serdes_mode.EXPECTED_FAILURES are strict
xfail in that mode. Try it on the files that export most, e.g.
`pytest --serdes tests/roundtrip tests/loaders/test_fidelity_hops.py`.

A corpus case that declares a known problem (`Case.xfail`) makes the tests parametrized over the
corpus strict xfail for it (`_mark_known_failures`).
"""

import pytest


def pytest_addoption(parser):
    parser.addoption("--corpus", action="store_true", default=False,
                     help="also run the full conformance corpus (tests marked 'corpus')")
    parser.addoption("--exhaustive", action="store_true", default=False,
                     help="also the checks too slow for CI on every corpus case (tests marked 'exhaustive')")
    parser.addoption("--serdes", action="store_true", default=False,
                     help="serdes mode: torch.export.export returns pt2format.load(pt2format.save(ep)); "
                          "also PT2F_SERDES=1|flatbuffers|msgpack|json")
    parser.addoption("--serdes-encoding", default=None, choices=("flatbuffers", "msgpack", "json"),
                     help="the encoding serdes mode saves with (default flatbuffers); implies --serdes")


def pytest_configure(config):
    from serdes_mode import encoding_from, install

    asked = config.getoption("--serdes-encoding") or ("1" if config.getoption("--serdes") else None)
    encoding = encoding_from(asked)
    if encoding is not None:  # before any test module imports torch.export's names
        install(encoding)
        config._pt2f_serdes = True


def pytest_terminal_summary(terminalreporter):
    import sys

    mode = sys.modules.get("serdes_mode")
    for line in (mode.summary_lines() if mode is not None else []):
        terminalreporter.write_line(line)


def _mark_known_failures(items):
    """Strict xfail on tests of a corpus case that declares a known problem (Case.xfail) for them."""
    import sys

    registry = getattr(sys.modules.get("conformance.corpus._case"), "REGISTRY", None)
    if not registry:  # no test module imported the corpus
        return
    for item in items:
        name = getattr(getattr(item, "callspec", None), "params", {}).get("name")
        c = registry.get(name) if isinstance(name, str) else None
        if c is None or not c.xfail:
            continue
        reason = c.xfail if isinstance(c.xfail, str) else c.xfail.get(item.originalname)
        if reason:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))


def pytest_collection_modifyitems(config, items):
    _mark_known_failures(items)
    if getattr(config, "_pt2f_serdes", False):
        from serdes_mode import EXPECTED_FAILURES

        for item in items:
            if item.nodeid in EXPECTED_FAILURES:
                item.add_marker(pytest.mark.xfail(strict=True, reason="serdes mode: " + EXPECTED_FAILURES[item.nodeid]))
    if not config.getoption("--exhaustive"):
        kept = [item for item in items if "exhaustive" not in item.keywords]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if "exhaustive" in item.keywords])
            items[:] = kept
    if config.getoption("--corpus"):
        return
    skip = pytest.mark.skip(reason="full corpus: run with --corpus")
    for item in items:
        if "corpus" in item.keywords:
            item.add_marker(skip)


def pytest_make_parametrize_id(config, val, argname):
    """A callable parameter gets its printed name, or its qualified name when that print holds an address:
    the ids of the two xdist workers (separate processes) must be equal, or the run stops at collection."""
    if not callable(val) or isinstance(val, type):
        return None
    text = str(val)
    if " at 0x" not in text:
        return text
    return f"{getattr(val, '__module__', None) or ''}.{getattr(val, '__qualname__', type(val).__name__)}".lstrip(".")
