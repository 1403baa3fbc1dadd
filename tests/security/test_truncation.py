"""A file truncated by another process: `mmap=False` reads it into memory, so it ends in a typed error or not at all.

With the default (mapped) mode, a file that shrinks after it was opened
kills the process with SIGBUS at the next access to the lost pages; every
mmap reader has that limit (SECURITY.md). The control test shows it
happening, so the tests of the in-memory mode can tell the two apart. The
truncations are real (`os.truncate` on the file), made between two reads of
the call through the reader's read hook, so the timing is deterministic.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

import pt2format
from pt2format import _source
from pt2format.errors import FormatError

from pt2f_samples import float_payloads, tiny_package

TIMEOUT = 180


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 64))

    def forward(self, x):
        return self.lin(x) * self.scale


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("truncation")
    model = Net()
    x = torch.randn(3, 64)
    ep = torch.export.export(model, (x,))
    path = d / "net.pt2f"
    pt2format.save(ep, path, fsync=False)
    torch.save(model.lin.weight.detach().clone(), d / "weight.pt")  # torch's own value, for the slice tests
    return path, x, model(x).detach()


def _truncate_during_read(monkeypatch, target, keep: int = 100):
    """After the first read of the file `target`, cut it to `keep` bytes (as another process would)."""
    monkeypatch.setattr(_source, "_READ_CHUNK", 64)  # several reads per file
    real = _source._read_into
    ino = os.stat(target).st_ino
    done = []

    def hook(f, view):
        n = real(f, view)
        if not done and os.fstat(f.fileno()).st_ino == ino:
            done.append(True)
            os.truncate(target, keep)
        return n

    monkeypatch.setattr(_source, "_read_into", hook)
    return done


def _get_slice(path):
    with pt2format.open(path, mmap=False) as f:
        return f.get_slice("lin.weight")[0:8]


def _dcp_load(path):
    """dcp.load in one process, the rank's own error taken out of DCP's CheckpointException."""
    import warnings

    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException

    import pt2format.dcp
    from pt2format.loaders._sharded import first_failure

    state = {"lin.weight": torch.zeros(64, 64), "lin.bias": torch.zeros(64), "scale": torch.zeros(64)}
    try:
        with warnings.catch_warnings():  # one process: DCP says it assumes so
            warnings.filterwarnings("ignore", "torch.distributed is disabled")
            dcp.load(state, storage_reader=pt2format.dcp.StorageReader(path, mmap=False), no_dist=True)
    except CheckpointException as e:
        raise first_failure(e)  # noqa: B904 (the rank's own error)
    return state


ENTRIES = {
    "read": lambda p: pt2format.read(p, mmap=False, verify_data=True),
    "open": lambda p: pt2format.open(p, mmap=False),
    "open.get_slice": _get_slice,
    "load": lambda p: pt2format.load(p, mmap=False),
    "load_module": lambda p: pt2format.load_module(p, mmap=False),
    "validate": lambda p: pt2format.validate(p, mmap=False),
    # DCP itself turns an error of read_metadata into an AssertionError quoting it: the reader is asked directly.
    "dcp.StorageReader": lambda p: _dcp_reader(p).read_metadata(),
}


def _dcp_reader(path):
    import pt2format.dcp

    return pt2format.dcp.StorageReader(path, mmap=False)


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_file_truncated_while_read_is_a_format_error(saved, tmp_path, monkeypatch, entry):
    path = tmp_path / "net.pt2f"
    path.write_bytes(saved[0].read_bytes())
    done = _truncate_during_read(monkeypatch, path)
    with pytest.raises(FormatError, match="shrank while it was being read") as info:
        ENTRIES[entry](path)
    assert done and os.path.getsize(path) == 100
    assert info.value.file == str(path) and info.value.offset == 100  # read up to the new end, then short


def test_shard_truncated_while_read_is_a_format_error(tmp_path, monkeypatch):
    sizes = (64, 64, 64)
    path = tmp_path / "m.pt2f"
    from pt2format import _api

    _api.write_package(path, tiny_package(sizes), float_payloads(sizes), max_shard_size=300, fsync=False)
    with pt2format.read(path) as f:
        shard = tmp_path / f.package.shard_files[-1].name
    _truncate_during_read(monkeypatch, shard)
    with pytest.raises(FormatError, match="shrank while it was being read") as info:
        pt2format.read(path, mmap=False, verify_data=True)
    assert info.value.file == str(shard)


@pytest.mark.parametrize("entry", ["open.get_slice", "dcp.StorageReader"])
def test_shard_truncated_while_a_slice_reads_it_is_a_format_error(tmp_path, monkeypatch, entry):
    """The shard is read when a slice first needs it, after the main file: that read sees the truncation."""
    torch.manual_seed(0)
    path = tmp_path / "net.pt2f"
    pt2format.save(torch.export.export(Net(), (torch.randn(3, 64),)), path, fsync=False, max_shard_size=4096)
    with pt2format.read(path) as f:
        shards = [tmp_path / s.name for s in f.package.shard_files]
        weight_shard = shards[f.package.segments[f.package.storages[
            f.package.tensors[next(e.tensor for e in f.package.programs[0].state if e.name == "lin.weight")]
            .storage].segment].file - 1]
    done = _truncate_during_read(monkeypatch, weight_shard)
    with pytest.raises(FormatError, match="shrank while it was being read") as info:
        (_get_slice if entry == "open.get_slice" else _dcp_load)(path)
    assert done and info.value.file == str(weight_shard)


def test_in_memory_mode_gives_the_same_data(saved, tmp_path):
    path, x, want = saved
    with pt2format.open(path, mmap=False, framework="np") as f:
        for name in f.keys():
            assert bytes(f.get_tensor(name).tobytes()) == bytes(pt2format.open(path).get_tensor(name).detach().numpy())
    assert torch.equal(pt2format.load(path, mmap=False).module()(x), want)
    assert torch.equal(pt2format.load_module(path, mmap=False)(x), want)
    with pt2format.read(path, mmap=False) as f:
        assert all(f.storage_view(i).readonly for i in range(len(f.package.storages)))
    with pt2format.read(path, mmap=False, copy_on_write=True) as f:
        assert not any(f.storage_view(i).readonly for i in range(len(f.package.storages)))


_AFTER = textwrap.dedent("""
    import os, sys, torch, pt2format
    path, mode = sys.argv[1], sys.argv[2]
    x = torch.load(sys.argv[3])
    kw = {{"mmap": False}} if mode == "memory" else {{}}
    {open_it}
    {truncate}
    {use_it}
    torch.save(out, sys.argv[4])
