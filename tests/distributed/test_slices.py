"""One process: `open(device=)`, `get_slice` against torch's own indexing, the chunk runs of a multi-rank save, DCP round trips."""

from __future__ import annotations

import itertools
import os

import pytest
import torch

import pt2format
from pt2format._ranked_write import chunk_runs


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(12, 10)
        self.register_buffer("b", torch.randn(3, 4, 5))
        self.h = torch.nn.Parameter(torch.randn(8).to(torch.bfloat16), requires_grad=False)

    def forward(self, x):
        return self.a(x) + self.b.sum() + self.h.float().sum()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import safetensors.torch

    d = tmp_path_factory.mktemp("slices")
    torch.manual_seed(0)
    ep = torch.export.export(_Model(), (torch.randn(2, 12),))
    state = {k: v.detach().clone() for k, v in ep.state_dict.items()}
    out = {"state": state, "ep": ep}
    out["single"] = str(d / "single.pt2f")
    pt2format.save(ep, out["single"], progress=False)
    out["sharded"] = str(d / "sharded.pt2f")
    pt2format.save(ep, out["sharded"], progress=False, max_shard_size=256)
    safetensors.torch.save_file(state, str(d / "w.safetensors"))
    out["external"] = str(d / "external.pt2f")
    pt2format.save(ep, out["external"], progress=False, external_data=str(d / "w.safetensors"))
    return out


INDEXES = [(slice(2, 7), slice(None)), (slice(None), slice(3, 9)), (slice(1, 9, 3), 4), (Ellipsis, 2), 0,
           (slice(0, 0),)]


@pytest.mark.parametrize("source", ["single", "sharded", "external"])
def test_get_slice_equals_torch_indexing(files, source):
    with pt2format.open(files[source]) as f:
        assert sorted(f.keys()) == sorted(files["state"])
        for name, want in files["state"].items():
            s = f.get_slice(name)
            assert s.get_shape() == list(want.shape)
            for index in INDEXES:
                try:
                    expected = want[index]
                except IndexError:
                    continue
                got = s[index]
                assert got.dtype == want.dtype and torch.equal(got, expected), (name, index)
                got.add_(0)  # the caller owns a writable copy, not a view of the file


def test_get_dtype_uses_safetensors_names(files):
    from safetensors import safe_open

    path = os.path.join(os.path.dirname(files["single"]), "w.safetensors")
    with pt2format.open(files["single"]) as f, safe_open(path, framework="pt") as g:
        for name in files["state"]:
            assert f.get_slice(name).get_dtype() == g.get_slice(name).get_dtype()


def test_open_device_and_numpy(files):
    with pt2format.open(files["single"], device="meta") as f:
        assert f.get_tensor("a.weight").device.type == "meta"
        assert f.get_slice("a.weight")[0:2].shape == (2, 12)
    with pt2format.open(files["single"], framework="np") as f:
        assert (f.get_slice("b")[1, :, 2:4] == files["state"]["b"][1, :, 2:4].numpy()).all()
    with pytest.raises(ValueError, match="numpy"):
        pt2format.open(files["single"], framework="np", device="meta")


def test_get_slice_refuses_gathering_indexes(files):
    with pt2format.open(files["single"]) as f:
        with pytest.raises(TypeError):
            f.get_slice("a.weight")[torch.tensor([0, 2])]
        with pytest.raises(ValueError):
            f.get_slice("a.weight")[::-1]


@pytest.mark.parametrize("shape", [(6,), (4, 6), (3, 4, 5), ()])
def test_chunk_runs_place_a_chunk_as_torch_does(shape):
    """The runs of a chunk, read from the row-major whole, give the chunk's own row-major elements."""
    whole = torch.arange(max(1, torch.Size(shape).numel()), dtype=torch.int32).reshape(shape)
    flat = whole.reshape(-1).view(torch.uint8)
    splits = [sorted({0, n // 2, n}) for n in shape]
    for bounds in itertools.product(*[list(zip(s, s[1:])) for s in splits]):
        offsets = [b for b, _ in bounds]
        sizes = [e - b for b, e in bounds]
        chunk = whole
        for dim, (b, e) in enumerate(bounds):
            chunk = chunk.narrow(dim, b, e - b)
        got = b"".join(bytes(flat[o:o + n].numpy()) for o, n in chunk_runs(list(shape), offsets, sizes, 4))
        assert got == bytes(chunk.contiguous().reshape(-1).view(torch.uint8).numpy())


def test_dcp_save_and_load_one_process(files, tmp_path):
    """dcp.save without a process group: a weights-only file that open() and dcp.load read back as saved."""
    import torch.distributed.checkpoint as dcp

    import pt2format.dcp

    state = files["state"]
    path = str(tmp_path / "w.pt2f")
    dcp.save(state, storage_writer=pt2format.dcp.StorageWriter(path), no_dist=True)
    pt2format.validate(path)
    with pt2format.open(path) as f:
        for k, v in state.items():
            assert torch.equal(f.get_tensor(k), v)
    back = {k: torch.zeros_like(v) for k, v in state.items()}
    dcp.load(back, storage_reader=pt2format.dcp.StorageReader(path), no_dist=True)
    for k, v in state.items():
        assert torch.equal(back[k], v)


def test_dcp_save_refuses_non_tensors(tmp_path):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException

    import pt2format.dcp

    with pytest.raises((pt2format.ExportError, CheckpointException)) as info:
        dcp.save({"w": torch.ones(2), "step": {"x": [1, 2]}},
                 storage_writer=pt2format.dcp.StorageWriter(str(tmp_path / "x.pt2f")), no_dist=True)
    from pt2format.loaders._sharded import first_failure

    assert isinstance(first_failure(info.value), pt2format.ExportError)
    assert not os.path.exists(tmp_path / "x.pt2f")


def test_dcp_save_with_program_checks_shapes(files, tmp_path):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException

    import pt2format.dcp
    from pt2format.loaders._sharded import first_failure

    skeleton = pt2format.load(files["single"], weights=False)
    bad = dict(files["state"])
    bad["a.weight"] = torch.zeros(10, 11)
    with pytest.raises((pt2format.ExportError, CheckpointException)) as info:
        dcp.save(bad, storage_writer=pt2format.dcp.StorageWriter(str(tmp_path / "p.pt2f"), program=skeleton),
                 no_dist=True)
    assert isinstance(first_failure(info.value), pt2format.ExportError)
    assert os.listdir(tmp_path) == []  # refused before any rank wrote: no main file, no partial shard


@pytest.mark.parametrize("index", [(slice(2, 7), slice(None)), (slice(None), slice(3, 9)), (1, slice(2, 5)),
                                   (Ellipsis, 4), (slice(1, 9, 3), 4), 0])
def test_slice_byte_ranges_cover_exactly_the_slice(files, index):
    """The bytes a slice asks the kernel for hold exactly the elements torch's indexing picks (or the whole tensor)."""
    whole = files["state"]["a.weight"]
    with pt2format.open(files["single"]) as f:
        s = f.get_slice("a.weight")
        ranges = s._byte_ranges(index)
        st = f.package.storages[f.package.tensors[s._idx].storage]
        flat = torch.arange(whole.numel(), dtype=torch.float32).reshape(whole.shape)
        picked = set(flat[index].reshape(-1).long().tolist())
        covered = {i for off, n in ranges for i in range(off // 4, (off + n) // 4)}
        strided = isinstance(index, tuple) and any(isinstance(i, slice) and (i.step or 1) != 1 for i in index)
        assert picked <= covered
        assert covered == picked or (strided and covered == set(range(whole.numel())))
        assert all(off + n <= st.size for off, n in ranges)
