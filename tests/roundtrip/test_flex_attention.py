"""flex_attention with score_mod and mask_mod subgraphs round-trips (issue 20, item 5).

A mask function that indexes a captured tensor makes torch.export record a
`flat_apply` node whose function and input specs are pytree TreeSpecs
fetched with get_attr; torch's own serializer cannot save them. Outputs are
compared with torch's original `ep.module()`, bit for bit.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import pt2format
from pt2format.errors import LoadError

import crafting


def score_mod(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx).to(score.dtype) * 0.1


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


class Causal(torch.nn.Module):
    def forward(self, q, k, v):
        block_mask = create_block_mask(causal, 1, 1, 128, 128, device="cpu")
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)


class Documents(torch.nn.Module):
    """Attention within documents: the mask indexes a buffer (flat_apply with TreeSpec get_attrs)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("doc", torch.arange(128) // 32)

    def forward(self, q, k, v):
        doc = self.doc

        def same_doc(b, h, q_idx, kv_idx):
            return doc[q_idx] == doc[kv_idx]

        block_mask = create_block_mask(same_doc, None, None, 128, 128, device="cpu")
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)


def _inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, 2, 128, 16, generator=g) for _ in range(3))


@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
@pytest.mark.parametrize("model", [Causal, Documents])
def test_flex_attention_roundtrip_matches_torch(tmp_path, model, strict):
    args = _inputs(0)
    ep = torch.export.export(model(), args, strict=strict)
    path = tmp_path / "flex.pt2f"
    pt2format.save(ep, path, progress=False, fsync=False)
    ep2 = pt2format.load(path)
    for seed in (0, 1):
        x = _inputs(seed)
        want = ep.module()(*x)
        assert torch.equal(ep2.module()(*x), want)
        assert torch.equal(pt2format.load_module(path)(*x), want)
    again = tmp_path / "again.pt2f"
    pt2format.save(ep2, again, progress=False, fsync=False)
    assert again.read_bytes() == path.read_bytes()


def test_torch_serializer_cannot_save_it(tmp_path):
    """Why this matters: torch's own format loses this program (if torch learns to save it, this fails)."""
    ep = torch.export.export(Documents(), _inputs(0))
    with pytest.raises(Exception):
        torch.export.save(ep, tmp_path / "flex.pt2")


def test_flat_apply_naming_an_unimported_class_is_refused(tmp_path):
    """torch's flat_apply target imports the autograd.Function its first argument names, when the program
    runs: a file naming anything but an imported autograd.Function is refused at load."""
    ep = torch.export.export(Documents(), _inputs(0))
    path = tmp_path / "flex.pt2f"
    pt2format.save(ep, path, progress=False, fsync=False)
    from pt2format._generated import model as m

    def mutate(p):
        for n in crafting.nodes(p):
            for a in n.inputs:
                arg = a.value
                if type(arg) is m.StringArgument and arg.value.endswith(".ModIndex"):
                    arg.value = "antigravity.Fly"
                    return
        raise AssertionError("no flat_apply class name found")

    bad = crafting.craft(path, tmp_path / "bad.pt2f", mutate)
    with pytest.raises(LoadError, match="autograd.Function that is not imported"):
        pt2format.load(bad)
