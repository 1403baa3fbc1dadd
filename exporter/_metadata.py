"""FX node.meta -> structured `NodeMetadata` (stack trace, module stack, provenance, unbacked bindings).

Every list torch packs into delimited strings gets a table here. Graph ids in
provenance (`from_node`) are Python object ids; they are renumbered in order
of first appearance so the same program always gives the same bytes.
"""

from __future__ import annotations

import sympy
import torch
import torch.utils._pytree as pytree
from torch.fx.experimental.symbolic_shapes import CallMethodKey, ConvertIntKey, DivideByKey, InnerTensorKey
from torch.fx.passes.shape_prop import TensorMetadata

from pt2format._generated.model import (
    KeyPathEntry,
    ModuleStackEntry,
    NodeMetadata,
    NodeSource,
    SourceFnEntry,
    StringEntry,
    TorchFn,
    UnbackedBinding,
)
from pt2format.errors import ExportError

from pt2format.vocab.metadata import derived_tensor_meta, static_tensor_meta, symbolic_key
from pt2format.vocab.operators import callable_name

from ._tensor_facts import TensorFacts, only_ints
from ._values import map_value

# Keys with a structured home, or derived from the graph (val, tensor_meta), or not data.
_HANDLED = frozenset({
    "stack_trace", "nn_module_stack", "source_fn_stack", "torch_fn", "custom", "from_node",
    "unbacked_bindings", "val", "tensor_meta", "example_value", "seq_nr", "original_aten", "desc",
})
#: The handled keys `convert` looks for only when one of them is present.
_RARE = frozenset({"source_fn_stack", "custom", "from_node", "unbacked_bindings", "seq_nr", "original_aten", "desc"})
_DESC_MAX_DEPTH = 16


def _same_tensor_meta(meta: dict, facts: TensorFacts) -> bool:
    """Whether meta["tensor_meta"] is exactly what a loader derives from meta["val"] and its requires_grad."""
    val, tm = meta.get("val"), meta.get("tensor_meta")
    if tm is None or not isinstance(val, torch.Tensor):
        return False
    try:
        if type(tm) is not TensorMetadata or type(tm.requires_grad) is not bool:
            return False
        f = facts(val)
        key = None
        if f is not None and not f[6]:  # strided, integer sizes and strides, not quantized
            derived, static = static_tensor_meta(f[0], f[1], f[2], tm.requires_grad), True
        else:
            key = symbolic_key(val, tm.requires_grad)
            known = facts.derived.get(key) if key is not None else None
            if known is not None:  # the value's SymNodes (held by known[0]) are those of a value derived before
                return repr(tm) == known[1]
            derived, static = derived_tensor_meta(val, tm.requires_grad)
        if static and only_ints(map(type, tm.shape)) and only_ints(map(type, tm.stride)):
            return tm == derived
        # repr compares symbolic sizes by expression (== on two SymInts would guard)
        text = repr(derived)
        if key is not None:
            facts.derived[key] = (val, text)
        return repr(tm) == text
    except Exception:  # noqa: BLE001 - a value torch cannot describe: not derivable, so not kept
        return False


#: The stored form of an output node's desc, a list of descriptors: {"type": DESC_LIST, "items": [...]}.
DESC_LIST = "list"


def describe_desc(d, path: str, depth: int = 0) -> dict:
    """An AOT descriptor (torch._functorch._aot_autograd.descriptors) -> a plain dict with its class as "type"."""
    import dataclasses

    from torch._functorch._aot_autograd import descriptors

    if depth > _DESC_MAX_DEPTH or not dataclasses.is_dataclass(d) \
            or not isinstance(d, (descriptors.AOTInput, descriptors.AOTOutput)) \
            or getattr(descriptors, type(d).__name__, None) is not type(d):
        raise ExportError("placeholder desc is not one of torch's AOT descriptors", path=path,
                          got=type(d).__qualname__)
    out = {"type": type(d).__name__}
    for f in dataclasses.fields(d):
        v = getattr(d, f.name)
        if type(v) in (int, str, bool) or v is None:
            out[f.name] = v
        else:
            out[f.name] = describe_desc(v, f"{path}.{f.name}", depth + 1)
    return out


