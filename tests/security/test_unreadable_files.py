"""A shard or external file that cannot be opened or read is a typed error naming it, through every API.

The main file is the user's path (its OSError is the user's to handle, as
for `open()`); the shard and external files are named by the format, so
whatever the OS says about them (a symlink loop, no permission, a path
component that is not a directory or is too long, too many open files, an
I/O error) becomes a `SegmentError` naming that file and the program entry
that names it, with the OSError as its cause. The errnos that a test can
make for real are made for real (a symlink loop, a link through a regular
file, a link to a 300-byte name, a directory, `RLIMIT_NOFILE` in a
subprocess); EACCES (the tests run as root, which ignores permissions) and
EIO are raised by a wrapped `os.open` / read hook.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import pt2format
from pt2format import _source
from pt2format.errors import FormatError, SegmentError


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 16))

    def forward(self, x):
        return self.lin(x) * self.scale


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{kind: (directory, main file name, names of the files the format names)} for a sharded and an external file."""
    import safetensors.torch

    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("unreadable")
    ep = torch.export.export(Net(), (torch.randn(2, 16),))
    pt2format.save(ep, d / "sharded.pt2f", fsync=False, progress=False, max_shard_size=512)
    safetensors.torch.save_file({k: v.detach().clone() for k, v in ep.state_dict.items()}, str(d / "w.safetensors"))
    pt2format.save(ep, d / "external.pt2f", fsync=False, progress=False, external_data=str(d / "w.safetensors"))
    pt2format.save(ep, d / "skeleton.pt2f", fsync=False, progress=False)
    out = {}
    with pt2format.read(d / "sharded.pt2f") as f:
        out["shard"] = (d, "sharded.pt2f", [s.name for s in f.package.shard_files], "shard_files[")
    with pt2format.read(d / "external.pt2f") as f:
        out["external"] = (d, "external.pt2f", [s.name for s in f.package.external_files], "external_files[")
    assert len(out["shard"][2]) >= 2 and len(out["external"][2]) == 1
    return out


def _copy(saved, kind, tmp_path):
    """The main file of `kind`, its named files and the skeleton, copied into `tmp_path`; (main, named, prefix)."""
    d, main, named, prefix = saved[kind]
    for name in [main, *named, "skeleton.pt2f"]:
        (tmp_path / name).write_bytes((d / name).read_bytes())
    return tmp_path / main, [tmp_path / n for n in named], prefix


def _dcp_load(path, mmap):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException

    import pt2format.dcp
    from pt2format.loaders._sharded import first_failure

    with pt2format.open(path, mmap=mmap) as f:  # shapes only: reading the tensor table opens no data file
        state = {k: torch.zeros(f.get_slice(k).get_shape()) for k in f.keys()}
    try:
        with warnings.catch_warnings():  # one process: DCP says it assumes so
            warnings.filterwarnings("ignore", "torch.distributed is disabled")
            dcp.load(state, storage_reader=pt2format.dcp.StorageReader(path, mmap=mmap), no_dist=True)
    except CheckpointException as e:
        raise first_failure(e)  # noqa: B904 (keeps the rank's own error and its cause)


def _read(path, mmap):
    with pt2format.read(path, mmap=mmap) as f:
        for i in range(len(f.package.storages)):
            bytes(f.storage_view(i))


def _get_slice(path, mmap):
    with pt2format.open(path, mmap=mmap) as f:
        for k in f.keys():
            f.get_slice(k)[:1]


def _get_tensor(path, mmap):
    with pt2format.open(path, mmap=mmap) as f:
        for k in f.keys():
            f.get_tensor(k)


def _attach(path, mmap):
    ep = pt2format.load(path.parent / "skeleton.pt2f", weights=False)
    pt2format.attach_weights(ep, path, mmap=mmap)


#: Every API that reaches the data of a file, as f(main path, mmap).
APIS = {
    "read+storage_view": _read,
    "validate": lambda p, mmap: pt2format.validate(p, mmap=mmap),
    "open.get_slice": _get_slice,
    "open.get_tensor": _get_tensor,
    "load": lambda p, mmap: pt2format.load(p, mmap=mmap),
    "load_module": lambda p, mmap: pt2format.load_module(p, mmap=mmap),
    "attach_weights": _attach,
    "dcp.StorageReader": _dcp_load,
}


def _loop(path):
    os.symlink(path.name, path)  # a link to itself: ELOOP


def _through_file(path):
    os.symlink(path.parent / "skeleton.pt2f" / "x", path)  # a path component that is a regular file: ENOTDIR


def _long_name(path):
    os.symlink("n" * 300, path)  # a component longer than NAME_MAX: ENAMETOOLONG


