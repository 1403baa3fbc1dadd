"""Registers strategies.py under a name no other test folder can shadow (the suite has no __init__.py files)."""

import importlib.util
import sys
from pathlib import Path

_NAME = "pt2format_codecs_test_strategies"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name("strategies.py"))
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _mod
    _spec.loader.exec_module(_mod)
