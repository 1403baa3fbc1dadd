"""`GraphSignature` and `ModuleCallEntry` tables -> torch.export graph signature and module call graph."""

from __future__ import annotations

from torch.export import graph_signature as gs
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature

from pt2format._generated.model import (
    BufferMutationSpec,
    CustomObjArgument,
    GradientToParameterSpec,
    GradientToUserInputSpec,
    InputTokenSpec,
    InputToBufferSpec,
    InputToConstantInputSpec,
    InputToCustomObjSpec,
    InputToParameterSpec,
    InputToTensorConstantSpec,
    LossOutputSpec,
    OutputTokenSpec,
    ParameterMutationSpec,
    StringValue,
    SymBoolArgument,
    SymFloatArgument,
    SymIntArgument,
    TensorArgument,
    TokenArgument,
    TreeSpecKind,
    UserInputMutationSpec,
    UserInputSpec,
    UserOutputSpec,
)
from pt2format.errors import LoadError

from ._names import check_constant_string, check_fqn, check_identifier
from ._values import from_value


def _tensor_arg(a, path) -> gs.TensorArgument:
    if a is None or a.name is None:
        raise LoadError("spec needs a tensor argument", path=path)
    return gs.TensorArgument(name=a.name)


def argument_spec(arg, constant, path):
    """Argument -> ArgumentSpec. `constant(member, path)` turns other members into Python values."""
    v = arg.value if arg is not None else None
    t = type(v)
    if t is TensorArgument:
        return gs.TensorArgument(name=v.name)
    if t is SymIntArgument and v.name is not None:
        return gs.SymIntArgument(name=v.name)
    if t is SymFloatArgument and v.name is not None:
        return gs.SymFloatArgument(name=v.name)
    if t is SymBoolArgument and v.name is not None:
        return gs.SymBoolArgument(name=v.name)
    if t is CustomObjArgument:
        return gs.CustomObjArgument(name=v.name, class_fqn=v.class_fqn)
    if t is TokenArgument:
        return gs.TokenArgument(name=v.name)
    return gs.ConstantArgument(name="", value=constant(v, path))


def input_spec(s, constant, path) -> gs.InputSpec:
    K = gs.InputKind
    v = s.spec if s is not None else None
    t = type(v)
    if t is UserInputSpec:
        return gs.InputSpec(K.USER_INPUT, argument_spec(v.arg, constant, path), None)
    if t is InputToParameterSpec:
        return gs.InputSpec(K.PARAMETER, _tensor_arg(v.arg, path), check_fqn(v.parameter_name, f"{path}.parameter_name"))
    if t is InputToBufferSpec:
        return gs.InputSpec(K.BUFFER, _tensor_arg(v.arg, path), check_fqn(v.buffer_name, f"{path}.buffer_name"),
                            persistent=v.persistent)
    if t is InputToTensorConstantSpec:
        return gs.InputSpec(K.CONSTANT_TENSOR, _tensor_arg(v.arg, path),
                            check_fqn(v.tensor_constant_name, f"{path}.tensor_constant_name"),
                            persistent=v.persistent if v.has_persistent else None)
    if t is InputToCustomObjSpec:
        return gs.InputSpec(K.CUSTOM_OBJ, gs.CustomObjArgument(name=v.arg.name, class_fqn=v.arg.class_fqn),
                            check_fqn(v.custom_obj_name, f"{path}.custom_obj_name"))
    if t is InputTokenSpec:
        return gs.InputSpec(K.TOKEN, gs.TokenArgument(name=v.arg.name), None)
    if t is InputToConstantInputSpec:
        name = check_identifier(v.name, f"{path}.name")
        value = check_constant_string(from_value(v.value, path=path), f"{path}.value")
        return gs.InputSpec(K.USER_INPUT, gs.ConstantArgument(name=name, value=value), None)
    raise LoadError("unknown input spec", path=path, got=t.__name__)


