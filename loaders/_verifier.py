"""torch's verifier on a loaded program, without the sympy import a static program does not need.

torch's `Verifier._check_graph_module` imports torch.fx.experimental.symbolic_shapes,
and sympy with it (0.2 s, a fifth of a cold 20,000-node load), only to name
`torch.SymInt`/`SymFloat`/`SymBool` and one allowlisted function of that
module. A program without symbols needs neither.

`validate(ep)` first runs a pre-check (`graph_passes`) that accepts only
graphs torch's per-node checks accept: every check that function makes, none
weaker, with whatever is uncertain counted as a failure. When it accepts, the
rest of torch's `Verifier.check` (`_verify_exported_program_module_call_graph`,
`_verify_exported_program_signature`) runs as torch's own code. When it does
not, or when the pre-check cannot vouch for this torch, torch's
`ep.validate()` runs as before and raises its own error. So errors stay
torch's, word for word; only a program torch accepts skips torch's graph walk.

The pre-check copies torch's checks, so it is used only where it was compared
with them: a torch whose verifier source (verifier.py and
`ExportedProgram.validate`) hashes to a value in `KNOWN_VERIFIERS`, and only
for torch's own verifier classes. tests/loaders/test_verifier.py draws graphs
and checks that every graph the pre-check accepts passes torch's verifier.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys

import torch
import torch._export.verifier as torch_verifier
from torch._ops import OpOverload
from torch._subclasses.fake_tensor import FakeTensor
from torch.export.exported_program import ExportedProgram

from pt2format._nogc import young_only

SYMBOLIC_SHAPES = "torch.fx.experimental.symbolic_shapes"

#: sha256 of torch/_export/verifier.py followed by the source of `ExportedProgram.validate` and `_validate`,
#: for each torch whose verifier the pre-check was compared with (tests/loaders/test_verifier.py).
KNOWN_VERIFIERS = {
    "torch 2.13.0": "62f8a2391e32735763926c0fd1e3214e36d3c50140f8be4e0d8e2e9fdc3cbb52",
    "torch 2.14.1": "fb4d31dcbc56748dac873ab8ddf8eb32797d1a9bbf11df0d43a79c6a8f2682c2",
    "torch 2.12.0": "668c3d2412d61021999f80aa669bf251b9919e9d8644a008bb3f32e5cdadd15e",
}

_VAL_ATOMS = (type(None), int, bool, str, float, torch.memory_format, torch.dtype, torch.device, torch.layout,
              FakeTensor, torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)


def _verifier_code() -> tuple:
    """The functions torch's `ep.validate()` runs whose checks the pre-check copies, as they are now."""
    v = torch_verifier.Verifier
    return (ExportedProgram.validate, ExportedProgram._validate, torch_verifier._check_val,
            torch_verifier.getattr_recursive, torch_verifier.is_functional, v.check, v._check_graph_module,
            v.allowed_builtin_ops, v.allowed_op_types, v.allowed_getattr_types,
            v.allowed_getattr_types_for_subgm, v.check_valid_op, v.check_additional,
            tuple(torch_verifier.TrainingIRVerifier.__dict__.items()))


def verifier_fingerprint() -> str | None:
    """The hash KNOWN_VERIFIERS holds for this torch's verifier; None when its source cannot be read or a
    function of it was replaced at run time (the source on disk is then not what runs)."""
    *functions, training = _verifier_code()
    try:
        with open(torch_verifier.__file__, "rb") as f:
            h = hashlib.sha256(f.read())
        for fn in functions[:2]:
            if fn.__code__.co_filename != inspect.getsourcefile(ExportedProgram):
                return None
            h.update(inspect.getsource(fn).encode())
        for fn in functions[2:]:
            if fn.__code__.co_filename != torch_verifier.__file__:
                return None
    except (OSError, TypeError, AttributeError):
        return None
    training_ir = torch_verifier.TrainingIRVerifier
    if {k for k, _ in training if not k.startswith("__")} != {"dialect"} or training_ir.dialect != "TRAINING" \
            or training_ir.__bases__ != (torch_verifier.Verifier,):
        return None
    return h.hexdigest()


_known: tuple | None = None  # (_verifier_code(), whether its fingerprint is known)


def _known_torch() -> bool:
    """Whether torch's verifier, as it is now, is one the pre-check was compared with."""
    global _known
    code = _verifier_code()
    known = _known
    if known is None or known[0] != code:  # first use, or torch's functions were replaced since
        known = _known = (code, verifier_fingerprint() in KNOWN_VERIFIERS.values())
    return known[1]


def _torch_functions() -> frozenset:
    """torch's `_allowed_torch_functions` (verifier.py), each only where it exists: a module not imported
    yet (`cast_symbool_to_symint_guardless`'s, predispatch) has no function a node could name, since
    resolving the node's target would have imported it."""
    fns = [
        torch.autograd.grad_mode.set_grad_enabled,
        torch.sym_int,
        torch.sym_float,
        torch.sym_ite,
        torch.sym_max,
        torch.sym_min,
        torch.sym_not,
        torch.sym_sqrt,
        torch.sym_sum,
        torch.export.custom_ops._call_custom_autograd_function_in_pre_dispatch,
        torch._C._set_grad_enabled,
        torch.amp.autocast_mode._enter_autocast,
        torch.amp.autocast_mode._exit_autocast,
    ]
    predispatch = sys.modules.get("torch._functorch.predispatch")
    if predispatch is not None:  # the forward-mode ones (_make_dual, ...) are new in torch 2.13, with their entries
        fns += [f for n in (
            "_add_batch_dim", "_remove_batch_dim", "_vmap_increment_nesting", "_vmap_decrement_nesting",
            "lazy_load_decompositions", "_make_dual", "_unpack_dual", "_jvp_increment_nesting",
            "_jvp_decrement_nesting", "_unwrap_for_grad", "_enter_dual_level", "_exit_dual_level")
            if (f := getattr(predispatch, n, None)) is not None]
    symbolic_shapes = sys.modules.get(SYMBOLIC_SHAPES)
    if symbolic_shapes is not None:
        fns.append(symbolic_shapes.cast_symbool_to_symint_guardless)
    return frozenset(fns)


