"""A program whose parts disagree is refused at load, where torch fails later (loaders/_coherence.py).

Each crafted file is compared with what torch does with the same change made
to the original ExportedProgram: torch accepts it and fails in `module()` or at
the first call on `ep.example_inputs`; pt2format refuses the file at `load`
with a LoadError naming the field. `load_module`'s fast path refuses the
structural ones too (it never reads the example inputs, so those are load's).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

import pt2format
from pt2format._generated import model as m
from pt2format.errors import LoadError

import crafting

ENCODINGS = ("flatbuffers", "msgpack", "json")


class DictIO(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("scale", torch.full((3,), 2.0), persistent=False)

    def forward(self, x, *, opts):
        return {"out": self.lin(x) * self.scale + opts["bias"]}


@pytest.fixture(scope="module")
def exported():
    return torch.export.export(DictIO(), (torch.randn(2, 3),), {"opts": {"bias": torch.randn(3)}})


@pytest.fixture(scope="module")
def saved(exported, tmp_path_factory):
    d = tmp_path_factory.mktemp("example-inputs")
    paths = {}
    for enc in ENCODINGS:
        paths[enc] = d / f"base-{enc}.pt2f"
        pt2format.save(exported, paths[enc], encoding=enc, fsync=False, progress=False)
    return paths


def _opts_map(pkg):
    kwargs = pkg.programs[0].example_inputs.value.items[1].value
    return kwargs.entries[0].value.value  # {"bias": tensor}


def _torch_call_fails(exported, args, kwargs, error):
    """torch's own program with the same example inputs: accepted, then the call on them fails."""
    ep = copy.copy(exported)
    ep._example_inputs = (args, kwargs)
    with pytest.raises(error):
        ep.module()(*ep.example_inputs[0], **ep.example_inputs[1])


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_unchanged_example_inputs_load_and_run(saved, exported, encoding):
    ep = pt2format.load(saved[encoding])
    args, kwargs = ep.example_inputs
    torch.testing.assert_close(args[0], exported.example_inputs[0][0], rtol=0, atol=0)
    torch.testing.assert_close(ep.module()(*args, **kwargs), exported.module()(*args, **kwargs), rtol=0, atol=0)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_example_input_key_unlike_the_input_spec_refused(saved, exported, tmp_path, encoding):
    def mutate(pkg):
        _opts_map(pkg).entries[0].key = m.Value(m.StringValue("scale"))

    crafted = crafting.craft(saved[encoding], tmp_path / "key.pt2f", mutate)
    with pytest.raises(LoadError, match="structure of the program's input spec") as e:
        pt2format.load(crafted)
    assert e.value.path == "programs[forward].example_inputs"
    (x,), kwargs = exported.example_inputs
    _torch_call_fails(exported, (x,), {"opts": {"scale": kwargs["opts"]["bias"]}}, ValueError)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_example_input_of_another_shape_refused(saved, exported, tmp_path, encoding):
    package, _, _ = crafting.decode_file(saved[encoding])
    weight = next(e.tensor for e in package.programs[0].state if e.name == "lin.weight")

    def mutate(pkg):
        _opts_map(pkg).entries[0].value = m.Value(m.TensorRefValue(weight))  # a 3x3 tensor where a 3 is declared

    crafted = crafting.craft(saved[encoding], tmp_path / "shape.pt2f", mutate)
    with pytest.raises(LoadError, match="other sizes") as e:
        pt2format.load(crafted)
    assert e.value.path == "programs[forward].example_inputs[1]['opts']['bias']"
    (x,), _ = exported.example_inputs
    _torch_call_fails(exported, (x,), {"opts": {"bias": torch.zeros(3, 3)}}, RuntimeError)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_example_input_of_another_dtype_refused(saved, exported, tmp_path, encoding):
    def mutate(pkg):
        x = pkg.programs[0].example_inputs.value.items[0].value.items[0].value
        t = pkg.tensors[x.tensor]
        assert t.dtype == m.ScalarType.FLOAT32
        t.dtype = m.ScalarType.INT32  # same itemsize, same bytes

    crafted = crafting.craft(saved[encoding], tmp_path / "dtype.pt2f", mutate)
    with pytest.raises(LoadError, match="another dtype") as e:
        pt2format.load(crafted)
    assert e.value.path == "programs[forward].example_inputs[0][0]"
    (x,), kwargs = exported.example_inputs
    _torch_call_fails(exported, (x.view(torch.int32),), kwargs, RuntimeError)


