"""Benchmarks the three program codecs on synthetic GPT-2-sized and 20,000-node trees, against torch's JSON serde.

Run `python benchmarks/codec_bench.py [--nodes 700 20000] [--repeat 5]`. For
each size it builds a realistic program tree (linear/addmm/view/layer_norm/gelu/
getitem nodes with 2-6 arguments, parameters as placeholders with input specs,
tensor metadata with SymInt sizes and strides, node metadata with stack traces,
nn_module_stack, source_fn_stack and torch_fn), then prints encode and decode
time (best of N) and size per encoding (JSON decoded as read() does it, without
the jsonschema pass, and once with it, as validate() does), plus torch's own
path for an equivalent tree: torch._export.serde.schema dataclasses ->
_dataclass_to_dict -> json.dumps, and json.loads -> _dict_to_dataclass.
Targets at GPT-2 size: decode < 20 ms and encode < 50 ms in every encoding.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pt2format import _codecs as C  # noqa: E402
from pt2format._generated import model as M  # noqa: E402

OPS = ("linear", "addmm", "view", "layer_norm", "gelu", "getitem")
TARGETS = {"linear": "torch.ops.aten.linear.default", "addmm": "torch.ops.aten.addmm.default",
           "view": "torch.ops.aten.view.default", "layer_norm": "torch.ops.aten.layer_norm.default",
           "gelu": "torch.ops.aten.gelu.default", "getitem": "_operator.getitem"}
FLOAT32 = int(M.ScalarType.FLOAT32)


def _shape(i):
    return [1, 64 + i % 7, 768] if i % 3 else [1, 64, 12, 64]


def _meta(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    strides.reverse()
    return shape, strides


def _stack_trace(i, layer):
    return (f'  File "/src/transformers/models/gpt2/modeling_gpt2.py", line {300 + i % 40}, in forward\n'
            f"    hidden_states = self.attn(hidden_states)  # layer {layer}\n"
            f'  File "/src/torch/nn/modules/module.py", line 1775, in _call_impl\n'
            f"    return forward_call(*args, **kwargs)\n")


# ---------------------------------------------------------------------------
# pt2format tree
# ---------------------------------------------------------------------------

def synthetic_package(n_nodes: int, n_params: int = 150) -> M.Package:
    params = [f"transformer.h.{i // 12}.{('attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj')[i % 4]}.{'weight' if i % 2 else 'bias'}"
              for i in range(n_params)]
    pnames = [f"p_{p.replace('.', '_')}" for p in params]
    tensor_values, inputs, input_specs = [], [], []

    def tv(name, shape):
        sizes, strides = _meta(shape)
        tensor_values.append(M.TensorValue(name, M.TensorMeta(
            dtype=FLOAT32, sizes=[M.SymInt(-1, s) for s in sizes], strides=[M.SymInt(-1, s) for s in strides],
            storage_offset=M.SymInt(-1, 0), requires_grad=False, device=M.Device("cpu"), layout=1)))

    for i, (fqn, name) in enumerate(zip(params, pnames)):
        tv(name, [768, 768] if i % 2 else [768])
        inputs.append(M.Argument(M.TensorArgument(name)))
        input_specs.append(M.InputSpec(M.InputToParameterSpec(M.TensorArgument(name), fqn)))
    tv("input_ids", [1, 64])
    inputs.append(M.Argument(M.TensorArgument("input_ids")))
    input_specs.append(M.InputSpec(M.UserInputSpec(M.Argument(M.TensorArgument("input_ids")))))

    nodes, prev = [], "input_ids"
    for i in range(n_nodes):
        op = OPS[i % len(OPS)]
        name = f"{op}_{i}"
        layer = i * 12 // max(n_nodes, 1)
        p = pnames[i % n_params]
        t = lambda n: M.TensorArgument(n)  # noqa: E731
        if op in ("linear", "addmm"):
            ins = [M.NamedArgument("input", t(prev), 1), M.NamedArgument("weight", t(p), 1),
                   M.NamedArgument("bias", t(pnames[(i + 1) % n_params]), 1)]
            if op == "addmm":
                ins += [M.NamedArgument("beta", M.FloatArgument(1.0), 2), M.NamedArgument("alpha", M.FloatArgument(0.5), 2)]
        elif op == "view":
            ins = [M.NamedArgument("self", t(prev), 1), M.NamedArgument("size", M.IntListArgument(_shape(i)), 1)]
        elif op == "layer_norm":
            ins = [M.NamedArgument("input", t(prev), 1), M.NamedArgument("normalized_shape", M.IntListArgument([768]), 1),
                   M.NamedArgument("weight", t(p), 1), M.NamedArgument("bias", t(pnames[(i + 1) % n_params]), 1),
                   M.NamedArgument("eps", M.FloatArgument(1e-5), 1), M.NamedArgument("cudnn_enable", M.BoolArgument(True), 1)]
        elif op == "gelu":
            ins = [M.NamedArgument("self", t(prev), 1), M.NamedArgument("approximate", M.StringArgument("tanh"), 2)]
        else:
            ins = [M.NamedArgument("", t(prev), 1), M.NamedArgument("", M.IntArgument(0), 1)]
        tv(name, _shape(i))
        meta = M.NodeMetadata(
            stack_trace=_stack_trace(i, layer),
            nn_module_stack=[M.ModuleStackEntry("L__self__", "", "transformers.GPT2Model"),
                             M.ModuleStackEntry(f"L__self___h_{layer}", f"h.{layer}", "transformers.GPT2Block"),
                             M.ModuleStackEntry(f"L__self___h_{layer}_attn", f"h.{layer}.attn", "transformers.GPT2Attention")],
            source_fn_stack=[M.SourceFnEntry(f"{op}_{i}", f"torch.nn.functional.{op}")],
            torch_fn=M.TorchFn(f"{op}_{i}", f"function.{op}"))
        nodes.append(M.Node(name=name, target=TARGETS[op], inputs=ins, outputs=[M.Argument(t(name))], metadata=meta))
        prev = name
    graph = M.Graph(inputs=inputs, outputs=[M.Argument(M.TensorArgument(prev))], nodes=nodes, tensor_values=tensor_values)
    sig = M.GraphSignature(input_specs=input_specs,
                           output_specs=[M.OutputSpec(M.UserOutputSpec(M.Argument(M.TensorArgument(prev))))])
    state = [M.StateEntry(fqn, 1, i) for i, fqn in enumerate(params)]
    program = M.Program(name="forward", graph=graph, signature=sig, state=state,
                        opsets=[M.Opset("aten", 10)], verifiers=["ATEN"],
                        module_call_graph=[M.ModuleCallEntry("", None)])
    tensors = [M.Tensor(storage=i, dtype=FLOAT32, sizes=[768, 768] if i % 2 else [768],
                        strides=[768, 1] if i % 2 else [1], device=M.Device("cpu")) for i in range(n_params)]
    storages = [M.Storage(segment=0, offset=i * 2359296, size=2359296, checksum_kind=1, checksum=i * 7919)
                for i in range(n_params)]
    return M.Package(format_version=M.FormatVersion(1, 0), producer=M.Producer("pt2format", "0.1.0", "2.13.0"),
                     programs=[program], tensors=tensors, storages=storages, segments=[M.Segment(0, 1)])


# ---------------------------------------------------------------------------
# torch's equivalent (schema dataclasses + its JSON helpers)
# ---------------------------------------------------------------------------

def torch_equivalent(pkg: M.Package):
    import torch._export.serde.schema as S

    def arg(a):
        v = a.value if isinstance(a, (M.Argument, M.NamedArgument)) else a
        if isinstance(v, M.TensorArgument):
            return S.Argument.create(as_tensor=S.TensorArgument(name=v.name))
        if isinstance(v, M.IntListArgument):
            return S.Argument.create(as_ints=list(v.values))
        if isinstance(v, M.IntArgument):
            return S.Argument.create(as_int=v.value)
        if isinstance(v, M.FloatArgument):
            return S.Argument.create(as_float=v.value)
        if isinstance(v, M.BoolArgument):
            return S.Argument.create(as_bool=v.value)
        if isinstance(v, M.StringArgument):
            return S.Argument.create(as_string=v.value)
        raise TypeError(type(v))

    def symint(s):
        return S.SymInt.create(as_int=s.value)

    prog = pkg.programs[0]
    g = prog.graph
    nodes = []
    for n in g.nodes:
        md = n.metadata
        meta = {
            "stack_trace": md.stack_trace,
            "nn_module_stack": ";".join(f"{e.key},{e.path},{e.type_name}" for e in md.nn_module_stack),
            "source_fn_stack": ";".join(f"{e.name},{e.target}" for e in md.source_fn_stack),
            "torch_fn": f"{md.torch_fn.name};{md.torch_fn.target}",
        }
        nodes.append(S.Node(target=n.target, name=n.name, metadata=meta, is_hop_single_tensor_return=None,
                            inputs=[S.NamedArgument(name=a.name, arg=arg(a), kind=S.ArgumentKind(a.kind)) for a in n.inputs],
                            outputs=[arg(o) for o in n.outputs]))
    tvals = {tv.name: S.TensorMeta(dtype=S.ScalarType.FLOAT, sizes=[symint(s) for s in tv.meta.sizes],
                                   strides=[symint(s) for s in tv.meta.strides], storage_offset=symint(tv.meta.storage_offset),
                                   requires_grad=tv.meta.requires_grad, device=S.Device(type="cpu", index=None),
                                   layout=S.Layout.Strided)
             for tv in g.tensor_values}
    graph = S.Graph(inputs=[arg(a) for a in g.inputs], outputs=[arg(a) for a in g.outputs], nodes=nodes,
                    tensor_values=tvals, sym_int_values={}, sym_bool_values={}, is_single_tensor_return=False,
                    custom_obj_values={}, sym_float_values={})
    specs = []
    for s in prog.signature.input_specs:
        k = s.spec
        if isinstance(k, M.InputToParameterSpec):
            specs.append(S.InputSpec.create(parameter=S.InputToParameterSpec(
                arg=S.TensorArgument(name=k.arg.name), parameter_name=k.parameter_name)))
        else:
            specs.append(S.InputSpec.create(user_input=S.UserInputSpec(arg=arg(k.arg))))
    outs = [S.OutputSpec.create(user_output=S.UserOutputSpec(arg=arg(s.spec.arg))) for s in prog.signature.output_specs]
    gm = S.GraphModule(graph=graph, signature=S.GraphSignature(input_specs=specs, output_specs=outs),
                       module_call_graph=[S.ModuleCallEntry(fqn="", signature=None)], metadata={},
                       treespec_namedtuple_fields={})
    return S.ExportedProgram(graph_module=gm, opset_version={"aten": 10}, range_constraints={},
                             schema_version=S.SchemaVersion(major=S.SCHEMA_VERSION[0], minor=S.SCHEMA_VERSION[1]),
                             verifiers=["ATEN"], torch_version="2.13.0", guards_code=[])


def torch_encode(ep) -> bytes:
    from torch._export.serde.serialize import EnumEncoder, _dataclass_to_dict

    return json.dumps(_dataclass_to_dict(ep), cls=EnumEncoder).encode("utf-8")


def torch_decode(data: bytes):
    import torch._export.serde.schema as S
    from torch._export.serde.serialize import _dict_to_dataclass

    return _dict_to_dataclass(S.ExportedProgram, json.loads(data.decode("utf-8")))


# ---------------------------------------------------------------------------

def best_of(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def count_objects(obj) -> int:
    n, stack = 0, [obj]
    while stack:
        o = stack.pop()
        n += 1
        for f in type(o).FIELDS:
            v = getattr(o, f[0])
            if f[2] in ("table", "struct", "union") and v is not None:
                stack.append(v)
            elif f[2] == "vector" and f[3] in ("table", "struct"):
                stack.extend(v)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[700, 20000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true", help="skip torch's serde reference")
    ap.add_argument("--schema-max-nodes", type=int, default=5000,
                    help="time JSON decode with the jsonschema pass (~45 us per object) up to this size")
    args = ap.parse_args(argv)
    print(f"{'nodes':>6} {'objects':>8} {'codec':<12} {'encode ms':>10} {'decode ms':>10} {'size KiB':>9}  target")
    for n in args.nodes:
        pkg = synthetic_package(n)
        objs = count_objects(pkg)
        repeat = args.repeat if n <= 5000 else max(1, args.repeat // 2)
        for enc in C.ENCODINGS:
            data = C.encode(pkg, enc)
            assert C.decode(data, enc) == pkg
            te = best_of(lambda: C.encode(pkg, enc), repeat)
            td = best_of(lambda: C.decode(data, enc), repeat)
            ok = "" if n > 1000 else ("ok" if te < 0.05 and td < 0.02 else "MISSED (enc<50, dec<20)")
            print(f"{n:>6} {objs:>8} {enc:<12} {te * 1e3:>10.1f} {td * 1e3:>10.1f} {len(data) / 1024:>9.0f}  {ok}")
            if enc == "json" and n <= args.schema_max_nodes:
                td = best_of(lambda: C.decode(data, enc, json_schema=True), 1)
                print(f"{n:>6} {objs:>8} {'json+schema':<12} {'':>10} {td * 1e3:>10.1f} {'':>9}  "
                      "decode with the jsonschema pass as validate() runs it (one run)")
        if not args.no_torch:
            ep = torch_equivalent(pkg)
            data = torch_encode(ep)
            te = best_of(lambda: torch_encode(ep), max(1, repeat // 2))
            td = best_of(lambda: torch_decode(data), max(1, repeat // 2))
            print(f"{n:>6} {'':>8} {'torch json':<12} {te * 1e3:>10.1f} {td * 1e3:>10.1f} {len(data) / 1024:>9.0f}  reference")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
