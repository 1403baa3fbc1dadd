"""Real transformers export flows: static-KV-cache decoding, core ATen decomposition, training IR.

`llama_static_cache` is the flow LLM runtimes (ExecuTorch's LLM runner)
use: transformers' `TorchExportableModuleWithStaticCache` wraps the model
with a `StaticCache` whose key/value buffers are mutated in place
(`index_copy_` on buffers), and the wrapper is exported twice as
`convert_and_export_with_cache` does it (strict, under `no_grad`): a
`prefill` program over a dynamic prompt length and a one-token `decode`
program. Both come from one wrapper, so one file holds both programs over
one set of weights and one cache (stored once). `static_cache_programs` and
`greedy_generate` are shared with tests/conformance/test_static_cache.py,
which decodes 16 tokens with the loaded programs in a fresh process.
"""

from __future__ import annotations

import torch
from torch.export import Dim

from conformance.corpus._case import Program, case
from conformance.corpus.multi import _SEPARATE_LOADS

_OUTPUTS = ("transformers.modeling_outputs",)
_TAGS = ("full", "transformers")

#: Static cache geometry: prompts up to PREFILL_MAX tokens, CACHE_LEN positions in all.
CACHE_LEN = 32
PREFILL_MAX = 16
PROMPT_LEN = 6


def tiny_llama():
    """LlamaForCausalLM, 2 layers, 64 wide, vocab 128, random weights (seed 0), set up for static-cache generation."""
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=128, vocab_size=128, max_position_embeddings=64)
    model = LlamaForCausalLM(cfg).eval()
    model.generation_config = GenerationConfig(use_cache=True, cache_implementation="static", max_length=CACHE_LEN,
                                               cache_config={"batch_size": 1, "max_cache_len": CACHE_LEN})
    return model


def prompt() -> torch.Tensor:
    return torch.randint(0, 128, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(1))


def static_cache_programs(model) -> dict[str, Program]:
    """prefill (dynamic prompt length) and decode (one token) Programs over one static-cache wrapper."""
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    wrapper = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=CACHE_LEN)
    seq = Dim("seq", min=2, max=PREFILL_MAX)
    p = prompt()

    def exporter(kwargs, shapes):
        def export():  # as transformers.integrations.executorch.convert_and_export_with_cache does
            with torch.no_grad():
                return torch.export.export(wrapper, (), kwargs, dynamic_shapes=shapes, strict=True)
        return export

    pre_kw = {"input_ids": p, "cache_position": torch.arange(PROMPT_LEN)}
    dec_kw = {"input_ids": p[:, -1:], "cache_position": torch.tensor([PROMPT_LEN])}
    pre_shapes = {"input_ids": {1: seq}, "cache_position": {0: seq}}
    return {
        "prefill": Program(wrapper, (), pre_kw, dynamic_shapes=pre_shapes, strict=True,
                           export_fn=exporter(pre_kw, pre_shapes)),
        "decode": Program(wrapper, (), dec_kw, strict=True, export_fn=exporter(dec_kw, None)),
    }


def greedy_generate(prefill, decode, prompt_ids: torch.Tensor, steps: int) -> list[int]:
    """Greedy decoding with two callables (eager wrapper or `ep.module()`s): prefill the prompt, then `steps` tokens.

    The static cache lives in each module's buffers (mutated in place by the
    program). When prefill and decode are two modules, decode's cache buffers
    are set to prefill's after the prefill call: the state is carried the way
    a runtime sharing mutable buffers between methods carries it.
    """
    n = prompt_ids.shape[1]
    with torch.no_grad():
        logits = prefill(input_ids=prompt_ids, cache_position=torch.arange(n))
        if decode is not prefill:
            state = dict(prefill.named_buffers())
            for name, buf in decode.named_buffers():
                if name in state and buf.data_ptr() != state[name].data_ptr():
                    buf.copy_(state[name])
        tokens = [int(logits[0, -1].argmax())]
        for i in range(steps - 1):
            logits = decode(input_ids=torch.tensor([[tokens[-1]]]), cache_position=torch.tensor([n + i]))
            tokens.append(int(logits[0, -1].argmax()))
    return tokens


@case("llama_static_cache", tags=_TAGS, child_imports=_OUTPUTS, xfail_checks=_SEPARATE_LOADS)
def llama_static_cache():
    """Llama with transformers' StaticCache (buffers mutated in place): prefill + decode programs sharing weights."""
    return static_cache_programs(tiny_llama())


@case("llama_core_aten", tags=_TAGS, child_imports=_OUTPUTS)
def llama_core_aten():
    """Llama causal LM, dynamic sequence length, after run_decompositions() to the core ATen set."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=64, vocab_size=128, max_position_embeddings=64)
    model = LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(0))
    return Program(model, (ids,), {"use_cache": False},
                   dynamic_shapes={"input_ids": {1: Dim("seq", min=2, max=32)}, "use_cache": None},
                   post=lambda ep: ep.run_decompositions(torch.export.default_decompositions()))


@case("bert_mlm_training_ir", tags=_TAGS, child_imports=_OUTPUTS)
def bert_mlm_training_ir():
    """BertForMaskedLM in train mode with labels (loss output): the training IR torch.export.export gives.

    torch 2.13 has no `export_for_training`: `torch.export.export` returns the
    training IR (dropout, in-place ops and autograd-relevant ops kept). Dropout
    probabilities are 0 so the outputs are deterministic while the dropout
    nodes stay in the graph.
    """
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=4, intermediate_size=64,
                     vocab_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    model = BertForMaskedLM(cfg).train()
    def inputs(seq: int, seed: int):
        # Labels are -100 (ignored) except at one masked position: random derived labels
        # would be out of the vocabulary, so the case lists its other valid inputs.
        ids = torch.randint(0, 128, (2, seq), generator=torch.Generator().manual_seed(seed))
        labels = torch.full_like(ids, -100)
        labels[:, 2] = ids[:, 2]
        return (ids,), {"attention_mask": torch.ones_like(ids), "labels": labels}

    s = Dim("seq", min=4, max=32)
    args, kwargs = inputs(8, 0)
    return Program(model, args, kwargs,
                   dynamic_shapes={"input_ids": {1: s}, "attention_mask": {1: s}, "labels": {1: s}},
                   extra_inputs=[inputs(5, 1), inputs(13, 2)])
