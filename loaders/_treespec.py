"""Structured `TreeSpec` tables -> torch pytree TreeSpecs, finding classes without importing anything.

A NAMEDTUPLE or CUSTOM type name is looked up in torch's pytree registry,
then among classes of modules that are already imported (sys.modules). When
neither knows it (say, the class lived in the producer's script), the node
becomes a plain container (dict for named fields and keys, tuple otherwise)
and a warning says so: the program still loads, outputs keep their values.
"""

from __future__ import annotations

import collections
import sys

import torch.utils._pytree as pytree

from pt2format._generated.model import TreeSpec, TreeSpecKind
from pt2format._warn import warn_at_caller
from pt2format.errors import FallbackWarning, LoadError
from pt2format.exporter._treespec import FallbackKeys

from ._names import check_dotted_identifiers
from ._values import from_value

_DEFAULT_FACTORIES = {"builtins.list": list, "builtins.dict": dict, "builtins.set": set, "builtins.int": int,
                      "builtins.float": float, "builtins.str": str, "builtins.tuple": tuple}
# Types with their own kind: as CUSTOM they would reach torch's context loaders (which import by name).
_NOT_CUSTOM = {tuple, list, dict, collections.OrderedDict, collections.defaultdict, collections.deque,
               collections.namedtuple, type(None)}




def find_class(type_name: str, path: str):
    """A class by qualified name from the pytree registry or already-imported modules, or None."""
    cls = pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE.get(type_name)
    if cls is not None:
        return cls
    try:
        parts = check_dotted_identifiers(type_name, path)
    except LoadError:
        return None  # e.g. 'f.<locals>.Point': not reachable by name, so not loadable
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        obj = module
        for attr in parts[cut:]:
            if attr.startswith("__"):
                return None
            d = getattr(obj, "__dict__", None)  # plain dict lookups: no __getattr__ hooks run
            if d is None or attr not in d:
                return None
            obj = d[attr]
        return obj if isinstance(obj, type) else None
    return None


def _origin(spec) -> TreeSpec:
    """The file's node without its children: what a re-save writes back for a stand-in dict."""
    return TreeSpec(kind=spec.kind, type_name=spec.type_name, field_names=list(spec.field_names),
                    keys=list(spec.keys), context=spec.context)


class TreeSpecLoader:
    def __init__(self, program_name: str):
        self.program_name = program_name
        self.fallbacks: list[str] = []

    def load(self, spec, path: str = "spec") -> pytree.TreeSpec:
        if spec is None:
            raise LoadError("missing tree spec", path=path)
        k = spec.kind
        if k == TreeSpecKind.LEAF:
            if spec.children:
                raise LoadError("a leaf has no children", path=path)
            return pytree.treespec_leaf()
        children = [self.load(c, f"{path}.children[{i}]") for i, c in enumerate(spec.children)]
        n = len(children)
        if k == TreeSpecKind.NONE:
            return pytree.TreeSpec(type(None), None, children)
        if k == TreeSpecKind.TUPLE:
            return pytree.TreeSpec(tuple, None, children)
        if k == TreeSpecKind.LIST:
            return pytree.TreeSpec(list, None, children)
        if k in (TreeSpecKind.DICT, TreeSpecKind.ORDERED_DICT, TreeSpecKind.DEFAULT_DICT):
            keys = self._keys(spec, n, path)
            if k == TreeSpecKind.DICT:
                return pytree.TreeSpec(dict, keys, children)
            if k == TreeSpecKind.ORDERED_DICT:
                return pytree.TreeSpec(collections.OrderedDict, keys, children)
            factory = _DEFAULT_FACTORIES.get(spec.type_name) if spec.type_name else None
            if spec.type_name and factory is None:
                self._warn(path, f"default factory {spec.type_name!r} is not allow-listed; a dict stands in")
                return pytree.TreeSpec(dict, FallbackKeys(keys, _origin(spec)), children)
            return pytree.TreeSpec(collections.defaultdict, [factory, keys], children)
        if k == TreeSpecKind.DEQUE:
            maxlen = from_value(spec.context, path=f"{path}.context") if spec.context is not None else None
            if maxlen is not None and not isinstance(maxlen, int):
                raise LoadError("deque maxlen must be an int or null", path=path, got=type(maxlen).__name__)
            return pytree.TreeSpec(collections.deque, maxlen, children)
        if k == TreeSpecKind.NAMEDTUPLE:
            return self._namedtuple(spec, children, path)
        if k == TreeSpecKind.CUSTOM:
            return self._custom(spec, children, path)
        raise LoadError("unknown tree spec kind", path=path, got=k)

    def _keys(self, spec, n, path):
        keys = [from_value(v, path=f"{path}.keys[{i}]", hashable=True) for i, v in enumerate(spec.keys)]
        if len(keys) != n:
            raise LoadError("a dict node needs one key per child", path=path, expected=n, got=len(keys))
        return keys

    def _warn(self, path, msg):
        self.fallbacks.append(msg)
        warn_at_caller(f"pt2format: program {self.program_name!r}, {path}: {msg}", FallbackWarning)

    def _generic(self, spec, children, path, why):
        n = len(children)
        names = list(spec.field_names) if len(spec.field_names) == n else None
        if names is None and len(spec.keys) == n:
            names = [from_value(v, path=f"{path}.keys[{i}]", hashable=True) for i, v in enumerate(spec.keys)]
        self._warn(path, f"{why}; it loads as a {'dict' if names is not None else 'tuple'}")
        if names is not None:
            return pytree.TreeSpec(dict, FallbackKeys(names, _origin(spec)), children)
        return pytree.TreeSpec(tuple, None, children)

    def _namedtuple(self, spec, children, path):
        name = spec.type_name or ""
        cls = find_class(name, f"{path}.type_name") if name else None
        fields = tuple(spec.field_names)
        if cls is not None and pytree.is_namedtuple_class(cls) and tuple(cls._fields) == fields \
                and len(fields) == len(children):
            return pytree.TreeSpec(collections.namedtuple, cls, children)
        return self._generic(spec, children, path, f"namedtuple class {name!r} is not available")

    def _custom(self, spec, children, path):
        name = spec.type_name or ""
        cls = find_class(name, f"{path}.type_name") if name else None
        if cls is None or cls not in pytree.SUPPORTED_NODES or cls in _NOT_CUSTOM:
            return self._generic(spec, children, path, f"pytree class {name!r} is not registered in this process")
        ctx = from_value(spec.context, path=f"{path}.context") if spec.context is not None else None
        entry = pytree.SUPPORTED_SERIALIZED_TYPES.get(cls)
        if entry is not None and entry.from_dumpable_context is not None:
            try:
                ctx = entry.from_dumpable_context(ctx)
            except Exception as e:  # the class's own loader refused the context
                raise LoadError(f"pytree class {name!r} rejected its saved context: {e}", path=path) from None
        # Otherwise the context is used as saved: like torch (whose loader passes the JSON
        # value on), and lists and tuples stay what they were.
        return pytree.TreeSpec(cls, ctx, children)
