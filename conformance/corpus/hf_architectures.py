"""Thirty-odd transformers architectures, tiny configs and random weights, exported as their users do.

Each case builds a model from its config class (no hub download, seed 0,
eval mode) and calls `torch.export.export(model, args, kwargs,
dynamic_shapes=..., strict=False)` the way the model's users do: token
models with a dynamic sequence length, vision models with a dynamic batch,
speech models with a dynamic number of samples. Where torch cannot keep a
dim dynamic for an architecture, the case is exported static and its
description says so (the `static` note in the table below).

Configs are as small as keep each architecture's structure (1-2 layers,
hidden 32, vocab 128): the whole corpus runs in CI, and these cases are
about the graph shapes an architecture produces (its attention variant,
normalization, position encoding, routing), not about size.

Families: decoder-only, encoder-only, encoder-decoder, vision, speech,
mixture-of-experts. The table is data; `_register` turns each row into a
corpus case tagged `transformers` (and `full`: they run with --corpus).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.export import Dim

from conformance.corpus._case import Case, Program, add

_OUTPUTS = ("transformers.modeling_outputs",)
_MOE = ("transformers.integrations.moe",)
_VOCAB = 128
_SEQ = 8
_MAX_SEQ = 32


def _ids(batch: int, seq: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, _VOCAB, (batch, seq), generator=g)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _model(config_cls: str, model_cls: str, cfg: dict):
    """Config and model by class name from transformers, seeded, in eval mode."""
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, config_cls)(**cfg)
    return getattr(transformers, model_cls)(config).eval()


# -- input builders: (model, dynamic) -> Program --------------------------------------


def _causal_lm(model, dynamic: bool) -> Program:
    """input_ids (1, 8), no KV cache: the full-sequence forward users export for scoring/prefill."""
    s = Dim("seq", min=2, max=_MAX_SEQ)
    return Program(model, (_ids(1, _SEQ),), {"use_cache": False},
                   dynamic_shapes={"input_ids": {1: s}, "use_cache": None} if dynamic else None)


def _encoder(model, dynamic: bool) -> Program:
    """input_ids and a padding attention_mask (2, 8): the second row is half padding."""
    ids = _ids(2, _SEQ)
    mask = torch.ones_like(ids)
    mask[1, _SEQ // 2:] = 0
    s = Dim("seq", min=2, max=_MAX_SEQ)
    return Program(model, (ids,), {"attention_mask": mask},
                   dynamic_shapes={"input_ids": {1: s}, "attention_mask": {1: s}} if dynamic else None)


def _seq2seq(model, dynamic: bool) -> Program:
    """Source ids and mask (1, 8), decoder ids (1, 4), no cache: teacher-forced forward, dynamic source length.

    `use_cache=False` is passed only to models whose forward names it (Switch
    Transformers takes no cache flag)."""
    import inspect

    s = Dim("src", min=2, max=_MAX_SEQ)
    kwargs = {"input_ids": _ids(1, _SEQ), "attention_mask": torch.ones(1, _SEQ, dtype=torch.long),
              "decoder_input_ids": _ids(1, 4, 1)}
    shapes = {"input_ids": {1: s}, "attention_mask": {1: s}, "decoder_input_ids": None}
    if "use_cache" in inspect.signature(model.forward).parameters:
        kwargs["use_cache"] = False
        shapes["use_cache"] = None
    return Program(model, (), kwargs, dynamic_shapes=shapes if dynamic else None)


def _vision(model, dynamic: bool) -> Program:
    """pixel_values (2, 3, 32, 32), dynamic batch."""
    b = Dim("batch", min=1, max=8)
    return Program(model, (_randn(2, 3, 32, 32),), dynamic_shapes=({0: b},) if dynamic else None)


def _audio(model, dynamic: bool) -> Program:
    """Raw waveform input_values (1, 800), dynamic number of samples."""
    n = Dim.AUTO
    return Program(model, (_randn(1, 800),), dynamic_shapes=({1: n},) if dynamic else None)


def _whisper(model, dynamic: bool) -> Program:
    """Log-mel input_features (1, 16, 64): Whisper's encoder length is fixed by max_source_positions."""
    d = Dim("dec", min=2, max=16)
    return Program(model, (), {"input_features": _randn(1, 16, 64), "decoder_input_ids": _ids(1, 4, 1),
                               "use_cache": False},
                   dynamic_shapes=({"input_features": None, "decoder_input_ids": {1: d}, "use_cache": None}
                                   if dynamic else None))


_INPUTS = {"causal": _causal_lm, "encoder": _encoder, "seq2seq": _seq2seq, "vision": _vision,
           "audio": _audio, "whisper": _whisper}


