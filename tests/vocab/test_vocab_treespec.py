"""pt2format.vocab.treespec: the pytree names both directions share, checked against torch's pytree."""

from __future__ import annotations

import copy
import importlib

import torch.utils._pytree as pytree

from pt2format.vocab import treespec


def _resolve(qualified: str):
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_constant_functions_and_their_wrapper_are_torchs():
    for name in treespec.CONSTANT_FUNCTIONS:
        fn = _resolve(name)
        assert treespec.qualified_name(fn) == name
    cls = _resolve(treespec.CONSTANT_FUNCTION_TYPE)
    assert treespec.qualified_name(cls) == treespec.CONSTANT_FUNCTION_TYPE


def test_fallback_keys_act_as_torchs_dict_context():
    keys = treespec.FallbackKeys(["a", "b"], origin="node")
    assert keys == ["a", "b"]
    # torch's dict TreeSpec compares contexts with ==: a spec built on the fallback keys equals torch's own
    leaf = pytree.tree_flatten(0)[1]
    ours = pytree.TreeSpec(dict, keys, [leaf, leaf])
    assert ours == pytree.tree_flatten({"a": 1, "b": 2})[1]
    again = copy.deepcopy(keys)
    assert again == keys and again.origin == "node"


def test_standin_marker_is_read_without_attribute_hooks():
    class Meta(type):
        def __getattr__(cls, name):  # a hook that would answer for any name
            return "hooked"

    class Plain(metaclass=Meta):
        pass

    assert treespec.standin_type_name(Plain) is None
    Standin = type("Standin", (), {treespec.STANDIN_ATTR: "user.Point"})
    assert treespec.standin_type_name(Standin) == "user.Point"
    assert treespec.standin_type_name(Standin()) is None  # instances are not classes
