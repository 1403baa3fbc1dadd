"""Real architectures from transformers configs with random weights (no hub downloads).

Outputs are transformers ModelOutput dataclasses; the loading process
imports `transformers.modeling_outputs` (a library, like any runtime
dependency) so the loaded program can rebuild those output types.
"""

from __future__ import annotations

import torch
from torch.export import Dim

from conformance.corpus._case import Program, case

_OUTPUTS = ("transformers.modeling_outputs",)
_TAGS_FAST = ("fast", "transformers")
_TAGS_FULL = ("full", "transformers")
_TAGS_SLOW = ("slow", "transformers")


def _ids(batch: int, seq: int, vocab: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, seq), generator=g)


def _gpt2(config_kwargs: dict, seq: int, other_seqs, max_seq: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(**config_kwargs)
    model = GPT2LMHeadModel(cfg).eval()
    s = Dim("seq", min=2, max=max_seq)
    return Program(model, (_ids(1, seq, cfg.vocab_size),), {"use_cache": False},
                   dynamic_shapes={"input_ids": {1: s}, "use_cache": None},
                   extra_inputs=[((_ids(1, n, cfg.vocab_size, n),), {"use_cache": False}) for n in other_seqs],
                   invalid_inputs=[((_ids(1, max_seq + 1, cfg.vocab_size),), {"use_cache": False})])


@case("gpt2_tiny", tags=_TAGS_FAST, child_imports=_OUTPUTS)
def gpt2_tiny():
    """GPT-2 decoder, 2 layers, 64 wide, dynamic sequence length, tied LM head."""
    return _gpt2(dict(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64), 8, (3, 17), 64)


@case("gpt2_124m", tags=_TAGS_SLOW, child_imports=_OUTPUTS)
def gpt2_124m():
    """GPT-2 124M (GPT2Config defaults: 12 layers, 768 wide), dynamic sequence length."""
    return _gpt2({}, 16, (5,), 1024)


@case("llama_tiny", tags=_TAGS_FULL, child_imports=_OUTPUTS)
def llama_tiny():
    """Llama decoder (RoPE, RMSNorm, GQA), 2 layers, 64 wide, dynamic sequence length."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=128, vocab_size=128, max_position_embeddings=64)
    model = LlamaForCausalLM(cfg).eval()
    s = Dim("seq", min=2, max=64)
    return Program(model, (_ids(1, 8, 128),), {"use_cache": False},
                   dynamic_shapes={"input_ids": {1: s}, "use_cache": None},
                   extra_inputs=[((_ids(1, 13, 128, 1),), {"use_cache": False})])


def _bert(config_kwargs: dict, seq: int, max_seq: int):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(**config_kwargs)
    model = BertModel(cfg).eval()
    ids = _ids(2, seq, cfg.vocab_size)
    mask = torch.ones_like(ids)
    mask[1, seq // 2:] = 0
    s = Dim("seq", min=2, max=max_seq)
    return Program(model, (ids,), {"attention_mask": mask, "token_type_ids": torch.zeros_like(ids)},
                   dynamic_shapes={"input_ids": {1: s}, "attention_mask": {1: s}, "token_type_ids": {1: s}})


@case("bert_small", tags=_TAGS_FULL, child_imports=_OUTPUTS)
def bert_small():
    """BERT encoder, 2 layers, 64 wide, attention mask and token types, dynamic sequence length."""
    return _bert(dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
                      vocab_size=128, max_position_embeddings=64), 8, 64)


@case("bert_base", tags=_TAGS_SLOW, child_imports=_OUTPUTS)
def bert_base():
    """BERT-base size encoder (BertConfig defaults: 12 layers, 768 wide, 110M parameters)."""
    return _bert({}, 16, 512)


@case("vit_small", tags=_TAGS_FULL, child_imports=_OUTPUTS)
def vit_small():
    """ViT encoder on 32x32 images, 8x8 patches, 2 layers, dynamic batch."""
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    cfg = ViTConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
                    image_size=32, patch_size=8)
    model = ViTModel(cfg).eval()
    return Program(model, (torch.randn(2, 3, 32, 32),), dynamic_shapes=({0: Dim("batch", max=16)},),
                   extra_inputs=[((torch.randn(5, 3, 32, 32),), {})])


@case("t5_small", tags=_TAGS_FULL, child_imports=_OUTPUTS)
def t5_small():
    """T5 encoder-decoder, 2+2 layers, 64 wide (relative attention buckets)."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    cfg = T5Config(num_layers=2, num_decoder_layers=2, d_model=64, d_kv=16, num_heads=4, d_ff=128, vocab_size=128)
    model = T5ForConditionalGeneration(cfg).eval()
    return Program(model, (), {"input_ids": _ids(1, 8, 128), "decoder_input_ids": _ids(1, 4, 128, 1),
                               "use_cache": False})


@case("bart_small", tags=_TAGS_FULL, child_imports=_OUTPUTS)
def bart_small():
    """BART encoder-decoder, 2+2 layers, 64 wide, dynamic source length."""
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    cfg = BartConfig(encoder_layers=2, decoder_layers=2, d_model=64, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=128,
                     max_position_embeddings=64)
    model = BartForConditionalGeneration(cfg).eval()
    src = Dim("src", min=2, max=60)
    return Program(model, (), {"input_ids": _ids(1, 8, 128), "decoder_input_ids": _ids(1, 4, 128, 1),
                               "use_cache": False},
                   dynamic_shapes={"input_ids": {1: src}, "decoder_input_ids": None, "use_cache": None},
                   extra_inputs=[((), {"input_ids": _ids(1, 11, 128, 2), "decoder_input_ids": _ids(1, 4, 128, 1),
                                       "use_cache": False})])