@dataclass(frozen=True)
class Arch:
    name: str
    family: str
    config: str
    model: str
    inputs: str
    cfg: dict = field(default_factory=dict)
    #: Why the case is exported static (torch cannot keep the dim dynamic), else "".
    static: str = ""
    what: str = ""
    #: Libraries the loading process imports besides transformers.modeling_outputs: MoE
    #: layers call transformers' own operator `transformers::grouped_mm_fallback` (defined
    #: in transformers.integrations.moe), which a runtime links like any custom-op
    #: library; Swin and BEiT return output dataclasses defined in their modelling module
    #: (SwinModelOutput, BeitModelOutputWithPooling), which registers them as pytree nodes.
    imports: tuple = ()


# Shared tiny sizes.
_LLAMA_LIKE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, vocab_size=_VOCAB, max_position_embeddings=64)
_BERT_LIKE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  vocab_size=_VOCAB, max_position_embeddings=64)
_BART_LIKE = dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=_VOCAB,
                  max_position_embeddings=64, pad_token_id=1, decoder_start_token_id=2)

ARCHS = (
    # decoder-only
    Arch("mistral_tiny", "decoder", "MistralConfig", "MistralForCausalLM", "causal",
         dict(_LLAMA_LIKE, sliding_window=16), what="Mistral (sliding-window attention, GQA)"),
    Arch("qwen2_tiny", "decoder", "Qwen2Config", "Qwen2ForCausalLM", "causal", dict(_LLAMA_LIKE),
         what="Qwen2 (QKV bias, GQA)"),
    Arch("qwen3_tiny", "decoder", "Qwen3Config", "Qwen3ForCausalLM", "causal", dict(_LLAMA_LIKE, head_dim=8),
         what="Qwen3 (QK norm)"),
    Arch("phi_tiny", "decoder", "PhiConfig", "PhiForCausalLM", "causal",
         dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=_VOCAB,
              max_position_embeddings=64), what="Phi (parallel attention/MLP, partial rotary)"),
    Arch("phi3_tiny", "decoder", "Phi3Config", "Phi3ForCausalLM", "causal",
         dict(_LLAMA_LIKE, pad_token_id=0, bos_token_id=1, eos_token_id=2),
         what="Phi-3 (fused QKV and gate-up projections)"),
    Arch("gemma_tiny", "decoder", "GemmaConfig", "GemmaForCausalLM", "causal", dict(_LLAMA_LIKE, head_dim=8),
         what="Gemma (scaled embeddings, GeGLU)"),
    Arch("gemma2_tiny", "decoder", "Gemma2Config", "Gemma2ForCausalLM", "causal",
         dict(_LLAMA_LIKE, head_dim=8, sliding_window=16),
         what="Gemma 2 (logit soft-capping, alternating sliding window)"),
    Arch("opt_tiny", "decoder", "OPTConfig", "OPTForCausalLM", "causal",
         dict(hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=_VOCAB,
              max_position_embeddings=64, word_embed_proj_dim=32), what="OPT (learned positions)"),
    Arch("gpt_neox_tiny", "decoder", "GPTNeoXConfig", "GPTNeoXForCausalLM", "causal",
         dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=_VOCAB,
              max_position_embeddings=64), what="GPT-NeoX (parallel residual, partial rotary)"),
    Arch("falcon_tiny", "decoder", "FalconConfig", "FalconForCausalLM", "causal",
         dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, vocab_size=_VOCAB),
         what="Falcon (multi-query attention)"),
    Arch("bloom_tiny", "decoder", "BloomConfig", "BloomForCausalLM", "causal",
         dict(hidden_size=32, n_layer=2, n_head=4, vocab_size=_VOCAB), what="BLOOM (ALiBi)"),
    Arch("gptj_tiny", "decoder", "GPTJConfig", "GPTJForCausalLM", "causal",
         dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4, vocab_size=_VOCAB, n_positions=64, bos_token_id=1,
              eos_token_id=2),
         what="GPT-J (interleaved rotary)"),
    Arch("stablelm_tiny", "decoder", "StableLmConfig", "StableLmForCausalLM", "causal", dict(_LLAMA_LIKE),
         what="StableLM (LayerNorm, partial rotary)"),
    # encoder-only
    Arch("roberta_tiny", "encoder", "RobertaConfig", "RobertaModel", "encoder", dict(_BERT_LIKE, pad_token_id=1),
         what="RoBERTa (padding-offset positions)"),
    Arch("distilbert_tiny", "encoder", "DistilBertConfig", "DistilBertModel", "encoder",
         dict(dim=32, hidden_dim=64, n_layers=2, n_heads=4, vocab_size=_VOCAB, max_position_embeddings=64),
         what="DistilBERT"),
    Arch("albert_tiny", "encoder", "AlbertConfig", "AlbertModel", "encoder",
         dict(_BERT_LIKE, embedding_size=16), what="ALBERT (factorized embeddings, shared layers)"),
    Arch("electra_tiny", "encoder", "ElectraConfig", "ElectraModel", "encoder", dict(_BERT_LIKE, embedding_size=16),
         what="ELECTRA (embedding projection)"),
    Arch("deberta_v2_tiny", "encoder", "DebertaV2Config", "DebertaV2Model", "encoder",
         dict(_BERT_LIKE, position_buckets=16, max_relative_positions=32, relative_attention=True),
         what="DeBERTa-v2 (disentangled relative attention)"),
    # encoder-decoder
    Arch("marian_tiny", "seq2seq", "MarianConfig", "MarianMTModel", "seq2seq", dict(_BART_LIKE),
         what="Marian MT (sinusoidal positions)"),
    Arch("pegasus_tiny", "seq2seq", "PegasusConfig", "PegasusForConditionalGeneration", "seq2seq", dict(_BART_LIKE),
         what="Pegasus (pre-norm, sinusoidal positions)"),
    Arch("mbart_tiny", "seq2seq", "MBartConfig", "MBartForConditionalGeneration", "seq2seq", dict(_BART_LIKE),
         what="mBART (pre-norm)"),
    # vision
    Arch("deit_tiny", "vision", "DeiTConfig", "DeiTForImageClassification", "vision",
         dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=32,
              patch_size=8, num_labels=4), what="DeiT image classifier (distillation token)"),
    Arch("convnext_tiny", "vision", "ConvNextConfig", "ConvNextForImageClassification", "vision",
         dict(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, num_labels=4),
         what="ConvNeXt (depthwise conv, LayerNorm2d)"),
    Arch("resnet_tiny", "vision", "ResNetConfig", "ResNetForImageClassification", "vision",
         dict(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic", num_labels=4),
         what="ResNet (batch norm in eval)"),
    Arch("swin_tiny", "vision", "SwinConfig", "SwinModel", "vision",
         dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4),
         what="Swin (shifted windows, relative position bias)",
         imports=("transformers.models.swin.modeling_swin",)),
    Arch("beit_tiny", "vision", "BeitConfig", "BeitModel", "vision",
         dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=32,
              patch_size=8, use_relative_position_bias=True), what="BEiT (relative position bias, layer scale)",
         imports=("transformers.models.beit.modeling_beit",)),
    # speech
    Arch("wav2vec2_tiny", "speech", "Wav2Vec2Config", "Wav2Vec2Model", "audio",
         dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 4), num_conv_pos_embeddings=16,
              num_conv_pos_embedding_groups=4), what="wav2vec 2.0 (conv feature encoder, conv positions)"),
    Arch("hubert_tiny", "speech", "HubertConfig", "HubertModel", "audio",
         dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 4), num_conv_pos_embeddings=16,
              num_conv_pos_embedding_groups=4), what="HuBERT"),
    Arch("whisper_tiny", "speech", "WhisperConfig", "WhisperForConditionalGeneration", "whisper",
         dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
              encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=_VOCAB, num_mel_bins=16, max_source_positions=32,
              max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
         what="Whisper encoder-decoder (conv front end, dynamic decoder length)"),
    # mixture-of-experts
    Arch("mixtral_tiny", "moe", "MixtralConfig", "MixtralForCausalLM", "causal",
         dict(_LLAMA_LIKE, num_local_experts=4, num_experts_per_tok=2), what="Mixtral (top-2 of 4 experts)",
         imports=_MOE),
    Arch("qwen2_moe_tiny", "moe", "Qwen2MoeConfig", "Qwen2MoeForCausalLM", "causal",
         dict(_LLAMA_LIKE, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
              shared_expert_intermediate_size=32), what="Qwen2-MoE (routed + shared expert)", imports=_MOE),
    Arch("switch_transformers_tiny", "moe", "SwitchTransformersConfig", "SwitchTransformersForConditionalGeneration",
         "seq2seq", dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                         num_experts=4, encoder_sparse_step=1, decoder_sparse_step=1, vocab_size=_VOCAB),
         what="Switch Transformers (top-1 routing, T5 backbone)"),
)


def _builder(arch: Arch):
    def build():
        model = _model(arch.config, arch.model, arch.cfg)
        return _INPUTS[arch.inputs](model, not arch.static)

    return build


def _register(arch: Arch) -> None:
    note = f" Static: {arch.static}" if arch.static else ""
    shape = {"causal": "dynamic sequence length", "encoder": "dynamic sequence length",
             "seq2seq": "dynamic source length", "vision": "dynamic batch", "audio": "dynamic sample count",
             "whisper": "dynamic decoder length"}[arch.inputs]
    desc = f"[{arch.family}] {arch.what}, {arch.model}, {'static shapes' if arch.static else shape}.{note}"
    add(Case(arch.name, _builder(arch), frozenset({"full", "transformers"}), _OUTPUTS + arch.imports, True, desc))


for _a in ARCHS:
    _register(_a)