#: errno -> how to make every named file fail with it, for real.
REAL = {errno.ELOOP: _loop, errno.ENOTDIR: _through_file, errno.ENAMETOOLONG: _long_name}


def _check(info, named, prefix, code):
    err = info.value
    assert type(err) is SegmentError, repr(err)
    assert err.file in {str(p) for p in named}, err
    assert prefix in err.path and "cannot be opened or read" in str(err), err
    assert errno.errorcode[code] in str(err) and isinstance(err.__cause__, OSError) and err.__cause__.errno == code


@pytest.mark.parametrize("api", list(APIS))
@pytest.mark.parametrize("kind", ["shard", "external"])
@pytest.mark.parametrize("code", list(REAL), ids=[errno.errorcode[c] for c in REAL])
def test_named_file_os_error_is_a_segment_error(saved, tmp_path, api, kind, code):
    main, named, prefix = _copy(saved, kind, tmp_path)
    for p in named:
        p.unlink()
        REAL[code](p)
    with pytest.raises(SegmentError) as info:
        APIS[api](main, True)
    _check(info, named, prefix, code)


@pytest.mark.parametrize("api", ["read+storage_view", "open.get_slice", "load", "dcp.StorageReader"])
@pytest.mark.parametrize("mmap", [True, False], ids=["mapped", "in-memory"])
def test_named_file_eacces_is_a_segment_error(saved, tmp_path, monkeypatch, api, mmap):
    """Root ignores file modes, so the permission error is raised by os.open itself, for the named files only."""
    main, named, prefix = _copy(saved, "shard", tmp_path)
    real_open = os.open
    refused = {str(p) for p in named}

    def denying_open(path, *args, **kw):
        if os.fspath(path) in refused:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, *args, **kw)

    monkeypatch.setattr(os, "open", denying_open)
    with pytest.raises(SegmentError) as info:
        APIS[api](main, mmap)
    _check(info, named, prefix, errno.EACCES)


@pytest.mark.parametrize("api", ["read+storage_view", "open.get_slice", "load_module", "dcp.StorageReader"])
@pytest.mark.parametrize("kind", ["shard", "external"])
def test_named_file_eio_while_read_is_a_segment_error(saved, tmp_path, monkeypatch, api, kind):
    """mmap=False reads the named files: an I/O error in a read (a failing disk) is the named file's error."""
    main, named, prefix = _copy(saved, kind, tmp_path)
    inodes = {os.stat(p).st_ino for p in named}
    real = _source._read_into

    def failing_read(f, view):
        if os.fstat(f.fileno()).st_ino in inodes:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(f, view)

    monkeypatch.setattr(_source, "_read_into", failing_read)
    with pytest.raises(SegmentError) as info:
        APIS[api](main, False)
    _check(info, named, prefix, errno.EIO)


@pytest.mark.parametrize("api", ["read+storage_view", "open.get_slice", "load"])
def test_named_file_that_is_a_directory_is_a_format_error(saved, tmp_path, api):
    """Opening a directory succeeds on Linux (no EISDIR); the regular-file check refuses it, naming the file."""
    main, named, _ = _copy(saved, "shard", tmp_path)
    for p in named:
        p.unlink()
        p.mkdir()
    with pytest.raises(FormatError, match="not a regular file") as info:
        APIS[api](main, True)
    assert info.value.file in {str(p) for p in named}


_EMFILE = textwrap.dedent("""
    import errno, os, resource, sys
    import pt2format
    from pt2format.errors import SegmentError
    with pt2format.read(sys.argv[1], mmap=sys.argv[2] == "mapped") as f:
        fd = os.open(os.devnull, os.O_RDONLY)   # the lowest free descriptor
        os.close(fd)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd, hard))   # no descriptor left for a shard
        try:
            bytes(f.storage_view(len(f.package.storages) - 1))
        except SegmentError as e:
            print(type(e).__name__, e.file, e.path, errno.errorcode[e.__cause__.errno])
""")


@pytest.mark.parametrize("mmap", ["mapped", "in-memory"])
def test_named_file_emfile_is_a_segment_error(saved, tmp_path, mmap):
    """Out of file descriptors (RLIMIT_NOFILE, set in a child so this process keeps its own)."""
    main, named, _ = _copy(saved, "shard", tmp_path)
    proc = subprocess.run([sys.executable, "-c", _EMFILE, str(main), mmap], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    kind, file, path, code = proc.stdout.split()
    assert (kind, code) == ("SegmentError", "EMFILE") and file in {str(p) for p in named}, proc.stdout
    assert path.startswith("shard_files[")
