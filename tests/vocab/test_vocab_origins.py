"""pt2format.vocab.origins: which file row a loaded tensor came from, forgotten when torch swaps its storage."""

from __future__ import annotations

import gc

import torch

from pt2format.vocab import origins

FILE = (1, 2, 3, 4)


def test_remembered_origin_is_found_again():
    t = torch.zeros(4)
    origins.remember(t, FILE, 5, 2)
    o = origins.origin_of(t)
    assert (o.file, o.row, o.storage) == (FILE, 5, 2)
    assert origins.origin_of(torch.zeros(4)) is None


def test_a_view_is_not_its_base():
    t = torch.zeros(4)
    origins.remember(t, FILE, 0, 0)
    assert origins.origin_of(t[1:]) is None


def test_set_or_data_swap_voids_the_origin():
    t = torch.zeros(4)
    origins.remember(t, FILE, 0, 0)
    t.set_(torch.ones(4).untyped_storage())  # torch gives the tensor another storage: no longer the file's bytes
    assert origins.origin_of(t) is None
    p = torch.nn.Parameter(torch.zeros(2))
    origins.remember(p, FILE, 1, 1)
    p.data = torch.ones(2)
    assert origins.origin_of(p) is None


def test_entries_vanish_with_the_tensor():
    key = ("vanish", 0, 0, 0)  # no other test records this file
    t = torch.zeros(3)
    origins.remember(t, key, 0, 0)
    assert any(o.file == key for o in origins._origins.values())
    del t
    gc.collect()
    assert not any(o.file == key for o in origins._origins.values())
