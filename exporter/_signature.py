"""ExportGraphSignature and the module call graph -> `GraphSignature` and `ModuleCallEntry` tables."""

from __future__ import annotations

from torch.export import graph_signature as gs

from pt2format._generated.model import (
    Argument,
    BufferMutationSpec,
    CustomObjArgument,
    GradientToParameterSpec,
    GradientToUserInputSpec,
    GraphSignature,
    InputSpec,
    InputTokenSpec,
    InputToBufferSpec,
    InputToConstantInputSpec,
    InputToCustomObjSpec,
    InputToParameterSpec,
    InputToTensorConstantSpec,
    LossOutputSpec,
    ModuleCallEntry,
    ModuleCallSignature,
    OutputSpec,
    OutputTokenSpec,
    ParameterMutationSpec,
    SymBoolArgument,
    SymFloatArgument,
    SymIntArgument,
    TensorArgument,
    TokenArgument,
    UserInputMutationSpec,
    UserInputSpec,
    UserOutputSpec,
)
from pt2format.errors import ExportError

from ._values import to_value


def argument_spec(x, graphs, path) -> Argument:
    """An ArgumentSpec (TensorArgument, SymIntArgument, ConstantArgument, ...) -> Argument."""
    if isinstance(x, gs.TensorArgument):
        return Argument(TensorArgument(name=x.name))
    if isinstance(x, gs.SymIntArgument):
        return Argument(SymIntArgument(name=x.name))
    if isinstance(x, gs.SymFloatArgument):
        return Argument(SymFloatArgument(name=x.name))
    if isinstance(x, gs.SymBoolArgument):
        return Argument(SymBoolArgument(name=x.name))
    if isinstance(x, gs.CustomObjArgument):
        return Argument(CustomObjArgument(name=x.name, class_fqn=x.class_fqn))
    if isinstance(x, gs.TokenArgument):
        return Argument(TokenArgument(name=x.name))
    if isinstance(x, gs.ConstantArgument):
        return Argument(graphs.argument(x.value, None, path))
    raise ExportError("argument spec has no schema type", path=path, got=type(x).__name__)


def _tensor(spec, path) -> TensorArgument:
    if not isinstance(spec.arg, gs.TensorArgument):
        raise ExportError("spec argument must be a tensor", path=path, expected="TensorArgument",
                          got=type(spec.arg).__name__)
    return TensorArgument(name=spec.arg.name)


def _input_spec(s: gs.InputSpec, graphs, path) -> InputSpec:
    K = gs.InputKind
    if s.kind == K.USER_INPUT:
        if isinstance(s.arg, gs.ConstantArgument):
            return InputSpec(InputToConstantInputSpec(name=s.arg.name, value=to_value(s.arg.value, path=path)))
        return InputSpec(UserInputSpec(arg=argument_spec(s.arg, graphs, path)))
    if s.kind == K.PARAMETER:
        return InputSpec(InputToParameterSpec(arg=_tensor(s, path), parameter_name=s.target))
    if s.kind == K.BUFFER:
        return InputSpec(InputToBufferSpec(arg=_tensor(s, path), buffer_name=s.target, persistent=bool(s.persistent)))
    if s.kind == K.CONSTANT_TENSOR:
        return InputSpec(InputToTensorConstantSpec(arg=_tensor(s, path), tensor_constant_name=s.target,
                                                   persistent=bool(s.persistent), has_persistent=s.persistent is not None))
    if s.kind == K.CUSTOM_OBJ:
        return InputSpec(InputToCustomObjSpec(arg=CustomObjArgument(name=s.arg.name, class_fqn=s.arg.class_fqn),
                                              custom_obj_name=s.target))
    if s.kind == K.TOKEN:
        return InputSpec(InputTokenSpec(arg=TokenArgument(name=s.arg.name)))
    raise ExportError("unknown input kind", path=path, got=str(s.kind))


def _output_spec(s: gs.OutputSpec, graphs, path) -> OutputSpec:
    K = gs.OutputKind
    if s.kind == K.USER_OUTPUT:
        return OutputSpec(UserOutputSpec(arg=argument_spec(s.arg, graphs, path)))
    if s.kind == K.LOSS_OUTPUT:
        return OutputSpec(LossOutputSpec(arg=_tensor(s, path)))
    if s.kind == K.BUFFER_MUTATION:
        return OutputSpec(BufferMutationSpec(arg=_tensor(s, path), buffer_name=s.target))
    if s.kind == K.PARAMETER_MUTATION:
        return OutputSpec(ParameterMutationSpec(arg=_tensor(s, path), parameter_name=s.target))
    if s.kind == K.GRADIENT_TO_PARAMETER:
        return OutputSpec(GradientToParameterSpec(arg=_tensor(s, path), parameter_name=s.target))
    if s.kind == K.GRADIENT_TO_USER_INPUT:
        return OutputSpec(GradientToUserInputSpec(arg=_tensor(s, path), user_input_name=s.target))
    if s.kind == K.USER_INPUT_MUTATION:
        return OutputSpec(UserInputMutationSpec(arg=_tensor(s, path), user_input_name=s.target))
    if s.kind == K.TOKEN:
        return OutputSpec(OutputTokenSpec(arg=TokenArgument(name=s.arg.name)))
    raise ExportError("unknown output kind", path=path, got=str(s.kind))


def signature(sig: gs.ExportGraphSignature, graphs) -> GraphSignature:
    return GraphSignature(
        input_specs=[_input_spec(s, graphs, f"signature.input_specs[{i}]") for i, s in enumerate(sig.input_specs)],
        output_specs=[_output_spec(s, graphs, f"signature.output_specs[{i}]") for i, s in enumerate(sig.output_specs)],
    )


def module_call_graph(entries, graphs, treespecs) -> list[ModuleCallEntry]:
    out = []
    for i, e in enumerate(entries):
        path = f"module_call_graph[{i}]"
        sig = None
        if e.signature is not None:
            s = e.signature
            sig = ModuleCallSignature(
                inputs=[argument_spec(x, graphs, f"{path}.inputs[{j}]") for j, x in enumerate(s.inputs)],
                outputs=[argument_spec(x, graphs, f"{path}.outputs[{j}]") for j, x in enumerate(s.outputs)],
                in_spec=treespecs.convert(s.in_spec, f"{path}.in_spec"),
                out_spec=treespecs.convert(s.out_spec, f"{path}.out_spec"),
                forward_arg_names=list(s.forward_arg_names or []),
            )
        out.append(ModuleCallEntry(fqn=e.fqn, signature=sig))
    return out
