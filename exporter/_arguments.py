"""FX node arguments -> `ArgumentValue` union members: scalars, lists, node references, subgraphs, operators.

The argument half of `GraphExporter` (exporter/_graph.py), kept apart because
it is a table of Python/FX types to schema types that reads on its own. A
node reference names the value it uses, through the graph's getitem aliases;
a `get_attr` of a subgraph converts that subgraph where it is used.
"""

from __future__ import annotations

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.export import exported_program as ep_mod

from pt2format._generated.model import (
    Argument,
    ArgumentMapEntry,
    BoolArgument,
    BoolListArgument,
    ComplexArgument,
    CustomObjArgument,
    DeviceArgument,
    FloatArgument,
    FloatListArgument,
    FloatListListArgument,
    GraphArgument,
    IntArgument,
    IntListArgument,
    IntListListArgument,
    LayoutArgument,
    MemoryFormatArgument,
    MixedListArgument,
    NestedTensorListArgument,
    NoneArgument,
    OperatorArgument,
    OptionalTensorArgument,
    OptionalTensorListArgument,
    ScalarTypeArgument,
    StringArgument,
    StringListArgument,
    StringToArgumentMapArgument,
    SymBoolArgument,
    SymBoolListArgument,
    SymFloatArgument,
    SymFloatListArgument,
    SymIntArgument,
    SymIntListArgument,
    TensorArgument,
    TensorListArgument,
    TreeSpecArgument,
)
from pt2format.errors import ExportError
from pt2format.vocab.enums import DTYPE_TO_SCALAR_TYPE, LAYOUT_TO_SCHEMA, MEMORY_FORMAT_TO_SCHEMA, device_to_schema

from ._operators import is_core, operator_schema, target_name


def _is_custom_obj_val(v) -> bool:
    return isinstance(v, (ep_mod.CustomObjArgument, torch.ScriptObject)) or type(v).__name__ == "FakeScriptObject"


def _class_fqn(v) -> str:
    if isinstance(v, ep_mod.CustomObjArgument):
        return v.class_fqn
    if isinstance(v, torch.ScriptObject):
        return v._type().qualified_name()
    return v.script_class_name if hasattr(v, "script_class_name") else type(v).__name__