def _val_passes(val, depth=0) -> bool:
    """torch's `_check_val.<locals>._check_correct_val`, for the values a loader makes (else False)."""
    if isinstance(val, _VAL_ATOMS) or type(val) is torch_verifier.CustomObjArgument:
        return True
    if type(val) in (tuple, list) and depth < 8:
        return all(_val_passes(x, depth + 1) for x in val)
    return False


def _has_val(node) -> bool:
    """torch's `_check_val`: a node without `val` passes only as a call to an operator that returns nothing."""
    meta = node.meta
    if "val" not in meta:
        t = node.target
        return node.op == "call_function" and isinstance(t, OpOverload) and len(t._schema.returns) == 0
    return _val_passes(meta["val"])


class _OpCheck:
    """torch's `_check_valid_op` for one verifier, its verdict cached per target."""

    def __init__(self, verifier, op_types: tuple):
        self.op_types = op_types  # verifier.allowed_op_types(), checked by graph_passes
        self.allowed = frozenset(verifier.allowed_builtin_ops()) | _torch_functions()
        self.functional_only = verifier.dialect != "TRAINING"
        self.seen: dict[int, tuple] = {}  # id(target) -> (target, verdict)

    def __call__(self, op) -> bool:
        known = self.seen.get(id(op))
        if known is not None and known[0] is op:
            return known[1]
        ok = True
        if not isinstance(op, self.op_types):
            try:
                ok = op in self.allowed
            except TypeError:  # unhashable: not one of them
                ok = False
        if ok and isinstance(op, OpOverload) and self.functional_only:
            ok = torch_verifier.is_functional(op)
        self.seen[id(op)] = (op, ok)
        return ok


def graph_passes(verifier, gm: torch.fx.GraphModule) -> bool:
    """True only if torch's `verifier._check_graph_module(gm)` passes (False: it may not)."""
    op_types = tuple(verifier.allowed_op_types())
    if any(t is object for t in op_types):
        return False
    if not all(inspect.isbuiltin(op) for op in verifier.allowed_builtin_ops()):
        return False
    top_types = tuple(verifier.allowed_getattr_types())
    sub_types = tuple(verifier.allowed_getattr_types_for_subgm())
    if any(t is object for t in top_types + sub_types):
        return False
    op_passes = _OpCheck(verifier, op_types)
    check_valid_op = verifier.check_valid_op
    for mod in gm.modules():
        if not isinstance(mod, torch.fx.GraphModule):
            continue
        mod.graph.lint()
        attr_types = top_types if mod is gm else sub_types
        for node in mod.graph.nodes:
            op = node.op
            if op == "call_function":
                if not (_has_val(node) and op_passes(node.target)):
                    return False
                check_valid_op(node.target)
            elif op == "placeholder":
                if not _has_val(node):
                    return False
            elif op == "get_attr":
                if not isinstance(node.target, str):
                    return False
                attr = torch_verifier.getattr_recursive(mod, node.target)
                if isinstance(attr, torch.nn.Module) and type(attr).__name__ in (
                        "LoweredBackendModule", "AOTInductorEPModule", "AOTInductorRunnerWrapper"):
                    return False  # torch's special cases: left to torch
                if not isinstance(attr, attr_types):
                    return False
            elif op != "output":
                return False
    verifier.check_additional(gm)
    return True


def validate(ep) -> None:
    """torch's `ep.validate()`: the same verdict and, when it fails, the same error."""
    if _fast_validate(ep):
        return
    _verifier_imports()
    with young_only():  # the verifier's garbage, collected as it runs (see young_only)
        ep.validate()


def _verifier_imports() -> None:
    """Import what torch's verifier imports at its first node (`_check_val`: symbolic_shapes, and sympy with
    it), while the collector is still off. Under `young_only` the import's 150,000 long-lived objects would
    pass through two hundred young collections; here they are aged with the program. Only when this torch's
    verifier does import it, so that a torch whose verifier stops needing sympy does not get it from us.
    """
    code = getattr(torch_verifier._check_val, "__code__", None)
    if code is not None and SYMBOLIC_SHAPES in code.co_names:
        importlib.import_module(SYMBOLIC_SHAPES)


def _fast_validate(ep) -> bool:
    """torch's `ep.validate()` when the pre-check passes for every verifier; False when it cannot vouch."""
    verifiers = ep.verifiers
    if not verifiers or not all(v is torch_verifier.Verifier or v is torch_verifier.TrainingIRVerifier
                                for v in verifiers):
        return False
    if not _known_torch():
        return False
    gm = ep.graph_module
    try:
        passes = all(graph_passes(v(), gm) for v in verifiers)
    except Exception:  # torch's verifier raises it again, with its own message
        return False
    if not passes:
        return False
    # the rest of Verifier.check, in torch's order, once per verifier as `_validate` does
    for _ in verifiers:
        torch_verifier._verify_exported_program_module_call_graph(ep)
        torch_verifier._verify_exported_program_signature(ep)
    return True
