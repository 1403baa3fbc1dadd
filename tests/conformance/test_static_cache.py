"""Static-KV-cache decoding from one .pt2f file: prefill + 16 greedy decode steps equal torch eager's generation.

The programs come from conformance/corpus/hf_flows.py (transformers'
`TorchExportableModuleWithStaticCache`, exported as prefill and decode,
strict, like `convert_and_export_with_cache`). The file is loaded in a fresh
process that imports torch and pt2format only (never the corpus or
transformers); its tokens are compared with `model.generate` (greedy, static
cache) and with the eager wrapper run through the same decoding loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import pt2format

STEPS = 16

# The fresh process: load both programs from the file, prefill, carry the
# cache into decode, decode greedily. Same loop as hf_flows.greedy_generate,
# spelled out here because the child must not import the corpus.
_CHILD = r"""
import json, sys
import torch
import pt2format

path, prompt, steps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
prefill = pt2format.load(path, program="prefill").module()
decode = pt2format.load(path, program="decode").module()
ids = torch.tensor([prompt])
n = ids.shape[1]
with torch.no_grad():
    logits = prefill(input_ids=ids, cache_position=torch.arange(n))
    state = dict(prefill.named_buffers())
    for name, buf in decode.named_buffers():
        if name in state and buf.data_ptr() != state[name].data_ptr():
            buf.copy_(state[name])
    tokens = [int(logits[0, -1].argmax())]
    for i in range(steps - 1):
        logits = decode(input_ids=torch.tensor([[tokens[-1]]]), cache_position=torch.tensor([n + i]))
        tokens.append(int(logits[0, -1].argmax()))
mods = [m for m in sys.modules if m.startswith(("conformance", "transformers"))]
print(json.dumps({"tokens": tokens, "imported": mods}))
"""


def _storages(path) -> int:
    f = pt2format.read(path)
    try:
        return len(f.package.storages)
    finally:
        f.close()


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    from conformance.corpus import hf_flows

    model = hf_flows.tiny_llama()
    programs = hf_flows.static_cache_programs(model)
    eps = {name: p.export() for name, p in programs.items()}
    d = tmp_path_factory.mktemp("static_cache")
    both, single = d / "llm.pt2f", d / "prefill_only.pt2f"
    pt2format.save(eps, both)
    pt2format.save(eps["prefill"], single)
    return hf_flows, model, programs, eps, both, single


@pytest.mark.corpus
def test_decode_16_tokens_in_fresh_process_equals_eager(flow):
    hf_flows, model, programs, _, both, _ = flow
    prompt = hf_flows.prompt()
    with torch.no_grad():
        generated = model.generate(prompt, max_new_tokens=STEPS, do_sample=False, cache_implementation="static")
    eager_generate = generated[0, prompt.shape[1]:].tolist()
    wrapper = programs["prefill"].module  # the eager module both programs were exported from
    eager_loop = hf_flows.greedy_generate(wrapper, wrapper, prompt, STEPS)
    assert eager_loop == eager_generate

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(both), json.dumps(prompt[0].tolist()), str(STEPS)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=str(both.parent))
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["imported"] == [], f"the loading process imported model code: {got['imported']}"
    assert len(got["tokens"]) == STEPS
    assert got["tokens"] == eager_generate


@pytest.mark.corpus
def test_prefill_and_decode_share_weights_and_cache(flow):
    _, model, _, eps, both, single = flow
    # Both programs come from one wrapper: every weight and cache storage of decode is one of
    # prefill's. A file stores each distinct storage once (example inputs included), so the
    # two-program file holds prefill's storages plus only decode's own example inputs.
    def ptrs(ep, *, examples):
        tensors = list(ep.state_dict.values()) + [t for t in ep.constants.values() if isinstance(t, torch.Tensor)]
        if examples:
            tensors += [t for t in torch.utils._pytree.tree_leaves(ep.example_inputs) if isinstance(t, torch.Tensor)]
        return {t.untyped_storage().data_ptr() for t in tensors}

    assert ptrs(eps["decode"], examples=False) <= ptrs(eps["prefill"], examples=False)
    assert _storages(single) == len(ptrs(eps["prefill"], examples=True))
    assert _storages(both) == len(ptrs(eps["prefill"], examples=True) | ptrs(eps["decode"], examples=True))
    # And the bytes: the second program adds its graph, not a second copy of the weights.
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert os.path.getsize(both) - os.path.getsize(single) < weight_bytes / 2
