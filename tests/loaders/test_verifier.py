"""The verifier pre-check (loaders/_verifier.py) against torch's verifier.

Soundness: every drawn graph the pre-check accepts passes torch's
`Verifier._check_graph_module`, for both of torch's verifier classes. The
drawn graphs mix every node kind, target kind, value kind and attribute kind
torch's check looks at, including kinds the pre-check leaves to torch. On the
kinds it covers, the two verdicts agree both ways (a pre-check that refused
everything would pass the soundness half alone). Around it: a program torch
rejects gets torch's own error, a torch the pre-check does not know or a
replaced verifier function gets torch's verifier, and a static program's
load does not import sympy.
"""

from __future__ import annotations

import collections
import math
import operator
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch._export.verifier as torch_verifier
import torch._functorch.predispatch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.export.graph_signature import CustomObjArgument
from torch.fx.experimental.symbolic_shapes import ShapeEnv, cast_symbool_to_symint_guardless
from torch.utils import _pytree as pytree

import pt2format
from chain_programs import saved_chain
from pt2format.loaders import _verifier

VERIFIERS = [torch_verifier.Verifier, torch_verifier.TrainingIRVerifier]


def _targets():
    """name -> target: the pre-check covers every kind (its verdict must equal torch's)."""
    aten = torch.ops.aten
    return {
        "functional op": aten.add.Tensor,
        "mutating op": aten.add_.Tensor,
        "op without returns": aten._assert_async.default,
        "higher-order op": torch.ops.higher_order.cond,
        "allowed builtin": operator.getitem,
        "allowed math": math.ceil,
        "allowed torch function": torch.sym_max,
        "allowed C function": torch._C._set_grad_enabled,
        "symbolic_shapes function": cast_symbool_to_symint_guardless,
        "vmap function": torch._functorch.predispatch._add_batch_dim,
        # torch 2.13 added forward-mode functions to the allowlist (2.12 has none of them)
        **({"jvp function": torch._functorch.predispatch._make_dual}
           if hasattr(torch._functorch.predispatch, "_make_dual") else {}),
        "op packet": aten.add,
        "torch function": torch.add,
        "other builtin": operator.concat,
        "python function": lambda x: x,
    }


def _values():
    """name -> (value maker, whether the pre-check covers it); `missing`: no meta["val"]."""
    with FakeTensorMode():
        fake = torch.empty(2, 3)
    sym = ShapeEnv().create_unbacked_symint()
    return {
        "fake tensor": (lambda: fake, True),
        "tensor": (lambda: torch.ones(1), True),
        "none": (lambda: None, True),
        "int": (lambda: 3, True),
        "bool": (lambda: True, True),
        "float": (lambda: 1.5, True),
        "str": (lambda: "s", True),
        "dtype": (lambda: torch.float32, True),
        "device": (lambda: torch.device("cpu"), True),
        "layout": (lambda: torch.strided, True),
        "memory format": (lambda: torch.contiguous_format, True),
        "symint": (lambda: sym, True),
        "custom object": (lambda: CustomObjArgument(name="obj", class_fqn="a.B"), True),
        "tuple": (lambda: (fake, None, 2), True),
        "nested list": (lambda: [fake, [sym, ()]], True),
        "list with an object": (lambda: [fake, object()], True),
        "object": (lambda: object(), True),
        "module": (lambda: torch.nn.Module(), True),
        "missing": (None, True),
        "dict": (lambda: {"a": fake}, False),  # torch iterates its keys
        "set": (lambda: {1, 2}, False),
    }


class LoweredBackendModule(torch.nn.Module):
    """A module torch's verifier lets through by its class name and fields."""

    def __init__(self):
        super().__init__()
        self.backend_id, self.processed_bytes, self.compile_specs = "b", b"", []
        self.original_module = torch.nn.Module()


def _attributes():
    """name -> (attribute maker, whether the pre-check covers it)."""
    return {
        "graph module": (lambda: torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()), True),
        "parameter": (lambda: torch.nn.Parameter(torch.ones(1)), True),
        "buffer": (lambda: torch.ones(1), True),
        "treespec": (lambda: pytree.tree_flatten((1, 2))[1], True),
        "int": (lambda: 3, True),
        "plain module": (lambda: torch.nn.Module(), True),
        "lowered module": (LoweredBackendModule, False),
    }


TARGETS, VALUES, ATTRIBUTES = _targets(), _values(), _attributes()


