"""pytree TreeSpecs -> structured `TreeSpec` tables (kind, type name, field names, keys, context).

Type names are recorded, never pickled: a loader finds the class again in the
pytree registry, or falls back to a plain container when it cannot.
"""

from __future__ import annotations

import collections
import dataclasses

import torch
import torch.utils._pytree as pytree

from pt2format._generated.model import TreeSpec, TreeSpecKind
from pt2format._strings import is_identifier
from pt2format.errors import ExportError

from pt2format.vocab.enums import ints as _ints
from pt2format.vocab.treespec import (
    CONSTANT_FUNCTION_TYPE,
    CONSTANT_FUNCTIONS,
    FallbackKeys,
    qualified_name,
    standin_type_name,
)

from ._values import to_value

TreeSpecKind = _ints(TreeSpecKind)


def serialized_type_name(cls) -> str:
    """The name torch's pytree registry knows `cls` by, else module.qualname."""
    standin = standin_type_name(cls)
    if standin is not None:
        return standin
    entry = pytree.SUPPORTED_SERIALIZED_TYPES.get(cls)
    if entry is not None and entry.serialized_type_name != pytree.NO_SERIALIZED_TYPE_NAME_FOUND:
        return entry.serialized_type_name
    return qualified_name(cls)


def constant_function_name(ctx, path: str) -> str:
    """The qualified name of the function in a `_ConstantFunction` node's context (a pytree ConstantNode)."""
    func = getattr(getattr(ctx, "value", None), "func", None)
    name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"
    if name not in CONSTANT_FUNCTIONS:
        raise ExportError("flat_apply calls a function pt2format cannot name safely", path=f"{path}.context",
                          expected=f"one of {list(CONSTANT_FUNCTIONS)}", got=name)
    return name


