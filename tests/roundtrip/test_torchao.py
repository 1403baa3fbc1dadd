"""torchao's weight workflows round-trip bit-exactly on CPU (issue 20, item 4).

With torchao imported, its tensor subclasses and the enums and dataclasses
their flatten contexts hold are on torch's safe-globals list, so
`pt2format.load` rebuilds them with no `allow_subclasses`, as
`torch.load(weights_only=True)` does. Each loaded program is compared with
torch's original `ep.module()`: outputs bit for bit, and every state entry
(class, inner tensors, flatten context). A workflow that torchao or torch
cannot run on CPU is skipped with their own error as the reason.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import pt2format

torchao = pytest.importorskip("torchao")  # a declared test dependency (pyproject.toml, test extra)
from torchao import quantization as tq  # noqa: E402

warnings.filterwarnings("ignore", message=".*is an Enum subclass and is now natively supported.*")


def _int4_weight_only():
    """torchao's Int4WeightOnlyConfig, in the first packing format that works on this machine."""
    errors = []
    from torchao.quantization.quantize_.workflows import Int4PackingFormat

    for fmt in Int4PackingFormat:
        cfg = tq.Int4WeightOnlyConfig(group_size=32, int4_packing_format=fmt)
        try:
            m = _model(torch.bfloat16)
            tq.quantize_(m, cfg)
            return cfg
        except Exception as e:  # torchao's own refusal on this machine
            errors.append(f"{fmt.value}: {type(e).__name__}: {e}")
    pytest.skip("torchao cannot build int4 weight-only tensors on CPU: " + "; ".join(errors))


WORKFLOWS = {
    "int8_weight_only": (lambda: tq.Int8WeightOnlyConfig(), torch.float32),
    "int4_weight_only": (_int4_weight_only, torch.bfloat16),
    # torchao's CPU int4 weight-only path: int4 values unpacked to int8 (IntxUnpackedToInt8Tensor)
    "intx_int4_weight_only": (lambda: tq.IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=tq.PerGroup(32)),
                              torch.bfloat16),
    "float8_weight_only": (lambda: tq.Float8WeightOnlyConfig(), torch.float32),
    "int8_dynamic_activation_int8_weight": (lambda: tq.Int8DynamicActivationInt8WeightConfig(), torch.float32),
}


def _model(dtype):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128, dtype=dtype), torch.nn.ReLU(),
                               torch.nn.Linear(128, 32, dtype=dtype)).eval()


def _exported(name):
    config, dtype = WORKFLOWS[name]
    cfg = config()
    m = _model(dtype)
    try:
        tq.quantize_(m, cfg)
    except Exception as e:
        pytest.skip(f"torchao cannot quantize {name} on CPU: {type(e).__name__}: {e}")
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(1), dtype=dtype)
    try:
        ep = torch.export.export(m, (x,))
    except Exception as e:
        pytest.skip(f"torch cannot export {name} on CPU: {type(e).__name__}: {e}")
    return ep, x


def _same_state(want, got):
    assert type(got) is type(want), (type(got), type(want))
    if type(want) in (torch.Tensor, torch.nn.Parameter):
        assert got.dtype == want.dtype and torch.equal(got, want)
        return
    attrs, ctx = want.__tensor_flatten__()
    attrs2, ctx2 = got.__tensor_flatten__()
    assert attrs2 == attrs and ctx2 == ctx
    assert {k: type(v) for k, v in ctx2.items()} == {k: type(v) for k, v in ctx.items()}
    for a in attrs:
        _same_state(getattr(want, a), getattr(got, a))


@pytest.mark.parametrize("encoding", ["flatbuffers", "json"])
@pytest.mark.parametrize("name", list(WORKFLOWS))
def test_torchao_workflow_roundtrips_bit_exactly(tmp_path, name, encoding):
    ep, x = _exported(name)
    weight = ep.state_dict["0.weight"]
    assert type(weight).__module__.startswith("torchao."), type(weight)
    path = tmp_path / "q.pt2f"
    pt2format.save(ep, path, progress=False, fsync=False, encoding=encoding)
    ep2 = pt2format.load(path)  # no allow_subclasses: torchao's classes are on torch's safe-globals list
    with torch.no_grad():
        want, got = ep.module()(x), ep2.module()(x)
        got_module = pt2format.load_module(path)(x)
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert torch.equal(got_module, want)
    assert list(ep2.state_dict) == list(ep.state_dict)
    for k in ep.state_dict:
        _same_state(ep.state_dict[k], ep2.state_dict[k])
    again = tmp_path / "again.pt2f"
    pt2format.save(ep2, again, progress=False, fsync=False, encoding=encoding)
    assert again.read_bytes() == path.read_bytes()


def test_torchao_classes_are_refused_when_not_trusted(tmp_path):
    """Trust comes from the safe-globals list: without it, the class is named and nothing is rebuilt."""
    ep, _ = _exported("float8_weight_only")
    path = tmp_path / "q.pt2f"
    pt2format.save(ep, path, progress=False, fsync=False)
    cls = type(ep.state_dict["0.weight"])
    saved = torch.serialization.get_safe_globals()
    torch.serialization.clear_safe_globals()
    try:
        with pytest.raises(pt2format.errors.LoadError, match="Float8Tensor is not allowed"):
            pt2format.load(path)
        with pytest.raises(pt2format.errors.LoadError, match="KernelPreference is not trusted"):
            pt2format.load(path, allow_subclasses=[cls])
    finally:
        torch.serialization.add_safe_globals(saved)