def _graph_module(top, sub):
    """A GraphModule from drawn node lists; `sub` (or None) is its submodule `sub`, reached by a get_attr.
    Lazy, as the loader's: nodes without arguments need not make valid code."""
    covered = True

    def fill(owner, nodes):
        nonlocal covered
        g = torch.fx.Graph()
        attrs = 0
        for i, spec in enumerate(sorted(nodes, key=lambda s: s[0] != "placeholder")):
            kind, name = spec[0], f"n{i}"
            if kind == "get_attr":
                make, ok = ATTRIBUTES[spec[1]]
                covered &= ok
                attr = f"a{attrs}"
                attrs += 1
                setattr(owner, attr, make())
                g.get_attr(attr)
                continue
            if kind == "use before definition":  # a graph that fails lint()
                later = g.create_node("call_function", torch.ops.aten.relu.default, (), {}, f"{name}_later")
                with g.inserting_before(later):
                    early = g.create_node("call_function", torch.ops.aten.relu.default, (later,), {}, name)
                later.meta["val"] = early.meta["val"] = VALUES["fake tensor"][0]()
                continue
            if kind in ("call_module", "call_method"):
                owner.m = torch.nn.ReLU()
                g.create_node(kind, "m" if kind == "call_module" else "relu", (), {}, name)
                continue
            target = kind if kind == "placeholder" else TARGETS[spec[1]]
            node = g.create_node(kind, target if kind == "call_function" else name, (), {}, name)
            make, ok = VALUES[spec[-1]]
            covered &= ok
            if make is not None:
                node.meta["val"] = make()
        g.output(())
        return g

    root = torch.nn.Module()
    if sub is not None:
        inner = torch.nn.Module()
        root.sub = _LazyGraphModule(inner, fill(inner, sub))
    graph = fill(root, top)
    if sub is not None:
        with graph.inserting_before(next(iter(graph.find_nodes(op="output")))):
            graph.get_attr("sub")
    return _LazyGraphModule(root, graph), covered


def _torch_accepts(verifier, gm) -> bool:
    try:
        verifier()._check_graph_module(gm)
    except Exception:
        return False
    return True


def _precheck_accepts(verifier, gm) -> bool:
    try:  # an exception counts as a refusal, as in _verifier._fast_validate
        return _verifier.graph_passes(verifier(), gm)
    except Exception:
        return False


def test_what_the_precheck_accepts_torchs_verifier_accepts():
    from hypothesis import given, settings, strategies as st

    node = st.one_of(
        st.tuples(st.just("placeholder"), st.sampled_from(sorted(VALUES))),
        st.tuples(st.just("call_function"), st.sampled_from(sorted(TARGETS)), st.sampled_from(sorted(VALUES))),
        st.tuples(st.just("get_attr"), st.sampled_from(sorted(ATTRIBUTES))),
        st.tuples(st.sampled_from(["call_module", "call_method", "use before definition"])))
    nodes = st.lists(node, max_size=5)
    seen = collections.Counter()

    @settings(max_examples=600, deadline=None, derandomize=True)
    @given(nodes, st.none() | nodes)
    def check(top, sub):
        gm, covered = _graph_module(top, sub)
        for verifier in VERIFIERS:
            ours, theirs = _precheck_accepts(verifier, gm), _torch_accepts(verifier, gm)
            seen[ours, theirs, covered] += 1
            assert theirs or not ours, f"pre-check accepts what {verifier.__name__} refuses: {top} / {sub}"
            if covered:
                assert ours == theirs, f"{verifier.__name__}: torch {theirs}, pre-check {ours}: {top} / {sub}"

    check()
    # Both verdicts were drawn on the covered kinds, and torch accepted uncovered graphs the pre-check left to it.
    assert seen[True, True, True] > 20 and seen[False, False, True] > 20, seen
    assert seen[False, True, False] > 0, seen


def test_the_two_verifiers_differ_on_a_mutating_op():
    """The one check where torch's two classes differ: TRAINING allows operators that mutate."""
    gm, covered = _graph_module([("call_function", "mutating op", "fake tensor")], None)
    assert covered
    verdicts = [(_precheck_accepts(v, gm), _torch_accepts(v, gm)) for v in VERIFIERS]
    assert verdicts == [(False, False), (True, True)]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return saved_chain(tmp_path_factory.mktemp("verifier"), 4)


