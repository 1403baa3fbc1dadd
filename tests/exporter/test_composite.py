"""Quantized, sparse and wrapper-subclass tensors (exporter/_composite.py, loaders/_composite.py) round-trip.

Every comparison is against the torch tensor that was saved: `torch.equal`
on the integer representation and the per-channel parameters, scale and
zero point exactly, sparse components and flags, a subclass's inner tensors
and context; programs give torch eager's outputs.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import pt2format
from pt2format._container.header import FEATURE_COMPOSITE_TENSORS
from pt2format.errors import ExportError
from pt2format.loaders._weights import read_weights
from subclass_samples import BadContextTensor, PairTensor, pair

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
warnings.filterwarnings("ignore", message=".*Sparse (CSR|CSC|BSR|BSC) tensor support is in beta.*")

W = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))


def _quantized() -> dict:
    g = torch.Generator().manual_seed(1)
    return {
        "per_tensor_quint8": torch.quantize_per_tensor(W, 0.05, 7, torch.quint8),
        "per_tensor_qint8": torch.quantize_per_tensor(W, 0.02, -3, torch.qint8),
        "per_tensor_qint32": torch.quantize_per_tensor(W, 1e-4, 11, torch.qint32),
        "per_channel_axis0": torch.quantize_per_channel(W, torch.rand(4, generator=g, dtype=torch.float64) + 0.01,
                                                        torch.tensor([0, 3, -2, 1]), 0, torch.qint8),
        "per_channel_axis1": torch.quantize_per_channel(W, torch.rand(6, generator=g, dtype=torch.float64) + 0.01,
                                                        torch.arange(6), 1, torch.quint8),
        "float_qparams": torch.quantize_per_channel(W, torch.rand(4, generator=g) + 0.01, torch.rand(4, generator=g),
                                                    0, torch.quint8),
        "strided_view": torch.quantize_per_tensor(W, 0.05, 7, torch.quint8)[:, 1::2],
    }


def _sparse() -> dict:
    d = W * (W.abs() > 0.7)
    return {
        "coo": d.to_sparse(),
        "coo_hybrid": torch.stack([d, -d], dim=-1).to_sparse(sparse_dim=2),
        "coo_uncoalesced": torch.sparse_coo_tensor(torch.tensor([[0, 0, 3], [1, 1, 4]]), torch.tensor([1.0, 2.0, 3.0]),
                                                   (4, 6)),
        "csr": d.to_sparse_csr(),
        "csc": d.to_sparse_csc(),
        "bsr": d.to_sparse_bsr((2, 3)),
        "bsc": d.to_sparse_bsc((2, 2)),
        "csr_int": (d * 10).to(torch.int32).to_sparse_csr(),
    }


def _roundtrip(tensors: dict, tmp_path, **load_kw) -> dict:
    path = tmp_path / "w.pt2f"
    pt2format.save_weights(tensors, path, progress=False, fsync=False)
    return read_weights(path, **load_kw)


def _same_quantized(want: torch.Tensor, got: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape and got.qscheme() == want.qscheme()
    assert torch.equal(got.int_repr(), want.int_repr())
    if want.qscheme() == torch.per_tensor_affine:
        assert got.q_scale() == want.q_scale() and got.q_zero_point() == want.q_zero_point()
    else:
        assert got.q_per_channel_axis() == want.q_per_channel_axis()
        assert torch.equal(got.q_per_channel_scales(), want.q_per_channel_scales())
        assert torch.equal(got.q_per_channel_zero_points(), want.q_per_channel_zero_points())
    assert torch.equal(got.dequantize(), want.dequantize())


@pytest.mark.parametrize("name", list(_quantized()))
def test_quantized_roundtrip_exact(tmp_path, name):
    want = _quantized()[name]
    _same_quantized(want, _roundtrip({name: want}, tmp_path)[name])


def test_quantized_dtype_is_not_hidden_from_old_readers(tmp_path):
    """The row's dtype is the quantized one (a 1.0 reader refuses it), not the integer dtype."""
    path = tmp_path / "w.pt2f"
    pt2format.save_weights({"q": _quantized()["per_tensor_quint8"]}, path, progress=False, fsync=False)
    pkg = pt2format.read(path).package
    from pt2format._generated.model import ScalarType

    assert {t.dtype for t in pkg.tensors} == {ScalarType.QUINT8}
    assert not pkg.required_features & FEATURE_COMPOSITE_TENSORS


