"""Structured `TreeSpec` tables -> torch pytree TreeSpecs, finding classes without importing anything.

A NAMEDTUPLE or CUSTOM type name is looked up in torch's pytree registry,
then among classes of modules that are already imported (sys.modules). When
neither knows it (say, the class lived in the producer's script), the node
gets a stand-in class (`_standins`): same name, same fields, same access, a
TreeSpec that prints and compares as torch's, and a re-save that writes the
file's node again. A FallbackWarning names the type. Only a node no stand-in
fits (a name that is not dot-separated identifiers, odd field names) becomes
a plain container (dict for named fields and keys, tuple otherwise).
"""

from __future__ import annotations

import collections
import sys

import torch
import torch.utils._pytree as pytree

from pt2format._generated.model import TreeSpec, TreeSpecKind
from pt2format._warn import warn_at_caller
from pt2format.errors import FallbackWarning, LoadError
from pt2format.vocab.treespec import CONSTANT_FUNCTIONS, FallbackKeys

from . import _standins
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


class ModuleClassRef:
    """Where torch's context for an nn.Module input holds a weak reference to the example module
    (`PrototypeModule`): it compares equal to torch's by class, as torch's does. There is no module
    behind it (calling it gives None, like a reference whose module is gone)."""

    def __init__(self, cls):
        self._proto_cls = cls

    def __call__(self):
        return None

    def __eq__(self, other):
        return getattr(other, "_proto_cls", None) is self._proto_cls

    def __hash__(self):
        return hash(self._proto_cls)

    def __repr__(self):
        return f"<nn.Module input of class {self._proto_cls.__module__}.{self._proto_cls.__qualname__}>"


def module_input_hooks(module: torch.nn.Module, module_types) -> None:
    """Register each nn.Module input class as a pytree node while `module` runs, as torch's unlifted module
    does with the classes of its example inputs (torch.export._unlift)."""
    if not module_types:
        return
    from torch._export.non_strict_utils import (
        _enter_enable_graph_inputs_of_type_nn_module,
        _exit_enable_graph_inputs_of_type_nn_module,
    )

    types = set(module_types)
    # first, so that every other pre-hook (torch's input checks) sees the classes registered
    module.register_forward_pre_hook(lambda *a, **k: _enter_enable_graph_inputs_of_type_nn_module(types),
                                     prepend=True)
    module.register_forward_hook(lambda *a, **k: _exit_enable_graph_inputs_of_type_nn_module(types),
                                 always_call=True)