class WithConstant(torch.nn.Module):
    def forward(self, x, n: int):
        return x * n


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_example_input_unlike_a_constant_input_refused(tmp_path, encoding):
    exported = torch.export.export(WithConstant(), (torch.randn(2), 3))
    path = tmp_path / "const.pt2f"
    pt2format.save(exported, path, encoding=encoding, fsync=False, progress=False)
    pt2format.load(path).module()(*exported.example_inputs[0])  # unchanged: loads and runs

    def mutate(pkg):
        n = pkg.programs[0].example_inputs.value.items[0].value.items[1].value
        assert n.value == 3
        n.value = 4

    crafted = crafting.craft(path, tmp_path / "const4.pt2f", mutate)
    with pytest.raises(LoadError, match="constant input") as e:
        pt2format.load(crafted)
    assert e.value.path == "programs[forward].example_inputs[0][1]"
    _torch_call_fails(exported, (exported.example_inputs[0][0], 4), {}, (RuntimeError, AssertionError))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_module_call_graph_not_starting_at_the_root_refused(saved, exported, tmp_path, encoding):
    def mutate(pkg):
        pkg.programs[0].module_call_graph[0].fqn = "lin"

    crafted = crafting.craft(saved[encoding], tmp_path / "mcg.pt2f", mutate)
    for load in (pt2format.load, pt2format.load_module):  # the fast path refuses what load refuses
        with pytest.raises(LoadError, match="start with the root") as e:
            load(crafted)
        assert e.value.path == "programs[forward].module_call_graph[0].fqn"
    ep = copy.copy(exported)
    ep._module_call_graph = [dataclasses.replace(exported.module_call_graph[0], fqn="lin"),
                             *exported.module_call_graph[1:]]
    with pytest.raises(AssertionError):
        ep.module()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_input_spec_naming_missing_state_refused(saved, exported, tmp_path, encoding):
    """torch's verifier checks parameters and persistent buffers; a non-persistent one naming nothing fails in module()."""
    def mutate(pkg):
        spec = next(s.spec for s in pkg.programs[0].signature.input_specs
                    if getattr(s.spec, "buffer_name", None) == "scale")
        spec.buffer_name = "other"

    crafted = crafting.craft(saved[encoding], tmp_path / "state.pt2f", mutate)
    for load in (pt2format.load, pt2format.load_module):
        with pytest.raises(LoadError, match="'other', which the state does not hold"):
            load(crafted)
    ep = copy.deepcopy(exported)
    next(s for s in ep.graph_signature.input_specs if s.target == "scale").target = "other"
    with pytest.raises(KeyError, match="other"):  # torch: in module(), while unlifting the state
        ep.module()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_tree_spec_field_names_repeated_refused(saved, tmp_path, encoding):
    def mutate(pkg):
        spec = pkg.programs[0].module_call_graph[0].signature.out_spec
        spec.kind = m.TreeSpecKind.NAMEDTUPLE
        spec.type_name = "nowhere.Pair"
        spec.keys = []
        spec.children = spec.children * 2 if len(spec.children) == 1 else spec.children
        spec.field_names = ["out"] * len(spec.children)

    crafted = crafting.craft(saved[encoding], tmp_path / "fields.pt2f", mutate)
    with pytest.raises(LoadError, match="field name repeats"):
        pt2format.load(crafted)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_example_inputs_not_binding_to_forward_arg_names_refused(saved, exported, tmp_path, encoding):
    def mutate(pkg):
        pkg.programs[0].module_call_graph[0].signature.forward_arg_names = ["x"]  # "opts" dropped

    crafted = crafting.craft(saved[encoding], tmp_path / "names.pt2f", mutate)
    with pytest.raises(LoadError, match="bind to the program's forward_arg_names"):
        pt2format.load(crafted)
    ep = copy.copy(exported)
    sig = dataclasses.replace(exported.module_call_graph[0].signature, forward_arg_names=["x"])
    ep._module_call_graph = [dataclasses.replace(exported.module_call_graph[0], signature=sig),
                             *exported.module_call_graph[1:]]
    with pytest.raises(TypeError, match="opts"):
        ep.module()(*ep.example_inputs[0], **ep.example_inputs[1])


def _rename_scale(new):
    """A file mutation: the non-persistent buffer `scale` renamed to `new` in its input spec and the state."""
    def mutate(pkg):
        prog = pkg.programs[0]
        next(s.spec for s in prog.signature.input_specs if getattr(s.spec, "buffer_name", None) == "scale") \
            .buffer_name = new
        next(e for e in prog.state if e.name == "scale").name = new
    return mutate


def _torch_with_scale_renamed(exported, new):
    """The same change made to torch's own ExportedProgram."""
    ep = copy.deepcopy(exported)
    next(s for s in ep.graph_signature.input_specs if s.target == "scale").target = new
    ep._constants[new] = ep._constants.pop("scale")
    return ep


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_state_path_inside_another_state_entry_refused(saved, exported, tmp_path, encoding):
    crafted = crafting.craft(saved[encoding], tmp_path / "paths.pt2f", _rename_scale("lin.weight.x"))
    for load in (pt2format.load, pt2format.load_module):
        with pytest.raises(LoadError, match="inside another state entry"):
            load(crafted)
    ep = _torch_with_scale_renamed(exported, "lin.weight.x")
    with pytest.raises(KeyError, match="already exists"):
        ep.module()


