"""Every dtype the schema names has an element size, and it is torch's own."""

import pytest

from pt2format._generated import model as m
from pt2format._validate import ITEMSIZE

torch = pytest.importorskip("torch")
from pt2format.exporter._enums import DTYPE_TO_SCALAR_TYPE  # noqa: E402


def test_every_scalar_type_has_an_itemsize():
    missing = [t.name for t in m.ScalarType if t != m.ScalarType.UNSPECIFIED and t not in ITEMSIZE]
    assert not missing


@pytest.mark.parametrize("dtype", sorted(DTYPE_TO_SCALAR_TYPE, key=str), ids=str)
def test_itemsize_matches_torch(dtype):
    assert ITEMSIZE[DTYPE_TO_SCALAR_TYPE[dtype]] == torch.empty((), dtype=dtype).element_size()


def test_every_scalar_type_maps_to_a_torch_dtype():
    mapped = set(DTYPE_TO_SCALAR_TYPE.values())
    assert {int(t) for t in m.ScalarType if t != m.ScalarType.UNSPECIFIED} == mapped
