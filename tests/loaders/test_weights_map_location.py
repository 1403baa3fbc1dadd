"""map_location with a safetensors weight source (loaders/_weights.py): every form torch.load takes, as torch.load.

A dict or a callable raised an untyped TypeError there (``Tensor.to(dict)``);
each form now does what torch.load does with the same state dict.
"""

from __future__ import annotations

import io

import pytest
import torch
from safetensors.torch import save_file

from pt2format.errors import LoadError
from pt2format.loaders._weights import read_weights

STATE = {"a.weight": torch.arange(12.0).reshape(3, 4), "a.bias": torch.tensor([1.5, -2.0, 0.25])}


def _torch_load(map_location):
    buf = io.BytesIO()
    torch.save(STATE, buf)
    buf.seek(0)
    return torch.load(buf, map_location=map_location, weights_only=True)


def _recording():
    calls = []

    def fn(storage, location):
        calls.append(location)
        return storage.clone()

    return fn, calls


@pytest.mark.parametrize("form", ["str", "device", "dict by string", "dict by type", "callable"])
def test_safetensors_source_takes_map_location_as_torch_load_does(tmp_path, form):
    path = tmp_path / "w.safetensors"
    save_file(STATE, path)
    make = {"str": lambda: ("cpu", None), "device": lambda: (torch.device("cpu"), None),
            "dict by string": lambda: ({"cpu": "meta"}, None), "dict by type": lambda: ({"cuda": "cuda:1"}, None),
            "callable": _recording}
    ours_ml, ours_calls = make[form]()
    theirs_ml, theirs_calls = make[form]()
    ours = read_weights(path, map_location=ours_ml)
    theirs = _torch_load(theirs_ml)
    assert ours.keys() == theirs.keys()
    for k in theirs:
        assert ours[k].device == theirs[k].device and ours[k].dtype == theirs[k].dtype, k
        if theirs[k].device.type != "meta":
            assert torch.equal(ours[k], theirs[k]), k
    if ours_calls is not None:  # the callable saw each storage with the location torch.load gives it
        assert sorted(ours_calls) == sorted(theirs_calls) and ours_calls


def test_a_map_location_of_no_known_form_is_a_load_error(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file(STATE, path)
    with pytest.raises(LoadError, match="map_location must be") as e:
        read_weights(path, map_location=3)
    assert "w.safetensors" in str(e.value)


def test_a_callable_returning_another_size_is_a_load_error(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file(STATE, path)
    with pytest.raises(LoadError, match="same size"):
        read_weights(path, map_location=lambda storage, location: torch.UntypedStorage(1))