def _spy_on_torchs_verifier(monkeypatch) -> list:
    runs = []
    verifier_imports = _verifier._verifier_imports
    monkeypatch.setattr(_verifier, "_verifier_imports", lambda: (runs.append(1), verifier_imports()))
    return runs


def test_a_loaded_program_skips_torchs_graph_walk_on_a_known_torch(chain, monkeypatch):
    if not _verifier._known_torch():
        pytest.skip("the pre-check was not compared with this torch's verifier")
    runs = _spy_on_torchs_verifier(monkeypatch)
    ep = pt2format.load(chain[0])
    assert runs == []
    ep.validate()  # and torch's verifier agrees


@pytest.mark.parametrize("change", ["torch function", "missing val", "call_module"])
def test_a_program_torch_refuses_gets_torchs_own_error(chain, change):
    ep = pt2format.load(chain[0])
    graph = ep.graph
    first = next(n for n in graph.nodes if n.op == "call_function")
    with graph.inserting_before(first):
        if change == "torch function":  # not an operator
            bad = graph.call_function(torch.add, (first.args[0], first.args[0]))
            bad.meta["val"] = first.args[0].meta["val"]
        elif change == "missing val":
            bad = graph.call_function(torch.ops.aten.relu.default, (first.args[0],))
        else:
            ep.graph_module.sub = torch.nn.ReLU()
            bad = graph.call_module("sub", (first.args[0],))
    with pytest.raises(torch_verifier.SpecViolationError) as theirs:
        ep.validate()
    with pytest.raises(torch_verifier.SpecViolationError) as ours:
        _verifier.validate(ep)
    assert str(ours.value) == str(theirs.value)


def test_an_unknown_torch_runs_torchs_verifier(chain, monkeypatch):
    monkeypatch.setattr(_verifier, "KNOWN_VERIFIERS", {})
    monkeypatch.setattr(_verifier, "_known", None)
    runs = _spy_on_torchs_verifier(monkeypatch)
    pt2format.load(chain[0])
    assert runs == [1]


def test_a_replaced_verifier_function_is_the_one_that_runs(chain, monkeypatch):
    """A verifier function replaced at run time (a patch, a test double) makes torch's verifier run: the
    pre-check copies the source on disk, which is then not what torch would run."""
    if not _verifier._known_torch():
        pytest.skip("the pre-check was not compared with this torch's verifier")
    calls = []
    check_val = torch_verifier._check_val
    monkeypatch.setattr(torch_verifier, "_check_val", lambda node: (calls.append(node.name), check_val(node)))
    pt2format.load(chain[0])
    assert calls  # torch's verifier ran, with the replacement


def test_a_verifier_class_of_another_dialect_runs_torchs_verifier(chain, monkeypatch):
    ep = pt2format.load(chain[0])
    runs = _spy_on_torchs_verifier(monkeypatch)

    class Strict(torch_verifier.Verifier):
        dialect = "PT2F_TEST_STRICT"

        def check_valid_op(self, op):
            raise torch_verifier.SpecViolationError(f"no {op}")

    try:
        ep._verifiers = [Strict]
        with pytest.raises(torch_verifier.SpecViolationError, match="^no "):
            _verifier.validate(ep)
        assert runs == [1]
    finally:
        torch_verifier._VerifierMeta._registry.pop("PT2F_TEST_STRICT", None)


def test_the_pinned_torchs_verifier_is_known():
    """CI's torch (constraints.txt) is one the pre-check was compared with: its fingerprint is listed."""
    constraints = (Path(__file__).parents[2] / "constraints.txt").read_text().splitlines()
    pinned = next(line.split("==")[1].strip() for line in constraints if line.startswith("torch=="))
    if torch.__version__.split("+")[0] != pinned:
        pytest.skip(f"torch {torch.__version__} is not the pinned {pinned}")
    assert _verifier.KNOWN_VERIFIERS.get(f"torch {pinned}") == _verifier.verifier_fingerprint()


def test_a_static_load_does_not_import_sympy(chain):
    """torch's verifier would import it (0.2 s of a cold load); a program without symbols needs none."""
    child = textwrap.dedent("""
        import sys, torch, pt2format
        from pt2format.loaders import _verifier
        pt2format.load(sys.argv[1])
        print(_verifier._known_torch(), "sympy" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", child, str(chain[0])], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    if out[0] != "True":
        pytest.skip("the pre-check was not compared with this torch's verifier: torch's imports sympy")
    assert out[1] == "False"