class MetadataExporter:
    """Converts node metadata for one program (keeps the graph-id numbering)."""

    def __init__(self, symbols):
        self.symbols = symbols  # SymbolTable
        self.tensor_facts = TensorFacts()  # shared with the GraphExporter that uses this converter
        self._graph_ids: dict[int, int] = {}
        self._module_stacks: dict[tuple, list[ModuleStackEntry]] = {}  # nn_module_stack items -> entries
        self._stack_entries: dict[tuple, ModuleStackEntry] = {}  # (key, path, type_name) -> the one entry

    def convert(self, meta: dict, path: str, *, unpacked_tensor_meta: bool = False) -> NodeMetadata | None:
        """`unpacked_tensor_meta`: a multi-output node whose getitem nodes carry tensor_meta."""
        out = NodeMetadata()
        any_set = False
        st = meta.get("stack_trace")
        if st:
            out.stack_trace = str(st)
            any_set = True
        nms = meta.get("nn_module_stack")
        if nms:
            out.nn_module_stack = self._module_stack(nms)
            any_set = True
        # The keys most nodes lack are looked for only when one of them is there: a large graph's nodes
        # carry four or five keys, and eleven lookups a node were a tenth of the exporter.
        if not _RARE.isdisjoint(meta) and self._rare_keys(out, meta, path):
            any_set = True
        tfn = meta.get("torch_fn")
        if tfn:
            out.torch_fn = TorchFn(name=str(tfn[0]), target=str(tfn[1]))
            any_set = True
        if _same_tensor_meta(meta, self.tensor_facts) or (isinstance(meta.get("val"), (tuple, list)) and unpacked_tensor_meta):
            out.tensor_meta = True
            tm = meta.get("tensor_meta")
            out.tensor_meta_requires_grad = bool(getattr(tm, "requires_grad", False)) and type(tm) is not tuple
            any_set = True
        if not meta.keys() <= _HANDLED:  # (a set comparison: most nodes have no other key)
            extra = sorted((k, v) for k, v in meta.items() if k not in _HANDLED and isinstance(k, str) and type(v) is str)
            if extra:
                out.extra = [StringEntry(key=k, value=v) for k, v in extra]
                any_set = True
        return out if any_set else None

    def _rare_keys(self, out: NodeMetadata, meta: dict, path: str) -> bool:
        """The `_RARE` keys of `meta` into `out`; whether any was set."""
        any_set = False
        sfs = meta.get("source_fn_stack")
        if sfs:
            out.source_fn_stack = [SourceFnEntry(name=str(n), target=callable_name(t)) for n, t in sfs]
            any_set = True
        custom = meta.get("custom")
        if custom is not None:  # an empty dict is kept: torch distinguishes {} from absent
            out.custom = map_value(dict(custom), path=f"{path}.custom")
            any_set = True
        fn = meta.get("from_node")
        if fn:
            out.from_node = [self._source(s) for s in fn]
            any_set = True
        ub = meta.get("unbacked_bindings")
        if ub:
            out.unbacked_bindings = [self._binding(s, p, path) for s, p in ub.items()]
            any_set = True
        seq_nr = meta.get("seq_nr")
        if type(seq_nr) is int:
            out.seq_nr, out.has_seq_nr = seq_nr, True
            any_set = True
        oa = meta.get("original_aten")
        if isinstance(oa, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
            out.original_aten = callable_name(oa)
            any_set = True
        desc = meta.get("desc")
        if desc is not None:
            if isinstance(desc, (list, tuple)):  # an output node: one descriptor per output
                described = {"type": DESC_LIST, "items": [describe_desc(x, f"{path}.desc[{i}]")
                                                          for i, x in enumerate(desc)]}
            else:
                described = describe_desc(desc, f"{path}.desc")
            out.desc = map_value(described, path=f"{path}.desc")
            any_set = True
        return any_set

    def _module_stack(self, nms: dict) -> list[ModuleStackEntry]:
        """The entries of a module stack; one shared list per distinct stack (the nodes of one module all
        have the same; the tree is only written, never changed in place, so sharing gives the same bytes)."""
        try:
            key = tuple(nms.items())
            entries = self._module_stacks.get(key)
        except TypeError:  # an unhashable entry: converted each time
            key = entries = None
        if entries is None:
            entries = [self._module_stack_entry(str(k), str(v[0]),
                                                v[1] if isinstance(v[1], str) else callable_name(v[1]))
                       for k, v in nms.items()]
            if key is not None:
                self._module_stacks[key] = entries
        return entries

    def _module_stack_entry(self, key: str, path: str, type_name) -> ModuleStackEntry:
        """One object per distinct entry, also among stacks (a submodule's stack repeats its parents' entries)."""
        k = (key, path, type_name)
        e = self._stack_entries.get(k)
        if e is None:
            e = self._stack_entries[k] = ModuleStackEntry(key=key, path=path, type_name=type_name)
        return e

    def _source(self, s) -> NodeSource:
        gid = s.graph_id
        if gid != -1:
            gid = self._graph_ids.setdefault(gid, len(self._graph_ids))
        return NodeSource(
            name=s.name,
            target=s.target,
            graph_id=gid,
            pass_name=s.pass_name,
            actions=[a.name.lower() for a in s.action],
            from_node=[self._source(x) for x in s.from_node],
        )

    def _binding(self, sym, keypath, path) -> UnbackedBinding:
        if not isinstance(sym, sympy.Symbol):
            raise ExportError("unbacked binding key is not a symbol", path=f"{path}.unbacked_bindings",
                              expected="sympy.Symbol", got=type(sym).__name__)
        entries = []
        for k in keypath:
            if isinstance(k, CallMethodKey) and k.name in ("size", "stride", "storage_offset"):
                entries.append(KeyPathEntry(kind=k.name))
            elif isinstance(k, pytree.SequenceKey):
                entries.append(KeyPathEntry(kind="index", index=int(k.idx)))
            elif isinstance(k, pytree.MappingKey) and isinstance(k.key, str):
                entries.append(KeyPathEntry(kind="key", name=k.key))
            elif isinstance(k, InnerTensorKey):
                entries.append(KeyPathEntry(kind="attr", name=k.inner_name))
            elif isinstance(k, ConvertIntKey):
                entries.append(KeyPathEntry(kind="item"))
            elif isinstance(k, DivideByKey) and isinstance(k.divisor, int):
                entries.append(KeyPathEntry(kind="divide_by", index=int(k.divisor)))
            else:
                raise ExportError("unbacked binding path step has no structured form", path=f"{path}.unbacked_bindings",
                                  expected="size/stride/storage_offset/index/key/attr/item/divide_by",
                                  got=repr(k))
        return UnbackedBinding(symbol=self.symbols.symbol(sym), path=entries)
