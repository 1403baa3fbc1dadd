"""Loading quantized, sparse and subclass rows (loaders/_composite.py): trust, and hostile files.

A subclass is rebuilt only when the caller passes its class; a crafted file
(parts pointing forward, sparse indices out of bounds, short per-channel
vectors, a missing feature bit) is a typed error naming where, never a crash
or an out-of-bounds read.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import pt2format
from pt2format._container.header import FEATURE_COMPOSITE_TENSORS, FEATURE_EXTERNAL_FILES, FEATURE_SHARD_FILES
from pt2format._generated import model as m
from pt2format._validate import validate_package
from pt2format.errors import LoadError, UnsupportedFeatureError, ValidationError
from pt2format.loaders._weights import read_weights

from crafting import craft
from subclass_samples import PairTensor, pair

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
warnings.filterwarnings("ignore", message=".*Sparse (CSR|CSC|BSR|BSC) tensor support is in beta.*")


class SubclassModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(pair(3, seed=1), requires_grad=False)

    def forward(self, x):
        return x + self.p


@pytest.fixture(scope="module")
def subclass_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sub") / "p.pt2f"
    ep = torch.export.export(SubclassModule(), (torch.randn(3),))
    pt2format.save(ep, path, progress=False, fsync=False)
    return path


def _weights_file(tmp_path, tensors) -> str:
    path = tmp_path / "w.pt2f"
    pt2format.save_weights(tensors, path, progress=False, fsync=False)
    return path


def test_subclass_not_allowed_names_the_class(subclass_file):
    with pytest.raises(LoadError, match="subclass_samples.PairTensor is not allowed") as e:
        pt2format.load(subclass_file)
    assert e.value.path.endswith("subclass.class_fqn")
    assert e.value.got == "subclass_samples.PairTensor"


def test_subclass_allowed_by_another_class_of_the_same_name_is_refused(subclass_file):
    """Allowing is by class object: a different class named PairTensor elsewhere does not match."""
    other = type("PairTensor", (torch.Tensor,), {"__module__": "elsewhere"})
    with pytest.raises(LoadError, match="not allowed"):
        pt2format.load(subclass_file, allow_subclasses=[other])


def test_subclass_weights_false_without_trust_is_plain_meta(subclass_file):
    ep = pt2format.load(subclass_file, weights=False)
    p = ep.state_dict["p"]
    assert type(p) is torch.nn.Parameter and p.device.type == "meta" and p.shape == (3,)


def test_subclass_weights_false_with_trust_keeps_the_class(subclass_file):
    ep = pt2format.load(subclass_file, weights=False, allow_subclasses=[PairTensor])
    p = ep.state_dict["p"]
    assert type(p) is PairTensor and p.a.device.type == "meta"


def test_allow_subclasses_takes_classes_not_names(subclass_file):
    with pytest.raises(TypeError, match="classes"):
        pt2format.load(subclass_file, allow_subclasses=["subclass_samples.PairTensor"])


def test_subclass_context_is_not_run_or_imported(subclass_file, tmp_path):
    """A class name in the file is only compared with the allowed classes: nothing is imported by name."""
    def mutate(pkg):
        for t in pkg.tensors:
            if t.subclass is not None:
                t.subclass.class_fqn = "os.system"
    bad = craft(subclass_file, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(LoadError, match="os.system is not allowed"):
        pt2format.load(bad, allow_subclasses=[PairTensor])


def test_part_pointing_forward_rejected(subclass_file, tmp_path):
    def mutate(pkg):
        i = next(i for i, t in enumerate(pkg.tensors) if t.subclass is not None)
        pkg.tensors[i].parts[0].tensor = i  # itself: a cycle
    bad = craft(subclass_file, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(ValidationError, match="earlier tensor row") as e:
        pt2format.load(bad, allow_subclasses=[PairTensor])
    assert "parts[0].tensor" in e.value.path


def test_composite_row_without_feature_bit_rejected(subclass_file, tmp_path):
    def mutate(pkg):
        pkg.required_features &= ~FEATURE_COMPOSITE_TENSORS
    bad = craft(subclass_file, tmp_path / "bad.pt2f", mutate)
    with pytest.raises((ValidationError, pt2format.errors.FormatError), match=f"0x{FEATURE_COMPOSITE_TENSORS:x}|required_features"):
        pt2format.load(bad, allow_subclasses=[PairTensor])


def test_reader_without_the_feature_refuses_before_decoding(subclass_file):
    """What a 1.0 reader does with such a file: UnsupportedFeatureError naming the composite-tensor bit."""
    pkg = pt2format.read(subclass_file).package
    with pytest.raises(UnsupportedFeatureError, match=f"0x{FEATURE_COMPOSITE_TENSORS:x}"):
        validate_package(pkg, known_features=FEATURE_SHARD_FILES | FEATURE_EXTERNAL_FILES)


def test_sparse_indices_out_of_bounds_rejected(tmp_path):
    coo = torch.sparse_coo_tensor(torch.tensor([[0, 1], [2, 3]]), torch.tensor([1.0, 2.0]), (4, 4))
    src = _weights_file(tmp_path, {"s": coo})

    def mutate(pkg):
        i = next(i for i, t in enumerate(pkg.tensors) if t.layout == m.Layout.SPARSE_COO)
        pkg.tensors[i].sizes = [2, 2]  # indices 2 and 3 are now outside the tensor
    bad = craft(src, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(LoadError, match="sparse tensor parts are inconsistent"):
        read_weights(bad)


def test_sparse_coalesced_flag_is_checked(tmp_path):
    coo = torch.sparse_coo_tensor(torch.tensor([[0, 0], [1, 1]]), torch.tensor([1.0, 2.0]), (4, 4))
    assert not coo.is_coalesced()
    src = _weights_file(tmp_path, {"s": coo})

    def mutate(pkg):
        for t in pkg.tensors:
            if t.layout == m.Layout.SPARSE_COO:
                t.coalesced = True  # a lie: duplicate indices
    bad = craft(src, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(LoadError, match="inconsistent"):
        read_weights(bad)


def test_sparse_missing_part_rejected(tmp_path):
    src = _weights_file(tmp_path, {"s": torch.eye(3).to_sparse_csr()})

    def mutate(pkg):
        for t in pkg.tensors:
            if t.layout == m.Layout.SPARSE_CSR:
                t.parts = t.parts[1:]
    bad = craft(src, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(LoadError, match="needs exactly the parts"):
        read_weights(bad)


def test_per_channel_scales_too_short_rejected(tmp_path):
    w = torch.randn(4, 3)
    q = torch.quantize_per_channel(w, torch.rand(4, dtype=torch.float64) + 0.1, torch.zeros(4, dtype=torch.int64), 0,
                                   torch.qint8)
    extra = torch.rand(2, dtype=torch.float64)
    src = _weights_file(tmp_path, {"a_short": extra, "q": q})  # entries go in name order: a_short's row first
    changed = []

    def mutate(pkg):
        short = next(e.tensor for e in pkg.weight_sets[0].entries if e.name == "a_short")
        for i, t in enumerate(pkg.tensors):
            if t.quantization is not None and short < i:
                t.quantization.scales = short
                changed.append(i)
    bad = craft(src, tmp_path / "bad.pt2f", mutate)
    assert changed
    with pytest.raises(LoadError, match="one entry per channel"):
        read_weights(bad)


def test_quantized_dtype_without_parameters_rejected(tmp_path):
    src = _weights_file(tmp_path, {"q": torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.quint8)})

    def mutate(pkg):
        for t in pkg.tensors:
            t.quantization = None
    bad = craft(src, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(ValidationError, match="quantization parameters"):
        read_weights(bad)


def test_quantized_on_meta_is_a_load_error(tmp_path):
    from pt2format._api import read
    from pt2format.loaders._state import StateLoader

    src = _weights_file(tmp_path, {"q": torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.quint8)})
    f = read(src)
    with pytest.raises(LoadError, match="meta"):
        StateLoader(f.package, f.storage_view, weights=False).tensor(0)


def test_deeply_nested_parts_rejected(tmp_path):
    """A chain of rows each built from the one before would make the loader recurse without bound."""
    src = _weights_file(tmp_path, {"s": torch.eye(2).to_sparse()})

    def mutate(pkg):
        i = next(i for i, t in enumerate(pkg.tensors) if t.layout == m.Layout.SPARSE_COO)
        row = pkg.tensors[i]
        for _ in range(40):  # each new row's `values` is the previous sparse row
            nxt = m.Tensor(dtype=row.dtype, sizes=list(row.sizes), strides=[], layout=m.Layout.SPARSE_COO,
                           parts=[m.TensorPart(name="indices", tensor=row.parts[0].tensor),
                                  m.TensorPart(name="values", tensor=len(pkg.tensors) - 1)],
                           device=row.device)
            pkg.tensors.append(nxt)
            row = nxt
        pkg.weight_sets[0].entries[0].tensor = len(pkg.tensors) - 1
    bad = craft(src, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(ValidationError, match="nest too deeply"):
        read_weights(bad)