class TreeSpecLoader:
    def __init__(self, program_name: str):
        self.program_name = program_name
        self.fallbacks: list[str] = []
        #: classes of nn.Module inputs met so far (the loaded program registers them while it runs)
        self.module_types: set[type] = set()

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
        if len(set(spec.field_names)) != len(spec.field_names):
            # A namedtuple, dataclass or stand-in cannot have a field twice (torch fails at the call).
            raise LoadError("a field name repeats", path=f"{path}.field_names", got=list(spec.field_names)[:16])
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
        if k == TreeSpecKind.MODULE:
            return self._module(spec, children, path)
        if k == TreeSpecKind.CONSTANT_FUNCTION:
            return self._constant_function(spec, children, path)
        raise LoadError("unknown tree spec kind", path=path, got=k)

    def _constant_function(self, spec, children, path):
        """torch's `_ConstantFunction` node: only a function torch itself puts there, found in torch's own
        (already imported) module, never by import."""
        name = spec.type_name or ""
        if name not in CONSTANT_FUNCTIONS or children:
            raise LoadError("a constant function must be one torch emits, with no children", path=f"{path}.type_name",
                            expected=list(CONSTANT_FUNCTIONS), got=name)
        import torch.export.custom_ops as torch_custom_ops  # torch's own module (CONSTANT_FUNCTIONS live there)
        from torch._higher_order_ops.flat_apply import _ConstantFunction

        func = getattr(torch_custom_ops, name.rpartition(".")[2])
        return pytree.tree_flatten(_ConstantFunction(func))[1]

    def _module(self, spec, children, path):
        """An nn.Module input: torch's node for the class, context [names, class marker] as torch compares it.

        The class must already be imported (nothing is imported by name); the loaded program registers it
        as a pytree node while it runs, as torch's `module()` does (`module_input_hooks`).
        """
        keys = self._keys(spec, len(children), path)
        if not all(type(k) is str for k in keys):
            raise LoadError("an nn.Module input's keys are parameter and buffer names", path=f"{path}.keys")
        name = spec.type_name or ""
        cls = find_class(name, f"{path}.type_name") if name else None
        if cls is None or not issubclass(cls, torch.nn.Module):
            return self._generic(spec, children, path, f"nn.Module class {name!r} is not imported in this process")
        self.module_types.add(cls)
        return pytree.TreeSpec(cls, [keys, ModuleClassRef(cls)], children)

    def _keys(self, spec, n, path):
        keys = [from_value(v, path=f"{path}.keys[{i}]", hashable=True) for i, v in enumerate(spec.keys)]
        if len(keys) != n:
            raise LoadError("a dict node needs one key per child", path=path, expected=n, got=len(keys))
        if len(set(keys)) != n:
            raise LoadError("a dict key repeats", path=f"{path}.keys", got=keys[:16])
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
        if cls is not None and not _standins.is_standin(cls) and pytree.is_namedtuple_class(cls) \
                and tuple(cls._fields) == fields and len(fields) == len(children):
            return pytree.TreeSpec(collections.namedtuple, cls, children)
        why = f"namedtuple class {name!r} is not available"
        # A stand-in only where no class has the name: never one that reads like an existing class.
        if (cls is None or _standins.is_standin(cls)) and len(fields) == len(children):
            standin = _standins.namedtuple_standin(name, fields)
            if standin is not None:
                self._warn(path, f"{why}; a stand-in namedtuple {name} with fields {list(fields)} is used")
                return pytree.TreeSpec(collections.namedtuple, standin, children)
        return self._generic(spec, children, path, why)

    def _custom(self, spec, children, path):
        name = spec.type_name or ""
        cls = find_class(name, f"{path}.type_name") if name else None
        if cls is None or cls not in pytree.SUPPORTED_NODES or cls in _NOT_CUSTOM or _standins.is_standin(cls):
            why = f"pytree class {name!r} is not registered in this process"
            made = self._custom_standin(spec, children, path) if cls is None or _standins.is_standin(cls) else None
            if made is not None:
                self._warn(path, f"{why}; a stand-in {name} ({made[0]._pt2f_flavor}) is used")
                return pytree.TreeSpec(made[0], made[1], children)
            return self._generic(spec, children, path, why)
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

    def _custom_standin(self, spec, children, path):
        """(stand-in class, context) for a CUSTOM node whose class is missing, or None when none fits.

        The flavor follows what the writer recorded (exporter/_treespec.py): keys
        equal to a list context -> dict-like (ModelOutput); field names with
        torch's dataclass context [non-None names, None names] -> dataclass;
        otherwise the children, named by the field names when there are some.
        Each choice is one the writer maps back to this very node, so a re-save
        gives the same bytes.
        """
        n, fields = len(children), list(spec.field_names)
        try:
            ctx = from_value(spec.context, path=f"{path}.context") if spec.context is not None else None
            keys = [from_value(v, path=f"{path}.keys[{i}]", hashable=True) for i, v in enumerate(spec.keys)]
        except LoadError:
            return None
        name = spec.type_name or ""
        if keys:
            if fields or len(keys) != n or type(ctx) is not list or ctx != keys \
                    or not all(type(k) in (str, int) for k in keys):
                return None
            cls = _standins.custom_standin(name, "mapping", keys_from_context=True)
        elif (type(ctx) is list and len(ctx) == 2 and all(type(c) is list for c in ctx)
              and all(type(f) is str for c in ctx for f in c) and len(ctx[0]) == n
              and len(set(ctx[0] + ctx[1])) == len(ctx[0]) + len(ctx[1])):
            if ctx[0] == fields:  # the non-None fields only (files before 1.1's declaration order)
                cls = _standins.custom_standin(name, "dataclass", fields + ctx[1])
            elif sorted(fields) == sorted(ctx[0] + ctx[1]) and [f for f in fields if f in set(ctx[0])] == ctx[0]:
                cls = _standins.custom_standin(name, "dataclass", fields, declared=True)  # declaration order
            else:
                return None
        elif not fields or len(fields) == n:
            cls = _standins.custom_standin(name, "node", fields)
        else:
            return None
        return None if cls is None else (cls, ctx)