class ArgumentExporter:
    """Converts node arguments; mixed into `GraphExporter`, whose graph state (`st`), subgraph `export`,
    metadata converter, operator and custom-object tables it uses."""

    def argument(self, a, arg_type, path):
        """A Python/FX argument -> an ArgumentValue union member."""
        if isinstance(a, torch.fx.Node):
            return self._node_ref(a, path)
        t = type(a)
        if a is None:
            return NoneArgument()
        if t is bool:
            return BoolArgument(a)
        if t is int:
            return IntArgument(a)
        if t is float:
            return FloatArgument(a)
        if t is str:
            return StringArgument(a)
        if t is complex:
            return ComplexArgument(a.real, a.imag)
        if isinstance(a, torch.dtype):
            return ScalarTypeArgument(DTYPE_TO_SCALAR_TYPE[a])
        if isinstance(a, torch.device):
            return DeviceArgument(device_to_schema(a))
        if isinstance(a, torch.memory_format):
            return MemoryFormatArgument(MEMORY_FORMAT_TO_SCHEMA[a])
        if isinstance(a, torch.layout):
            return LayoutArgument(LAYOUT_TO_SCHEMA[a])
        if isinstance(a, (list, tuple)):
            return self._list(a, arg_type, path)
        if isinstance(a, dict):
            entries = []
            for k, v in a.items():
                if not isinstance(k, str):
                    raise ExportError("dict arguments need string keys", path=path, expected="str", got=type(k).__name__)
                entries.append(ArgumentMapEntry(key=k, value=Argument(self.argument(v, None, f"{path}[{k!r}]"))))
            return StringToArgumentMapArgument(entries=entries)
        if isinstance(a, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
            name, kind = target_name(a, path)
            if not is_core(a) and name not in self.operators:
                self.operators[name] = operator_schema(a, name, kind)
            return OperatorArgument(name=name)
        if _is_custom_obj_val(a):
            name = f"_custom_obj_{len(self.custom_objs)}"
            self.custom_objs[name] = a
            return CustomObjArgument(name=name, class_fqn=_class_fqn(a))
        raise ExportError("argument has no schema type", path=path, expected="a torch schema argument type",
                          got=f"{t.__module__}.{t.__qualname__}")

    def _node_ref(self, a: torch.fx.Node, path):
        if a.op == "get_attr":
            attr = getattr(self.st.gm, a.target, None) if isinstance(a.target, str) else None
            if isinstance(attr, torch.fx.GraphModule):
                return GraphArgument(name=a.target, graph=self.export(attr, f"{self.st.path}.{a.target}"),
                                     metadata=self.metadata.convert(a.meta, path),
                                     node_name=a.name if a.name != a.target else None)
            if _is_custom_obj_val(attr):
                return CustomObjArgument(name=a.target, class_fqn=_class_fqn(attr))
            if isinstance(attr, pytree.TreeSpec):  # a flat_apply node's input or function spec
                return TreeSpecArgument(name=a.target, spec=self.treespecs.convert(attr, f"{path}.spec"),
                                        metadata=self.metadata.convert(a.meta, path),
                                        node_name=a.name if a.name != a.target else None)
            raise ExportError("get_attr of something other than a subgraph", path=path, expected="GraphModule",
                              got=type(attr).__name__)
        name = self.st.alias.get(a.name, a.name)
        v = a.meta.get("val")
        if isinstance(v, torch.Tensor) or v is None:
            return TensorArgument(name=name)
        if isinstance(v, (torch.SymBool, bool)):
            return SymBoolArgument(name=name)
        if isinstance(v, (torch.SymInt, int)):
            return SymIntArgument(name=name)
        if isinstance(v, (torch.SymFloat, float)):
            return SymFloatArgument(name=name)
        if _is_custom_obj_val(v):
            return CustomObjArgument(name=name, class_fqn=_class_fqn(v))
        if isinstance(v, (list, tuple)):
            raise ExportError("a multi-output node is used directly; only its getitem values can be", path=path,
                              got=a.name)
        raise ExportError("node value has no schema type", path=path, got=type(v).__name__)

    def _sym_kind(self, a):
        """'int' / 'float' / 'bool' for symbolic nodes and Python scalars, else None."""
        if isinstance(a, torch.fx.Node):
            v = a.meta.get("val")
            if isinstance(v, (torch.SymBool, bool)):
                return "bool"
            if isinstance(v, (torch.SymInt, int)):
                return "int"
            if isinstance(v, (torch.SymFloat, float)):
                return "float"
            return None
        t = type(a)
        return {bool: "bool", int: "int", float: "float"}.get(t)

    def _list(self, a, arg_type, path):
        if len(a) == 0:
            return self._empty_list(arg_type)
        types = {type(x) for x in a}
        if types == {bool}:
            return BoolListArgument(list(a))
        if types == {int}:
            return IntListArgument(list(a))
        if types == {float}:
            return FloatListArgument(list(a))
        if types == {str}:
            return StringListArgument(list(a))
        if all(isinstance(x, torch.fx.Node) for x in a):
            kinds = {self._sym_kind(x) for x in a}
            if kinds == {None}:
                return TensorListArgument(names=[self._node_ref(x, path).name for x in a])
        kinds = {self._sym_kind(x) for x in a}
        if kinds == {"int"}:
            return SymIntListArgument(items=[
                SymIntArgument(name=self._node_ref(x, path).name) if isinstance(x, torch.fx.Node) else SymIntArgument(value=x)
                for x in a])
        if kinds == {"float"}:
            return SymFloatListArgument(items=[
                SymFloatArgument(name=self._node_ref(x, path).name) if isinstance(x, torch.fx.Node)
                else SymFloatArgument(value=x) for x in a])
        if kinds == {"bool"}:
            return SymBoolListArgument(items=[
                SymBoolArgument(name=self._node_ref(x, path).name) if isinstance(x, torch.fx.Node)
                else SymBoolArgument(value=x) for x in a])
        if all(x is None or (isinstance(x, torch.fx.Node) and self._sym_kind(x) is None) for x in a):
            return OptionalTensorListArgument(items=[
                OptionalTensorArgument(name=None if x is None else self._node_ref(x, path).name) for x in a])
        if all(isinstance(x, (list, tuple)) for x in a):
            if all(isinstance(y, torch.fx.Node) for x in a for y in x):
                return NestedTensorListArgument(lists=[
                    TensorListArgument(names=[self._node_ref(y, path).name for y in x]) for x in a])
            if all(type(y) is int for x in a for y in x):
                return IntListListArgument(lists=[IntListArgument(list(x)) for x in a])
            if all(type(y) is float for x in a for y in x):
                return FloatListListArgument(lists=[FloatListArgument(list(x)) for x in a])
        if not any(isinstance(x, (list, tuple)) for x in a):
            # No typed list fits (a while_loop's carried (0, x)): each element is a whole argument.
            return MixedListArgument(items=[Argument(self.argument(x, None, f"{path}[{i}]")) for i, x in enumerate(a)])
        raise ExportError("list argument mixes types the schema cannot express", path=path,
                          got=sorted(t.__name__ for t in types))

    @staticmethod
    def _empty_list(arg_type):
        t = arg_type
        if isinstance(t, torch.OptionalType):
            t = t.getElementType()
        if isinstance(t, torch.ListType):
            e = t.getElementType()
            if isinstance(e, torch.OptionalType):
                e = e.getElementType()
            if isinstance(e, torch.BoolType):
                return BoolListArgument()
            if isinstance(e, (torch.IntType, torch.SymIntType)):
                return IntListArgument()
            if isinstance(e, torch.FloatType):
                return FloatListArgument()
            if isinstance(e, torch.StringType):
                return StringListArgument()
        return TensorListArgument()