@pytest.mark.parametrize("name", list(_sparse()))
def test_sparse_roundtrip_exact(tmp_path, name):
    want = _sparse()[name]
    got = _roundtrip({name: want}, tmp_path)[name]
    assert got.layout == want.layout and got.dtype == want.dtype and got.shape == want.shape
    if want.layout == torch.sparse_coo:
        assert got.is_coalesced() == want.is_coalesced()
        assert torch.equal(got._indices(), want._indices()) and torch.equal(got._values(), want._values())
        assert got.sparse_dim() == want.sparse_dim() and got.dense_dim() == want.dense_dim()
    else:
        for comp in (("crow_indices", "col_indices") if want.layout in (torch.sparse_csr, torch.sparse_bsr)
                     else ("ccol_indices", "row_indices")):
            assert torch.equal(getattr(got, comp)(), getattr(want, comp)())
        assert torch.equal(got.values(), want.values())
    assert torch.equal(got.to_dense(), want.to_dense())


def test_sparse_sets_feature_bit(tmp_path):
    path = tmp_path / "w.pt2f"
    pt2format.save_weights({"coo": _sparse()["coo"]}, path, progress=False, fsync=False)
    f = pt2format.read(path)
    assert f.package.required_features & FEATURE_COMPOSITE_TENSORS
    assert f.header.required_features & FEATURE_COMPOSITE_TENSORS


def test_subclass_weights_roundtrip(tmp_path):
    want = pair(5, seed=3)
    got = _roundtrip({"p": want}, tmp_path, allow_subclasses=[PairTensor])["p"]
    assert type(got) is PairTensor
    assert torch.equal(got.a, want.a) and torch.equal(got.b, want.b)
    assert got.tag == want.tag and got.extra == want.extra
    assert got.extra["dtype"] is torch.float16 and got.extra["device"] == torch.device("cpu")


def test_subclass_inner_tensors_shared_with_plain_state(tmp_path):
    """An inner tensor that is also plain state is stored once and aliases after load."""
    inner = torch.randn(4)
    want = PairTensor(inner, inner * 2)
    path = tmp_path / "w.pt2f"
    pt2format.save_weights({"p": want, "inner": inner}, path, progress=False, fsync=False)
    got = read_weights(path, allow_subclasses=[PairTensor])
    assert got["p"].a.untyped_storage().data_ptr() == got["inner"].untyped_storage().data_ptr()
    assert len(pt2format.read(path).package.storages) == 2


def test_subclass_context_must_be_plain(tmp_path):
    bad = BadContextTensor(torch.randn(2), torch.randn(2))
    with pytest.raises(ExportError, match="no structured form") as e:
        pt2format.save_weights({"bad": bad}, tmp_path / "w.pt2f", progress=False, fsync=False)
    assert "context" in str(e.value.path)
    assert not (tmp_path / "w.pt2f").exists()


def test_subclass_context_may_not_hold_tensors(tmp_path):
    t = PairTensor(torch.randn(2), torch.randn(2), extra={"t": torch.ones(1)})
    with pytest.raises(ExportError, match="tensors are not allowed here"):
        pt2format.save_weights({"t": t}, tmp_path / "w.pt2f", progress=False, fsync=False)


def test_local_subclass_refused(tmp_path):
    class Local(PairTensor):
        pass

    with pytest.raises(ExportError, match="inside a function"):
        pt2format.save_weights({"t": Local(torch.randn(2), torch.randn(2))}, tmp_path / "w.pt2f", progress=False,
                               fsync=False)


# --------------------------------------------------------------------------- programs


class SubclassModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(pair(3, seed=4), requires_grad=False)
        self.register_buffer("b", pair(3, seed=5))

    def forward(self, x):
        return x * self.p + self.b


class SparseModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        s = _sparse()
        self.register_buffer("coo", s["coo"])
        self.register_buffer("csr", s["csr"])
        self.unc = s["coo_uncoalesced"]

    def forward(self, x):
        return torch.sparse.mm(self.coo, x) + self.csr @ x + torch.sparse.mm(self.unc, x)


def _save_load(ep, tmp_path, **kw):
    path = tmp_path / "p.pt2f"
    pt2format.save(ep, path, progress=False, fsync=False)
    return path, pt2format.load(path, **kw)


def test_subclass_program_outputs_equal_eager(tmp_path):
    m = SubclassModule()
    x = torch.randn(3)
    ep = torch.export.export(m, (x,))
    path, ep2 = _save_load(ep, tmp_path, allow_subclasses=[PairTensor])
    want, got = m(x), ep2.module()(x)
    assert type(got) is PairTensor and torch.equal(got.a, want.a) and torch.equal(got.b, want.b)
    assert isinstance(ep2.state_dict["p"], torch.nn.Parameter) and type(ep2.state_dict["p"]) is PairTensor
    pt2format.save(ep2, tmp_path / "again.pt2f", progress=False, fsync=False)
    assert (tmp_path / "again.pt2f").read_bytes() == path.read_bytes()


def test_sparse_program_outputs_equal_eager(tmp_path):
    m = SparseModule()
    x = torch.randn(6, 2)
    ep = torch.export.export(m, (x,), strict=True)
    path, ep2 = _save_load(ep, tmp_path)
    assert torch.equal(ep2.module()(x), m(x))
    assert ep2.constants["unc"].is_coalesced() is False
    pt2format.save(ep2, tmp_path / "again.pt2f", progress=False, fsync=False)
    assert (tmp_path / "again.pt2f").read_bytes() == path.read_bytes()
    # run_decompositions works on the loaded program as on the original
    assert torch.equal(ep2.run_decompositions().module()(x), ep.run_decompositions().module()(x))


def test_quantized_state_is_not_exportable_by_torch():
    """Why quantized tensors are tested as weights: torch 2.13 cannot export them as program state."""
    class Q(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("q", _quantized()["per_tensor_quint8"])

        def forward(self, x):
            return x + self.q.dequantize().sum()

    with pytest.raises(Exception, match="quantized"):
        torch.export.export(Q(), (torch.randn(2),))


def test_quantized_weight_set_attaches_to_program(tmp_path):
    """Quantized tensors ride along a program as a named weight set."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", torch.randn(4, 6))

        def forward(self, x):
            return x @ self.w.T

    ep = torch.export.export(Net(), (torch.randn(2, 6),))
    q = _quantized()
    path = tmp_path / "p.pt2f"
    pt2format.save(ep, path, progress=False, fsync=False, weight_sets={"int8": {"w": q["per_channel_axis0"]}})
    got = read_weights(path, weight_set="int8")["w"]
    _same_quantized(q["per_channel_axis0"], got)


# --------------------------------------------------------------------------- torchao


def test_torchao_int8_weight_only_roundtrip(tmp_path):
    import torchao  # a declared test dependency (pyproject.toml, test extra)
    from torchao.quantization import Int8Tensor, Int8WeightOnlyConfig, quantize_

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval()
    quantize_(m, Int8WeightOnlyConfig())
    assert type(m[0].weight) is Int8Tensor, torchao.__version__
    x = torch.randn(4, 16)
    ep = torch.export.export(m, (x,))
    path, ep2 = _save_load(ep, tmp_path, allow_subclasses=[Int8Tensor])
    with torch.no_grad():
        assert torch.equal(ep2.module()(x), m(x))
    w, w2 = ep.state_dict["0.weight"], ep2.state_dict["0.weight"]
    assert type(w2) is Int8Tensor
    attrs, ctx = w.__tensor_flatten__()
    attrs2, ctx2 = w2.__tensor_flatten__()
    assert attrs == attrs2 and ctx == ctx2
    for a in attrs:
        assert torch.equal(getattr(w, a), getattr(w2, a))
    pt2format.save(ep2, tmp_path / "again.pt2f", progress=False, fsync=False)
    assert (tmp_path / "again.pt2f").read_bytes() == path.read_bytes()
