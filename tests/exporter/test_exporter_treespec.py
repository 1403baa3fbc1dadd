"""exporter/_treespec.py: torch's pytree TreeSpecs -> `TreeSpec` tables, checked against torch's own specs."""

from __future__ import annotations

import collections

import pytest
import torch.utils._pytree as pytree

from pt2format._generated.model import TreeSpecKind
from pt2format.errors import ExportError
from pt2format.exporter._treespec import TreeSpecExporter, serialized_type_name

Point = collections.namedtuple("Point", ["x", "y"])


def _spec(tree):
    return pytree.tree_flatten(tree)[1]


@pytest.mark.parametrize("tree, kind", [
    (1, TreeSpecKind.LEAF), ((1, 2), TreeSpecKind.TUPLE), ([1], TreeSpecKind.LIST),
    ({"a": 1}, TreeSpecKind.DICT), (collections.OrderedDict(a=1), TreeSpecKind.ORDERED_DICT),
    (collections.defaultdict(list, a=1), TreeSpecKind.DEFAULT_DICT), (Point(1, 2), TreeSpecKind.NAMEDTUPLE),
    (collections.deque([1, 2]), TreeSpecKind.DEQUE),
], ids=lambda v: type(v).__name__)
def test_node_kind_and_children_follow_torchs_spec(tree, kind):
    spec = _spec(tree)
    out = TreeSpecExporter().convert(spec)
    assert out.kind == (TreeSpecKind.LEAF if spec.is_leaf() else kind)
    assert len(out.children or []) == spec.num_children


def test_dict_keys_are_torchs_context_in_order():
    spec = _spec({"b": 1, "a": (2, 3)})
    out = TreeSpecExporter().convert(spec)
    assert [k.value.value for k in out.keys] == spec.context == ["b", "a"]
    assert out.children[1].kind == TreeSpecKind.TUPLE and len(out.children[1].children) == 2


def test_namedtuple_recorded_by_name_and_fields_as_torch_names_it():
    exporter = TreeSpecExporter()
    out = exporter.convert(_spec(Point(1, 2)))
    assert out.type_name == serialized_type_name(Point) == f"{Point.__module__}.Point"
    assert tuple(exporter.namedtuples[out.type_name]) == Point._fields


def test_unregistered_class_is_refused_by_path():
    class Opaque:
        pass

    spec = pytree.TreeSpec(Opaque, None, [])
    with pytest.raises(ExportError) as e:
        TreeSpecExporter().convert(spec, "module_call_graph[0].in_spec")
    assert "module_call_graph[0].in_spec" in str(e.value)
