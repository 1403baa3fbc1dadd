"""pt2format.open (pt2format._open.LazyFile): names, signatures, zero-copy tensors, metadata, extra files."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest
import torch

import pt2format


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("steps", torch.arange(6, dtype=torch.int64).reshape(2, 3))
        self.register_buffer("bf", torch.randn(5).to(torch.bfloat16))

    def forward(self, x):
        return self.lin(x) + self.steps.sum() + self.bf.float().sum()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    torch.manual_seed(0)
    ep = torch.export.export(_Model(), (torch.randn(2, 4),))
    path = tmp_path_factory.mktemp("open") / "m.pt2f"
    pt2format.save(ep, path, extra_files={"cfg.json": b'{"a": 1}'}, metadata={"author": "tests"})
    return ep, path


def test_names_signature_metadata_extra_files(saved):
    ep, path = saved
    with pt2format.open(path) as f:
        assert f.programs() == ["forward"]
        assert f.keys() == sorted(ep.state_dict)
        assert isinstance(f.signature(), pt2format.schema.GraphSignature)
        assert isinstance(f.program("forward"), pt2format.schema.Program)
        assert f.metadata() == {"author": "tests"}
        assert f.extra_files() == {"cfg.json": b'{"a": 1}'}
        assert bytes(f.extra_file("cfg.json")) == b'{"a": 1}'
        with pytest.raises(KeyError):
            f.get_tensor("nope")
        with pytest.raises(KeyError, match="no program named"):
            f.program("decode")


def test_get_tensor_torch_equals_state_dict_and_is_zero_copy(saved):
    ep, path = saved
    with pt2format.open(path) as f:
        for name, want in ep.state_dict.items():
            got = f.get_tensor(name)
            assert got.dtype == want.dtype and torch.equal(got.detach(), want.detach()), name
        a, b = f.get_tensor("lin.weight"), f.get_tensor("lin.weight")
        assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        view = f._file.storage_view(f.package.tensors[f.program().state[0].tensor].storage)
        ptrs = {f.get_tensor(n).untyped_storage().data_ptr() for n in f.keys()}
        assert np.frombuffer(view, np.uint8).ctypes.data in ptrs  # tensors sit on the mapped bytes


def test_get_tensor_numpy(saved):
    ep, path = saved
    with pt2format.open(path, framework="np") as f:
        arr = f.get_tensor("steps")
        assert isinstance(arr, np.ndarray) and not arr.flags.writeable and not arr.flags.owndata
        np.testing.assert_array_equal(arr, ep.state_dict["steps"].numpy())
        np.testing.assert_array_equal(f.get_tensor("lin.weight"), ep.state_dict["lin.weight"].detach().numpy())
        with pytest.raises(TypeError, match="BFLOAT16.*framework='pt'"):
            f.get_tensor("bf")
        assert torch.equal(f.get_tensor("bf", framework="pt"), ep.state_dict["bf"])
    with pytest.raises(ValueError, match="framework"):
        pt2format.open(path, framework="tf")


def test_open_from_bytes_and_stream(saved):
    ep, path = saved
    data = path.read_bytes()
    for src in (data, io.BytesIO(data)):
        with pt2format.open(src) as f:
            assert torch.equal(f.get_tensor("steps"), ep.state_dict["steps"])


def test_numpy_open_needs_no_torch_and_builds_no_program(saved):
    _, path = saved
    code = ("import sys, pt2format\n"
            "f = pt2format.open(sys.argv[1], framework='np')\n"
            "print(f.get_tensor('steps').sum(), f.metadata()['author'])\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["15", "tests"]


def test_numpy_refuses_sparse_and_subclass_rows(tmp_path):
    """Their rows are no view of a storage (schema 1.1 composite rows): numpy gets a TypeError, torch the tensor."""
    from subclass_samples import PairTensor, pair

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("sparse", torch.eye(3).to_sparse())
            self.register_buffer("sub", pair(3))

        def forward(self, x):
            return torch.sparse.mm(self.sparse, x) + self.sub.a

    m = M()
    sparse, sub = m.sparse, m.sub
    path = tmp_path / "p.pt2f"
    pt2format.save(torch.export.export(m, (torch.randn(3, 3),)), path, progress=False, fsync=False)
    with pt2format.open(path, framework="np") as f:
        with pytest.raises(TypeError, match="sparse tensor.*framework='pt'"):
            f.get_tensor("sparse")
        with pytest.raises(TypeError, match="tensor subclass.*framework='pt'"):
            f.get_tensor("sub")
        assert torch.equal(f.get_tensor("sparse", framework="pt").to_dense(), sparse.to_dense())
        with pytest.raises(pt2format.LoadError, match="PairTensor is not allowed"):
            f.get_tensor("sub", framework="pt")
    assert PairTensor is type(sub)