""")

AFTER = {
    "load": ("m = pt2format.load(path, **kw).module()", "out = m(x)"),
    "load_module": ("m = pt2format.load_module(path, **kw)", "out = m(x)"),
    "open": ("f = pt2format.open(path, **kw); w = f.get_tensor('lin.weight')", "out = x @ w.t().clone()"),
    "open.get_slice": ("f = pt2format.open(path, **kw)", "out = f.get_slice('lin.weight')[8:24, :]"),
    "dcp.StorageReader": (
        "import warnings, torch.distributed.checkpoint as dcp, pt2format.dcp\n"
        "class Reader(pt2format.dcp.StorageReader):\n"
        "    def read_data(self, plan, planner):\n"
        "        self._open(); os.truncate(path, 0)   # emptied between planning and reading\n"
        "        return super().read_data(plan, planner)\n"
        "warnings.simplefilter('ignore')",
        "out = {'lin.weight': torch.zeros(64, 64)}\n"
        "dcp.load(out, storage_reader=Reader(path, **kw), no_dist=True)\n"
        "out = out['lin.weight'][8:24]"),
}


@pytest.mark.parametrize("entry", list(AFTER))
def test_file_truncated_after_loading_cannot_crash_the_in_memory_mode(saved, tmp_path, entry):
    """mmap=False: the program keeps working on its own copy; the mapped mode dies with SIGBUS (the limit)."""
    src, x, want = saved
    torch.save(x, tmp_path / "x.pt")
    open_it, use_it = AFTER[entry]
    script = tmp_path / "after.py"
    # dcp.load reopens the file it is given: the truncation comes between its planning and its reads.
    truncate = "" if entry == "dcp.StorageReader" else "os.truncate(path, 0)  # another process empties the file"
    script.write_text(_AFTER.format(open_it=open_it, truncate=truncate, use_it=use_it), encoding="utf-8")
    if entry == "open":
        want = x @ pt2format.open(src).get_tensor("lin.weight").detach().clone().t()
    elif entry in ("open.get_slice", "dcp.StorageReader"):
        want = torch.load(src.parent / "weight.pt")[8:24]
    for mode in ("memory", "mapped"):
        path = tmp_path / f"{mode}.pt2f"
        path.write_bytes(src.read_bytes())
        out = tmp_path / f"{mode}.out"
        proc = subprocess.run([sys.executable, str(script), str(path), mode, str(tmp_path / "x.pt"), str(out)],
                              capture_output=True, text=True, timeout=TIMEOUT)
        if mode == "memory":
            assert proc.returncode == 0, proc.stderr
            assert torch.equal(torch.load(out), want)
        else:  # the documented limit of the default mode: the next access to a lost page is SIGBUS
            assert proc.returncode == -signal.SIGBUS, (proc.returncode, proc.stderr[-2000:])