def output_spec(s, constant, path) -> gs.OutputSpec:
    K = gs.OutputKind
    v = s.spec if s is not None else None
    t = type(v)
    if t is UserOutputSpec:
        return gs.OutputSpec(K.USER_OUTPUT, argument_spec(v.arg, constant, path), None)
    if t is LossOutputSpec:
        return gs.OutputSpec(K.LOSS_OUTPUT, _tensor_arg(v.arg, path), None)
    if t is BufferMutationSpec:
        return gs.OutputSpec(K.BUFFER_MUTATION, _tensor_arg(v.arg, path), check_fqn(v.buffer_name, path))
    if t is ParameterMutationSpec:
        return gs.OutputSpec(K.PARAMETER_MUTATION, _tensor_arg(v.arg, path), check_fqn(v.parameter_name, path))
    if t is GradientToParameterSpec:
        return gs.OutputSpec(K.GRADIENT_TO_PARAMETER, _tensor_arg(v.arg, path), check_fqn(v.parameter_name, path))
    if t is GradientToUserInputSpec:
        return gs.OutputSpec(K.GRADIENT_TO_USER_INPUT, _tensor_arg(v.arg, path), v.user_input_name)
    if t is UserInputMutationSpec:
        return gs.OutputSpec(K.USER_INPUT_MUTATION, _tensor_arg(v.arg, path), v.user_input_name)
    if t is OutputTokenSpec:
        return gs.OutputSpec(K.TOKEN, gs.TokenArgument(name=v.arg.name), None)
    raise LoadError("unknown output spec", path=path, got=t.__name__)


def signature(sig, constant, path="signature") -> gs.ExportGraphSignature:
    if sig is None:
        raise LoadError("missing graph signature", path=path)
    return gs.ExportGraphSignature(
        input_specs=[input_spec(s, constant, f"{path}.input_specs[{i}]") for i, s in enumerate(sig.input_specs)],
        output_specs=[output_spec(s, constant, f"{path}.output_specs[{i}]") for i, s in enumerate(sig.output_specs)],
    )


def module_call_graph(entries, constant, treespecs, path="module_call_graph") -> list[ModuleCallEntry]:
    out = []
    for i, e in enumerate(entries):
        p = f"{path}[{i}]"
        fqn = e.fqn or ""
        if fqn:
            check_fqn(fqn, f"{p}.fqn")
        sig = None
        if e.signature is not None:
            s = e.signature
            _check_kwarg_names(s.in_spec, f"{p}.in_spec")
            sig = ModuleCallSignature(
                inputs=[argument_spec(a, constant, f"{p}.inputs[{j}]") for j, a in enumerate(s.inputs)],
                outputs=[argument_spec(a, constant, f"{p}.outputs[{j}]") for j, a in enumerate(s.outputs)],
                in_spec=treespecs.load(s.in_spec, f"{p}.in_spec"),
                out_spec=treespecs.load(s.out_spec, f"{p}.out_spec"),
                # torch records the names for the root call only ([] for a forward without
                # arguments) and None for the other entries.
                forward_arg_names=[check_identifier(x, f"{p}.forward_arg_names[{j}]")
                                   for j, x in enumerate(s.forward_arg_names)] or (None if fqn else []),
            )
        out.append(ModuleCallEntry(fqn=fqn, signature=sig))
    return out


def _check_kwarg_names(spec, path):
    """FX pastes the keyword names of an (args, kwargs) in_spec into generated code: they must be identifiers."""
    if spec is None or spec.kind != TreeSpecKind.TUPLE or len(spec.children) != 2:
        return
    kw = spec.children[1]
    if kw is None or kw.kind != TreeSpecKind.DICT:
        return
    for i, k in enumerate(kw.keys):
        key = k.value.value if k is not None and isinstance(k.value, StringValue) else None
        check_identifier(key, f"{path}.children[1].keys[{i}]")
