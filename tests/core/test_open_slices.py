"""`LazyFile.get_slice` indexes as safetensors' `safe_open(...).get_slice` does, out-of-range indices included."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

import pt2format  # noqa: E402

INDICES = [
    (slice(10, 20),),            # past the end: empty, not an error
    (slice(3, 10),),             # runs past the end: cut
    (slice(-2, None),), (slice(4, 2),), (slice(0, 5, 2),), (slice(None), slice(2, 9)),
    (slice(None), slice(7, 9)),  # past the end of the last dimension
    (7,), (-6,), (2,), (-1, slice(1, 3)),
    (slice(None), slice(None), slice(None)),  # more indices than dimensions
    (Ellipsis, 1),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The same tensor written by safetensors and by pt2format."""
    where = tmp_path_factory.mktemp("slices")
    weight = torch.arange(20, dtype=torch.float32).reshape(5, 4)
    safetensors_torch.save_file({"w": weight}, where / "w.safetensors")
    pt2format.save_weights({"w": weight}, where / "w.pt2f", fsync=False)
    return where / "w.safetensors", where / "w.pt2f"


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_get_slice_matches_safetensors(files, index):
    from safetensors import safe_open

    def index_with(get_slice):
        try:
            return get_slice("w")[index]
        except Exception as e:  # the exception's type is what must match
            return type(e)

    with safe_open(str(files[0]), "pt") as theirs, pt2format.open(files[1]) as ours:
        want, got = index_with(theirs.get_slice), index_with(ours.get_slice)
    if isinstance(want, type):
        assert got is want or (isinstance(got, type) and issubclass(got, want)), (got, want)
    else:
        assert isinstance(got, torch.Tensor) and got.shape == want.shape and torch.equal(got, want), (got, want)
