"""External data (pt2format/_external.py): storages pointing into an existing safetensors file."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from safetensors.numpy import save_file

from pt2format import _api
from pt2format._external import plan_safetensors, read_safetensors_header
from pt2format._generated import model as m
from pt2format._validate import validate_package
from pt2format.errors import ChecksumError, HeaderError, LimitError, SegmentError, ValidationError

ARRAYS = {"a.weight": np.arange(12, dtype=np.float32).reshape(3, 4), "b.bias": np.arange(5, dtype=np.int64),
          "c": np.ones((2, 2), dtype=np.float16)}


def _package(arrays):
    names = sorted(arrays)
    dtypes = {np.float32: m.ScalarType.FLOAT32, np.int64: m.ScalarType.INT64, np.float16: m.ScalarType.FLOAT16}
    tensors = []
    for i, n in enumerate(names):
        a = arrays[n]
        strides = [s // a.itemsize for s in a.strides]
        tensors.append(m.Tensor(storage=i, dtype=dtypes[a.dtype.type], sizes=list(a.shape), strides=strides))
    entries = [m.StateEntry(name=n, kind=m.StateKind.PARAMETER, tensor=i) for i, n in enumerate(names)]
    pkg = m.Package(format_version=m.FormatVersion(1, 0), tensors=tensors,
                    storages=[m.Storage() for _ in names], weight_sets=[m.WeightSet(name="default", entries=entries)])
    return pkg, [np.ascontiguousarray(arrays[n]).tobytes() for n in names]


def _save(tmp_path, arrays=ARRAYS, file_arrays=ARRAYS):
    st = tmp_path / "model.safetensors"
    save_file(file_arrays, str(st))
    pkg, payloads = _package(arrays)
    main = tmp_path / "model.pt2f"
    plan = plan_safetensors(pkg, payloads, str(main), str(st))
    _api.write_package(main, pkg, payloads, fsync=False, external=plan)
    return main, st


def test_header_matches_safetensors_own_reading(tmp_path):
    st = tmp_path / "x.safetensors"
    save_file(ARRAYS, str(st), metadata={"format": "np"})
    entries, meta, start = read_safetensors_header(st)
    raw = st.read_bytes()
    assert meta == {"format": "np"} and start == 8 + struct.unpack_from("<Q", raw)[0]
    for name, a in ARRAYS.items():
        e = entries[name]
        assert e.shape == a.shape
        assert raw[e.begin:e.end] == np.ascontiguousarray(a).tobytes()


def test_storages_point_into_the_file_instead_of_copying(tmp_path):
    main, st = _save(tmp_path)
    with _api.read(main, verify_data=True) as f:
        pkg = f.package
        assert [e.name for e in pkg.external_files] == ["model.safetensors"]
        assert pkg.external_files[0].size == st.stat().st_size
        assert len(f.header.sections) == 1  # every storage is external: no DATA section at all
        names = [e.name for e in pkg.weight_sets[0].entries]
        for i, n in enumerate(names):
            assert bytes(f.storage_view(pkg.tensors[i].storage)) == np.ascontiguousarray(ARRAYS[n]).tobytes()
    assert main.stat().st_size < sum(a.nbytes for a in ARRAYS.values()) + 1024


def test_other_values_are_stored_in_the_package(tmp_path):
    changed = dict(ARRAYS, c=np.full((2, 2), 7, dtype=np.float16))
    main, _ = _save(tmp_path, arrays=changed)
    with _api.read(main, verify_data=True) as f:
        segs = [f.package.segments[s.segment] for s in f.package.storages]
        assert [bool(s.external) for s in segs] == [True, True, False]  # a.weight, b.bias external; c copied
        assert bytes(f.storage_view(2)) == changed["c"].tobytes()


def test_changed_external_bytes_fail_verify_data(tmp_path):
    main, st = _save(tmp_path)
    data = bytearray(st.read_bytes())
    data[-1] ^= 0x40
    st.write_bytes(bytes(data))
    _api.read(main).close()  # data checks are on demand, like DATA sections
    with pytest.raises(ChecksumError) as e:
        _api.validate(main)
    assert e.value.file.endswith("model.safetensors")


def test_changed_safetensors_header_bytes_fail_verify_data(tmp_path):
    main, st = _save(tmp_path)
    data = bytearray(st.read_bytes())
    data[9] ^= 0x01  # inside the JSON header: no storage covers it, the whole-file CRC does
    st.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="section checksum mismatch"):
        _api.validate(main)


def test_missing_or_resized_external_file_is_refused(tmp_path):
    main, st = _save(tmp_path)
    st.write_bytes(st.read_bytes() + b"\0")
    with pytest.raises(SegmentError, match="size differs"):
        _api.validate(main)
    os.unlink(st)
    with pytest.raises(SegmentError, match="missing"):
        _api.validate(main)


def test_external_file_must_sit_next_to_the_main_file(tmp_path):
    (tmp_path / "sub").mkdir()
    st = tmp_path / "sub" / "model.safetensors"
    save_file(ARRAYS, str(st))
    pkg, payloads = _package(ARRAYS)
    with pytest.raises(ValueError, match="directory"):
        plan_safetensors(pkg, payloads, str(tmp_path / "model.pt2f"), str(st))


@pytest.mark.parametrize("name,raw,error", [
    ("short", b"\x01\x00", HeaderError),
    ("header_too_large", struct.pack("<Q", 200_000_000) + b"{}", LimitError),
    ("header_past_end", struct.pack("<Q", 100) + b"{}", HeaderError),
    ("not_json", struct.pack("<Q", 2) + b"{x", HeaderError),
    ("offsets_past_end", struct.pack("<Q", 60) + b'{"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}    ',
     HeaderError),
    ("negative_shape", struct.pack("<Q", 56) + b'{"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}', HeaderError),
])
def test_hostile_safetensors_headers_rejected(tmp_path, name, raw, error):
    p = tmp_path / f"{name}.safetensors"
    p.write_bytes(raw)
    with pytest.raises(error):
        read_safetensors_header(p)


def _ext_pkg():
    pkg = m.Package(format_version=m.FormatVersion(1, 0), required_features=2,
                    external_files=[m.ExternalFile(name="w.safetensors", size=100,
                                                   format=m.ExternalFormat.SAFETENSORS)],
                    segments=[m.Segment(external=1)], storages=[m.Storage(segment=0, offset=8, size=4)])
    return pkg


def test_validation_of_external_segments():
    validate_package(_ext_pkg())
    pkg = _ext_pkg()
    pkg.required_features = 0
    with pytest.raises(ValidationError, match="bit 1"):
        validate_package(pkg)
    pkg = _ext_pkg()
    pkg.segments[0].external = 2
    with pytest.raises(ValidationError, match="out of range"):
        validate_package(pkg)
    pkg = _ext_pkg()
    pkg.segments[0].section = 1
    with pytest.raises(ValidationError, match="file and section 0"):
        validate_package(pkg)
    pkg = _ext_pkg()
    pkg.storages[0].offset = 97
    with pytest.raises(SegmentError, match="past its external file"):
        validate_package(pkg)
    pkg = _ext_pkg()
    pkg.external_files[0].name = "../w.safetensors"
    with pytest.raises(ValidationError, match="plain file name"):
        validate_package(pkg)
