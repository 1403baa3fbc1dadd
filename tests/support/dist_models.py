"""Small models for the distributed tests and benchmark: a tiny Llama-like program from a transformers config.

Random weights from a fixed seed, no hub download. The tensor-parallel plan
is the usual Megatron split: q/k/v/gate/up by output rows (Shard(0)), o/down
by input columns (Shard(1)), the rest replicated.
"""

from __future__ import annotations

import torch

TP_PLAN_NAMES = {
    "*.q_proj.weight": 0, "*.k_proj.weight": 0, "*.v_proj.weight": 0,
    "*.gate_proj.weight": 0, "*.up_proj.weight": 0,
    "*.o_proj.weight": 1, "*.down_proj.weight": 1,
}


def tp_plan():
    """Pattern -> Placement for a 1-D mesh (Megatron-style tensor parallelism)."""
    from torch.distributed.tensor import Shard

    return {pattern: Shard(dim) for pattern, dim in TP_PLAN_NAMES.items()}


def tiny_llama(*, hidden: int = 64, layers: int = 2, heads: int = 8, kv_heads: int = 4, vocab: int = 128,
               intermediate: int = 128, seed: int = 0):
    """(model in eval mode, example input ids) of a random Llama-like model.

    8 query heads sharing 4 key/value heads (grouped-query attention): tensor
    parallelism splits heads, so 2 and 4 ranks both divide them.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=64, use_cache=False, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    ids = torch.randint(0, vocab, (2, 8), generator=torch.Generator().manual_seed(seed + 1))
    return model, ids


class LlamaLogits(torch.nn.Module):
    """Returns the logits tensor only (a plain output is simplest to compare across ranks)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def export_tiny_llama(**kwargs):
    """(ExportedProgram, input ids, eager logits) of `tiny_llama(**kwargs)`."""
    model, ids = tiny_llama(**kwargs)
    wrapped = LlamaLogits(model).eval()
    with torch.no_grad():
        ep = torch.export.export(wrapped, (ids,))
        expected = wrapped(ids)
    return ep, ids, expected
