"""exporter/_metadata.py computes a static tensor's TensorMetadata without torch's symbolic-shape machinery:
it must equal torch's own _extract_tensor_metadata for every layout of sizes and strides."""

from __future__ import annotations

import itertools
import random

import torch
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from pt2format.vocab.metadata import derived_tensor_meta, static_memory_format


def _layouts():
    rng = random.Random(0)
    for n in range(0, 6):
        for _ in range(30):
            sizes = [rng.choice((0, 1, 1, 2, 3, 4)) for _ in range(n)]
            base = torch.empty(sizes)
            yield base
            if n >= 2:
                perm = list(range(n))
                rng.shuffle(perm)
                yield torch.empty([sizes[p] for p in perm]).permute(*[perm.index(i) for i in range(n)])
            if n == 4:
                yield base.to(memory_format=torch.channels_last)
            if n == 5:
                yield base.to(memory_format=torch.channels_last_3d)
            if n and all(sizes):
                yield torch.empty([s * 2 for s in sizes])[tuple(slice(None, None, 2) for _ in sizes)]
                yield torch.empty(sizes[:-1] + [sizes[-1] + 1])[..., : sizes[-1]]
            strides = [rng.choice((0, 1, 2, 3, 6, 12)) for _ in range(n)]
            yield torch.empty_strided(sizes, strides)
    for sizes in itertools.product((1, 2), repeat=4):
        for strides in itertools.product((0, 1, 2, 4), repeat=4):
            yield torch.empty_strided(sizes, strides)


def test_static_meta_is_torchs():
    count = 0
    for t in _layouts():
        for requires_grad in (False, True):
            want = _extract_tensor_metadata(t)._replace(requires_grad=requires_grad)
            assert static_memory_format(tuple(t.shape), t.stride()) == want.memory_format, (t.shape, t.stride())
            got, static = derived_tensor_meta(t, requires_grad)
            assert static and got == want and type(got.shape) is type(want.shape)
            count += 1
    assert count > 1000