def _linear(pkg):
    return next(n for n in pkg.programs[0].graph.nodes if n.target == "torch.ops.aten.linear.default")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_keyword_the_operator_does_not_have_refused(saved, exported, tmp_path, encoding):
    def mutate(pkg):
        bias = _linear(pkg).inputs[2]
        bias.kind, bias.name = m.ArgumentKind.KEYWORD, "code"

    crafted = crafting.craft(saved[encoding], tmp_path / "kwarg.pt2f", mutate)
    for load in (pt2format.load, pt2format.load_module):
        with pytest.raises(LoadError, match="aten.linear.default has no argument named 'code'"):
            load(crafted)
    ep = copy.deepcopy(exported)
    node = next(n for n in ep.graph.nodes if n.target is torch.ops.aten.linear.default)
    node.args, node.kwargs = node.args[:2], {"code": node.args[2]}
    ep.graph_module.recompile()
    with pytest.raises(RuntimeError, match="Unknown keyword argument 'code'"):  # torch: only at the call
        ep.module()(*ep.example_inputs[0], **ep.example_inputs[1])


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_positional_and_keyword_for_one_argument_refused(saved, tmp_path, encoding):
    def mutate(pkg):
        node = _linear(pkg)
        node.inputs.append(m.NamedArgument(name="weight", value=node.inputs[1].value, kind=m.ArgumentKind.KEYWORD))

    crafted = crafting.craft(saved[encoding], tmp_path / "twice.pt2f", mutate)
    with pytest.raises(LoadError, match="given both by position and by keyword"):
        pt2format.load(crafted)
    with pytest.raises(RuntimeError, match="both as positional and keyword"):  # the dispatcher, on the same call
        torch.ops.aten.linear.default(torch.randn(2, 3), torch.randn(3, 3), weight=torch.randn(3, 3))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_state_entry_named_self_refused(saved, exported, tmp_path, encoding):
    crafted = crafting.craft(saved[encoding], tmp_path / "self.pt2f", _rename_scale("self"))
    for load in (pt2format.load, pt2format.load_module):
        with pytest.raises(LoadError, match="cannot be named 'self'"):
            load(crafted)
    ep = _torch_with_scale_renamed(exported, "self")
    with pytest.raises(AttributeError):  # torch: the get_attr node named `self` shadows the module
        ep.module()(*ep.example_inputs[0], **ep.example_inputs[1])


class Branches(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_subgraph_attribute_named_self_refused(tmp_path, encoding):
    ep = torch.export.export(Branches(), (torch.randn(3),))
    path = tmp_path / "cond.pt2f"
    pt2format.save(ep, path, encoding=encoding, fsync=False, progress=False)

    def mutate(pkg):
        cond = next(n for n in pkg.programs[0].graph.nodes if n.target == "torch.ops.higher_order.cond")
        branch = cond.inputs[1].value
        branch.name, branch.node_name = "self", None

    crafted = crafting.craft(path, tmp_path / "cond-self.pt2f", mutate)
    with pytest.raises(LoadError, match="a node cannot be named 'self'"):
        pt2format.load(crafted)
    gm = ep.module()
    get_attr = next(n for n in gm.graph.nodes if n.op == "get_attr" and n.target == "true_graph_0")
    gm.self = gm.true_graph_0  # the same program in torch: the branch attribute and its node named `self`
    get_attr.target = get_attr.name = "self"
    gm.recompile()
    with pytest.raises(AttributeError):
        gm(torch.randn(3))


class Unbacked(torch.nn.Module):
    def forward(self, x, n):
        k = n.item()
        torch._check(k >= 1)
        return x.sum() * torch.ones(k)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_unbacked_binding_to_a_symbol_torch_does_not_treat_as_unbacked_refused(tmp_path, encoding):
    from torch.utils._sympy.symbol import SymT, symbol_is_type
    import sympy

    ep = torch.export.export(Unbacked(), (torch.randn(3), torch.tensor(4)))
    path = tmp_path / "unbacked.pt2f"
    pt2format.save(ep, path, encoding=encoding, fsync=False, progress=False)
    pt2format.load(path).run_decompositions()  # unchanged: torch's passes accept it

    def mutate(pkg):
        sym = next(s for s in pkg.programs[0].symbols if s.name.startswith("u"))
        sym.name = "n_items"

    crafted = crafting.craft(path, tmp_path / "renamed.pt2f", mutate)
    with pytest.raises(LoadError, match="'n_items', which torch does not treat as unbacked"):
        pt2format.load(crafted)
    # torch decides by the name alone (the rule the loader applies):
    assert symbol_is_type(sympy.Symbol("u0"), SymT.UNBACKED_INT)
    assert not symbol_is_type(sympy.Symbol("n_items"), (SymT.UNBACKED_INT, SymT.UNBACKED_FLOAT))
