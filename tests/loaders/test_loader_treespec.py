"""loaders/_treespec.py: `TreeSpec` tables -> torch pytree specs equal to torch's, finding classes without imports."""

from __future__ import annotations

import collections
import sys

import pytest
import torch.utils._pytree as pytree

from pt2format._generated.model import TreeSpec, TreeSpecKind
from pt2format.errors import FallbackWarning
from pt2format.exporter._treespec import TreeSpecExporter
from pt2format.loaders._treespec import TreeSpecLoader, find_class

Point = collections.namedtuple("Point", ["x", "y"])


@pytest.mark.parametrize("tree", [
    1, (1, [2, 3]), {"b": 1, "a": (2,)}, collections.OrderedDict(z=1, y=2), collections.defaultdict(list, k=1),
    Point(1, (2, 3)), collections.deque([1, 2], maxlen=4), ((), {}, [None]),
], ids=lambda t: type(t).__name__)
def test_loaded_spec_equals_torchs(tree):
    spec = pytree.tree_flatten(tree)[1]
    table = TreeSpecExporter().convert(spec)
    assert TreeSpecLoader("forward").load(table) == spec


def test_classes_are_found_only_among_imported_modules():
    assert find_class(f"{Point.__module__}.Point", "spec") is Point
    assert find_class("collections.OrderedDict", "spec") is collections.OrderedDict
    assert "turtle" not in sys.modules
    assert find_class("turtle.Turtle", "spec") is None
    assert "turtle" not in sys.modules  # looked up, never imported
    assert find_class("collections.__loader__", "spec") is None  # dunder attributes are not classes to find


def test_unknown_namedtuple_gets_a_stand_in_that_torch_flattens_the_same():
    table = TreeSpec(kind=TreeSpecKind.NAMEDTUPLE, type_name="gone_module.Gone", field_names=["a", "b"],
                     children=[TreeSpec(kind=TreeSpecKind.LEAF), TreeSpec(kind=TreeSpecKind.LEAF)])
    with pytest.warns(FallbackWarning, match="gone_module.Gone"):
        spec = TreeSpecLoader("forward").load(table)
    value = pytree.tree_unflatten([1, 2], spec)  # torch builds the stand-in from the spec
    assert type(value).__name__ == "Gone" and (value.a, value.b) == (1, 2)
    leaves, again = pytree.tree_flatten(value)
    assert leaves == [1, 2] and again == spec