class TreeSpecExporter:
    """Converts tree specs and remembers the namedtuple classes they use (Program.namedtuple_defs)."""

    def __init__(self):
        self.namedtuples: dict[str, tuple[str, ...]] = {}

    def convert(self, spec: pytree.TreeSpec, path: str = "spec") -> TreeSpec:
        if spec.is_leaf():
            return TreeSpec(kind=TreeSpecKind.LEAF)
        typ, ctx = spec.type, spec.context
        children = [self.convert(c, f"{path}.children[{i}]") for i, c in enumerate(spec.children())]
        out = TreeSpec(children=children)
        if typ is type(None):
            out.kind = TreeSpecKind.NONE
        elif typ is tuple:
            out.kind = TreeSpecKind.TUPLE
        elif typ is list:
            out.kind = TreeSpecKind.LIST
        elif typ is dict and isinstance(ctx, FallbackKeys) and len(ctx) == len(children):
            self._restore(out, ctx.origin, path)
        elif typ is dict:
            out.kind = TreeSpecKind.DICT
            out.keys = self._keys(ctx, path)
        elif typ is collections.OrderedDict:
            out.kind = TreeSpecKind.ORDERED_DICT
            out.keys = self._keys(ctx, path)
        elif typ is collections.defaultdict:
            factory, keys = ctx
            out.kind = TreeSpecKind.DEFAULT_DICT
            out.type_name = qualified_name(factory) if factory is not None else None
            out.keys = self._keys(keys, path)
        elif typ is collections.namedtuple:
            out.kind = TreeSpecKind.NAMEDTUPLE
            out.type_name = serialized_type_name(ctx)
            out.field_names = list(ctx._fields)
            self._remember_namedtuple(out.type_name, tuple(ctx._fields), path)
        elif typ is collections.deque:
            out.kind = TreeSpecKind.DEQUE
            out.context = to_value(ctx, path=f"{path}.context")
        elif qualified_name(typ) == CONSTANT_FUNCTION_TYPE:
            out.kind = TreeSpecKind.CONSTANT_FUNCTION
            out.type_name = constant_function_name(ctx, path)
        elif isinstance(typ, type) and issubclass(typ, torch.nn.Module):
            # An nn.Module input: torch's context is [parameter and buffer names, a weak reference to the
            # example module]; the names are the node's keys, the reference is never stored.
            out.kind = TreeSpecKind.MODULE
            out.type_name = qualified_name(typ)
            out.keys = self._keys(list(ctx[0]), path)
        elif standin_type_name(typ) is not None:
            self._standin(out, typ, ctx, path)
        else:
            self._custom(out, typ, ctx, path, spec)
        return out

    def _standin(self, out: TreeSpec, typ, ctx, path):
        """A loader's stand-in for a missing class -> the node the file had: the loader chose the stand-in's
        flavor from that node, and each flavor maps back to it (keys = the context for dict-like ones;
        field names = for dataclass ones every field in declaration order, or the non-None ones, as the
        file had them; else the class's field names)."""
        out.kind = TreeSpecKind.CUSTOM
        out.type_name = standin_type_name(typ)
        out.context = to_value(ctx, path=f"{path}.context")
        flavor = vars(typ).get("_pt2f_flavor")
        if flavor == "mapping":
            out.keys = self._keys(ctx, path)
        elif flavor == "dataclass":
            # the file listed every field in declaration order, or (files before that) the non-None ones
            out.field_names = list(typ._pt2f_fields) if vars(typ).get("_pt2f_declared") else list(ctx[0])
        else:
            out.field_names = list(typ._pt2f_fields)

    def _restore(self, out: TreeSpec, origin: TreeSpec, path):
        """A loader's stand-in dict -> the node the file had (children are converted as they are now)."""
        out.kind, out.type_name, out.context = origin.kind, origin.type_name, origin.context
        out.field_names, out.keys = list(origin.field_names), list(origin.keys)
        if out.kind == TreeSpecKind.NAMEDTUPLE:
            self._remember_namedtuple(out.type_name, tuple(out.field_names), path)

    def _keys(self, keys, path):
        return [to_value(k, path=f"{path}.keys[{i}]") for i, k in enumerate(keys)]

    def _remember_namedtuple(self, name, fields, path):
        prev = self.namedtuples.setdefault(name, fields)
        if prev != fields:
            raise ExportError(f"namedtuple {name} appears with two different field lists", path=path,
                              expected=list(prev), got=list(fields))

    def _custom(self, out: TreeSpec, typ, ctx, path, spec=None):
        if typ not in pytree.SUPPORTED_NODES:
            raise ExportError("tree spec node type is not registered with pytree", path=path,
                              expected="a registered pytree node", got=qualified_name(typ))
        out.kind = TreeSpecKind.CUSTOM
        out.type_name = serialized_type_name(typ)
        entry = pytree.SUPPORTED_SERIALIZED_TYPES.get(typ)
        dumpable = ctx
        if entry is not None and entry.to_dumpable_context is not None:
            dumpable = entry.to_dumpable_context(ctx)
        try:
            out.context = to_value(dumpable, path=f"{path}.context")
        except ExportError as e:
            raise ExportError(f"context of pytree node {out.type_name} has no structured form: {e.detail}",
                              path=path, expected=e.expected, got=e.got) from e
        # Names for the generic fallback container a loader builds when the class is missing.
        n = len(out.children)
        if dataclasses.is_dataclass(typ) and isinstance(ctx, (list, tuple)) and len(ctx) == 2 \
                and isinstance(ctx[0], (list, tuple)) and len(ctx[0]) == n and all(isinstance(x, str) for x in ctx[0]):
            # register_dataclass: [flat field names, None field names]. The field names are every field in
            # declaration order, so that a loader's stand-in lists them as `dataclasses.fields` does.
            out.field_names = _declared_order(typ, ctx)
        elif isinstance(ctx, (list, tuple)) and len(ctx) == n and all(isinstance(k, (str, int)) for k in ctx):
            out.keys = self._keys(ctx, path)  # dict-like nodes (e.g. model output classes)
        elif hasattr(typ, "_fields") and len(typ._fields) == n:
            out.field_names = list(typ._fields)
        elif spec is not None:
            out.field_names = _attribute_names(typ, spec)


def _declared_order(typ, ctx) -> list[str]:
    """The fields in `ctx` ([flat names, None names]) in the class's declaration order; the flat names
    alone when the context names anything the class does not declare."""
    named = list(ctx[0]) + list(ctx[1] or [])
    declared = [f.name for f in dataclasses.fields(typ)]
    if not all(isinstance(x, str) for x in named) or len(set(named)) != len(named) or not set(named) <= set(declared):
        return list(ctx[0])
    return [f for f in declared if f in set(named)]


def _attribute_names(typ, spec: pytree.TreeSpec) -> list[str]:
    """The attribute names of a registered class's children, when its flatten-with-keys gives one
    `GetAttrKey` per child (what a loader's stand-in offers as `obj.<field>`); else [].

    The class's own unflatten and flatten-with-keys run on placeholder leaves: export time, the
    producer's code. A class that refuses placeholders simply gets no names.
    """
    entry = pytree.SUPPORTED_NODES.get(typ)
    if entry is None or entry.flatten_with_keys_fn is None:
        return []
    n = spec.num_children
    try:
        obj = entry.unflatten_fn([None] * n, spec.context)
        pairs, _ = entry.flatten_with_keys_fn(obj)
    except Exception:  # noqa: BLE001 - names are optional
        return []
    names = [k.name for k, _ in pairs if isinstance(k, pytree.GetAttrKey)]
    if len(names) != n or len(pairs) != n or len(set(names)) != n:
        return []
    if not all(is_identifier(x) for x in names):
        return []
    return names
