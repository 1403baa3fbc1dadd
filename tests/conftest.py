"""Suite-wide options: `--corpus` runs the slow full conformance corpus."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--corpus", action="store_true", default=False,
                     help="also run the full conformance corpus (tests marked 'corpus')")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--corpus"):
        return
    skip = pytest.mark.skip(reason="full corpus: run with --corpus")
    for item in items:
        if "corpus" in item.keywords:
            item.add_marker(skip)
