"""The public API changes only on purpose: update these lists together with the changelog."""

import importlib
import subprocess
import sys

FUNCTIONS = {"save", "load", "read", "validate", "save_weights", "attach_weights", "FORMAT_VERSION"}
PT2FORMAT = FUNCTIONS | {
    "Pt2FormatError", "FormatError", "HeaderError", "StaleShardError", "ChecksumError", "SegmentError", "EncodingError",
    "LimitError", "VersionError", "UnsupportedFeatureError", "ValidationError", "ExportError", "LoadError",
}


def test_pt2format_exports():
    import pt2format

    assert set(pt2format.__all__) == PT2FORMAT
    for name in PT2FORMAT:
        assert hasattr(pt2format, name), name


def test_errors_form_one_hierarchy():
    import pt2format

    for name in PT2FORMAT - FUNCTIONS:
        assert issubclass(getattr(pt2format, name), pt2format.Pt2FormatError), name
    for name in ("FormatError", "ValidationError"):
        assert issubclass(getattr(pt2format, name), ValueError), name


def test_import_does_not_import_torch():
    code = "import sys, pt2format, pt2format.cli; assert 'torch' not in sys.modules, 'torch imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_exporter_and_loader_exports():
    exporter = importlib.import_module("pt2format.exporter")
    loaders = importlib.import_module("pt2format.loaders")
    assert "export_program" in exporter.__all__ and "save_programs" in exporter.__all__
    assert "load_program" in loaders.__all__ and "attach_weights" in loaders.__all__
    assert "save_weights" in exporter.__all__
